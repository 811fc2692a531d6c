# Incidents (issue 25): the server evaluates the findings itself, with no
# client polling them (this test reads only pg_contention_incidents,
# pg_contention_info and the log), opens an incident when a finding reaches
# warning, escalates it when its severity rises, closes it after the fix
# with what ended it named; the LOG lines; a clean and a crash restart keep
# them; the bound evicts and counts; a role without pg_read_all_stats reads
# masked texts; pg_contention_reset() removes them; a healthy pgbench
# workload opens none; the frozen history outlives the history ring.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(savepoint_script wait_for_log_line crash_recovered churn);

my $node = PostgreSQL::Test::Cluster->new('incidents');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.incident_interval = 1s
pg_contention.incident_close_after = 3s
pg_contention.findings_window = 10s
pg_contention.history_seconds = 15
pg_contention.subtrans_lookups_warning = 1
pg_contention.save_interval = 1s
max_prepared_transactions = 5
restart_after_crash = on
track_activity_query_size = 4096
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE ROLE watcher LOGIN;
	CREATE ROLE culprit LOGIN;
	CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL)
		WITH (fillfactor = '50');
	INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	CREATE TABLE side (id integer);
	GRANT SELECT, INSERT ON side TO culprit;
});
$node->safe_psql('postgres', 'VACUUM (ANALYZE) contend');
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench tables');

my $worker = $node->safe_psql('postgres',
	"SELECT application_name FROM pg_stat_activity WHERE backend_type = 'pg_contention incidents'");
is($worker, 'pg_contention incidents', 'the worker runs, named in pg_stat_activity');

# The worker has evaluated at least twice since now (it reports each
# evaluation's start and end in pg_stat_activity).
sub evaluated_twice
{
	PgContention::Test::evaluated_twice($node);
}

sub incidents
{
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(problem || ' ' || peak_severity || ' ' || coalesce(severity, 'closed'), E'\\n' ORDER BY id), '')
		   FROM pg_contention_incidents");
}

# A crash: a backend killed with SIGKILL; the postmaster reinitialises.
sub crash
{
	my $victim = $node->background_psql('postgres');
	my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
	$victim_pid =~ s/\s+//g;
	my $offset = -s $node->logfile;
	kill 'KILL', $victim_pid;
	$victim->{run}->kill_kill;
	ok(crash_recovered($node, $offset), 'the server recovered from the crash');
	ok($node->log_contains(qr/terminated by signal 9/, $offset), 'it was a crash');
	return;
}

# ---- (g) A healthy pgbench workload opens none.
$node->pgbench('-n -c 4 -j 2 -T 4', 0, [qr{processed}], [qr{^$}], 'a healthy pgbench run');
evaluated_twice();
is(incidents(), '', 'a healthy workload: no incident');
# At its defaults: with horizon_min_age = 1s (from (b) on, for the held
# transactions of (b) and (d)), a pgbench transaction waiting behind
# another for its one branch row a second on a loaded machine would be a
# holder past it, as the setting says.  1 h until then: (a)'s
# transactions of 90 savepoints last over a second on a loaded machine,
# holders past 1 s of contend's dead tuples, whose own incidents are not
# what (b) is about.
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET pg_contention.horizon_min_age = '1h';
	ALTER SYSTEM SET pg_contention.horizon_critical_age = '6s';
});
$node->reload;

# ---- (a) Subtransaction overflow (the README's first incident): sessions
# whose transactions take 90 savepoints, readers beside them.
# The findings' default window (5 min) for this case: the finding stays
# for the window after the fix (its cost is judged from the history
# seconds, so for the 40 s the ring keeps), the incident must not.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.findings_window = '5min'");
$node->reload;
my $offset = -s $node->logfile;
# The sessions overflow until the incident is open (an overflow over
# before any evaluation saw it is info: the findings describe now).
my $script = PostgreSQL::Test::Utils::tempdir() . '/savepoints.sql';
PostgreSQL::Test::Utils::append_to_file($script, savepoint_script(90));
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start([ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', '600', '-f', $script,
	'-h', $node->host, '-p', $node->port, 'postgres' ], '>', \$bench_out, '2>', \$bench_err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'subxact_overflow'"),
	'subxact_overflow: an incident opened, with no client reading the findings');
my $id = $node->safe_psql('postgres', "SELECT id FROM pg_contention_incidents WHERE problem = 'subxact_overflow'");
ok($node->log_contains(qr/LOG:  pg_contention: incident $id opened: (warning|critical) subxact_overflow: statement UPDATE contend /, $offset),
	'its LOG line names it, its severity, problem and subject');
like($node->safe_psql('postgres', "SELECT details ->> 'key' FROM pg_contention_incidents WHERE id = $id"),
	qr/^database \d+ user \d+$/, 'matched on the culprit\'s database and user, not on the subject text');
like($node->safe_psql('postgres', "SELECT jsonb_typeof(details -> 'finding') || ' ' || jsonb_typeof(details -> 'statements')
	|| ' ' || (jsonb_array_length(details -> 'history') > 0) || ' ' || (details -> 'statements' -> 0 ->> 'query' LIKE 'UPDATE contend%')
	|| ' ' || (details -> 'opened' ->> 'severity') FROM pg_contention_incidents WHERE id = $id"),
	qr/^object array true true (warning|critical)$/, 'the frozen evidence: the finding, the culprit statement first, the history')
  or diag('the frozen statements: ' . $node->safe_psql('postgres',
	"SELECT string_agg(left(s ->> 'query', 40) || ' (' || (s ->> 'query_id') || ')', ' | ') FROM pg_contention_incidents,
	        jsonb_array_elements(details -> 'statements') AS s WHERE id = $id")
	. '; the finding: ' . $node->safe_psql('postgres', "SELECT details -> 'finding' ->> 'query_id' FROM pg_contention_incidents WHERE id = $id"));
# The fix: the sessions end (pgbench is stopped).  Closed
# incident_close_after later, with what ended it; the finding, still in
# its window, says it has ended, at info (check and the incident agree).
$bench->kill_kill;
ok($node->poll_query_until('postgres', "SELECT closed IS NOT NULL FROM pg_contention_incidents WHERE id = $id"),
	'closed after the fix');
ok($node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_findings WHERE problem = 'subxact_overflow' AND severity = 'info'
	    AND evidence LIKE 'Ended at %' AND advice LIKE 'Nothing to do now;%'"),
	'the finding, still in its window, says the overflow ended, at info');
evaluated_twice();
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_incidents WHERE problem = 'subxact_overflow'"),
	'1', 'and opens no new incident while its window shows it');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_findings WHERE problem IN ('subxact_overflow', 'subtrans_slru_contention') AND severity <> 'info'"),
	'0', 'no subtransaction finding above info once it ended');
like($node->safe_psql('postgres', "SELECT resolution FROM pg_contention_incidents WHERE id = $id"),
	qr/^the overflowing sessions \(pids \d+, \d+\) ended$/,
	'the resolution names the sessions that ended: both of pgbench\'s, alive when last seen (not only the one overflowed at that instant)');
ok($node->log_contains(qr/LOG:  pg_contention: incident $id closed after \d+ (s|min): the overflowing sessions? \(pids? [\d, ]+\) ended/, $offset),
	'the close is logged with it');
is($node->safe_psql('postgres', "SELECT severity IS NULL AND details -> 'closed' ->> 'evidence' ~ '^(Ended at .*)?From ' FROM pg_contention_incidents WHERE id = $id"),
	't', 'closed: no current severity, the last evidence frozen');
# (Its texts spelt in pieces: this query's own text is counted.)
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_statements
	WHERE strpos(query, 'pg_contention_' || 'incident_key') > 0 OR strpos(query, 'public.' || 'pg_contention_findings()') > 0"),
	'0', 'the worker\'s own statements are not in pg_contention_statements');

# The culprits change while it is open: other sessions overflow, then the
# first ones end, then the others (the same statement, the same
# incident).  What ended it is the end of the sessions it was last seen
# with, which the resolution names, not the first ones frozen at its peak.
# A reader scans the overflowed sessions' rows throughout: their
# pg_subtrans lookups keep the finding at warning (idle overflowed
# sessions alone cost nothing: info).  It also commits a transaction with
# an XID each time, as a cluster's writers do: a snapshot looks a
# subtransaction's XID up only once a later XID has ended (until then it
# is at or past the snapshot's xmax: in progress, no lookup), so without
# commits the later sessions' rows would cost nothing.
sub overflowing_sessions
{
	my @sessions;
	for (1 .. 2)
	{
		my $s = $node->background_psql('postgres');
		$s->query_safe("SET application_name = 'importer'; BEGIN;\n"
			  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));
		push @sessions, $s;
	}
	return @sessions;
}
sub pids_of { map { my $p = $_->query_safe('SELECT pg_backend_pid()'); $p =~ s/\s+//g; $p } @_ }
my $reader_script = PostgreSQL::Test::Utils::tempdir() . '/reader.sql';
PostgreSQL::Test::Utils::append_to_file($reader_script,
	"SELECT count(*) FROM side;\nSELECT pg_catalog.txid_current();\n");
my ($reader_out, $reader_err) = ('', '');
# (At 20 scans a second: thousands of lookups, and the machine left to the
# worker's evaluations.)
my $reader = IPC::Run::start([ 'pgbench', '-n', '-c', '1', '-R', '20', '-T', '600', '-f', $reader_script,
	'-h', $node->host, '-p', $node->port, 'postgres' ], '>', \$reader_out, '2>', \$reader_err);
my @first = overflowing_sessions();
my @first_pids = pids_of(@first);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'subxact_overflow' AND closed IS NULL"),
	'a second overflow opens an incident');
my $second_id = $node->safe_psql('postgres',
	"SELECT id FROM pg_contention_incidents WHERE problem = 'subxact_overflow' AND closed IS NULL");
my $before_later = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
my @later = overflowing_sessions();
my @later_pids = pids_of(@later);
ok($node->poll_query_until('postgres', qq{
	SELECT bool_or(details -> 'alive_pids' \@> '[$later_pids[0]]') AND bool_or(details -> 'alive_pids' \@> '[$later_pids[1]]')
	  FROM pg_contention_findings WHERE problem = 'subxact_overflow'}),
	'the findings name the later sessions, alive now');
$_->quit for @first;
# (A backend ends after its client: gone from the server first.)
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid IN ($first_pids[0], $first_pids[1])"),
	'the first sessions ended');
# The worker has seen the incident at warning or above since the first
# sessions ended (last_seen), with the later sessions overflowed.
my $first_gone = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
ok($node->poll_query_until('postgres',
	"SELECT last_seen > '$first_gone' AND closed IS NULL FROM pg_contention_incidents WHERE id = $second_id"),
	'the same incident goes on, seen with the later sessions')
  or diag('the findings: ' . $node->safe_psql('postgres',
	"SELECT string_agg(severity || ' ' || subject || ' ' || (details ->> 'pids'), ' | ') FROM pg_contention_findings WHERE problem = 'subxact_overflow'")
	. '; the incidents: ' . $node->safe_psql('postgres', "SELECT string_agg(id || ' ' || coalesce(severity, 'closed') || ' ' || last_seen, ' | ') FROM pg_contention_incidents"));
# What the resolution would say now, on details of the shape the worker
# remembers: nothing ended it while the sessions it was last seen with are
# overflowed (the first ones' end is no answer), and sessions that started
# after the details were seen are others, with a reused pid.
my $remembered = qq{'[{"pids": [$first_pids[0], $first_pids[1], $later_pids[0], $later_pids[1]],
	"alive_pids": [$later_pids[0], $later_pids[1]]}]'};
is($node->safe_psql('postgres',
	"SELECT pg_contention_incident_resolution('subxact_overflow', $remembered, clock_timestamp(), '[]') IS NULL"),
	't', 'while the later sessions are overflowed, nothing has ended it');
like($node->safe_psql('postgres',
	"SELECT pg_contention_incident_resolution('subxact_overflow', $remembered, '$before_later', '[]')"),
	qr/^the overflowing sessions \(pids \d+, \d+\) ended$/,
	'sessions started after the details were seen are not the ones they name');
$_->quit for @later;
ok($node->poll_query_until('postgres', "SELECT closed IS NOT NULL FROM pg_contention_incidents WHERE id = $second_id"),
	'it closes after the later sessions end');
$reader->kill_kill;
my $resolution = $node->safe_psql('postgres', "SELECT resolution FROM pg_contention_incidents WHERE id = $second_id");
like($resolution, qr/^the overflowing sessions \(pids \d+, \d+\) ended$/,
	'the resolution names two sessions');
is(join(',', sort { $a <=> $b } $resolution =~ /(\d+)/g), join(',', sort { $a <=> $b } @later_pids),
	'the later sessions, whose end fixed it, not the first ones frozen at its peak');
like($node->safe_psql('postgres', "SELECT details -> 'finding' ->> 'pids' FROM pg_contention_incidents WHERE id = $second_id"),
	qr/\b$first_pids[0]\b/, 'its peak still names the first sessions');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET pg_contention.findings_window');
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.horizon_min_age = '1s'");
$node->reload;

# ---- (b) An xmin horizon held by a session idle in its transaction:
# warning, then critical after horizon_critical_age, closed when it
# commits.  The session is the culprit role's, for the privileges below.
# The critical age is out of reach until the incident has opened at
# warning (the churn that makes the hold cost something can take longer
# than 6 s on a loaded machine), then brought back to 6 s.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.horizon_critical_age = '1h'");
$node->reload;
$offset = -s $node->logfile;
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'culprit' ]);
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder_pid =~ s/\s+//g;
$holder->query_safe('BEGIN; INSERT INTO side VALUES (1)');
# What it costs: dead tuples it keeps from vacuum in a table due for it
# (age alone is info; those of the parts before may be vacuumed by now).
churn($node, 'postgres');
ok($node->poll_query_until('postgres',
	"SELECT peak_severity = 'warning' FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held'"),
	'xmin_horizon_held: opened at warning');
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.horizon_critical_age = '6s'");
$node->reload;
ok($node->poll_query_until('postgres',
	"SELECT peak_severity = 'critical' FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held'"),
	'xmin_horizon_held: opened, then escalated to critical')
  or diag('the incidents: ' . $node->safe_psql('postgres',
	"SELECT string_agg(concat_ws(' ', id, problem, peak_severity, opened, last_seen, closed, resolution, details -> 'finding' ->> 'evidence'), E'\n' ORDER BY id)
	   FROM pg_contention_incidents"));
$id = $node->safe_psql('postgres', "SELECT id FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held'");
ok($node->log_contains(qr/LOG:  pg_contention: incident $id opened: warning xmin_horizon_held: pid $holder_pid /, $offset),
	'the open is logged');
ok($node->log_contains(qr/LOG:  pg_contention: incident $id escalated: critical xmin_horizon_held: pid $holder_pid /, $offset),
	'the escalation is logged');
is($node->safe_psql('postgres', "SELECT details -> 'opened' ->> 'severity' || ' ' || (details -> 'peak' ->> 'severity')
	|| ' ' || (peak > opened) || ' ' || (details ->> 'key') FROM pg_contention_incidents WHERE id = $id"),
	"warning critical true backend $holder_pid", 'opened at warning, its peak later at critical');

# ---- (e) Privileges: like pg_stat_activity, by the role each frozen text
# came from (t/037 reads every kind of text as every kind of role).
is($node->safe_psql('postgres', "SET ROLE watcher; SELECT subject || ' ' || evidence || ' ' || advice || ' '
	|| (details ->> 'masked') || ' ' || (details -> 'finding')::text
	|| ' ' || (SELECT string_agg(h ->> 'query', ',') FROM jsonb_array_elements(details -> 'holders') AS h
				WHERE h ->> 'pid' = '$holder_pid')
	FROM pg_contention_incidents WHERE id = $id"),
	'<insufficient privilege> <insufficient privilege> <insufficient privilege> true {"masked": true} <insufficient privilege>',
	'a role without pg_read_all_stats: the texts masked, the frozen holder too');
is($node->safe_psql('postgres', "SET ROLE culprit; SELECT subject || ' '
	|| (SELECT string_agg(left(h ->> 'query', 27), ',') FROM jsonb_array_elements(details -> 'holders') AS h
		WHERE h ->> 'pid' = '$holder_pid')
	FROM pg_contention_incidents WHERE id = $id"),
	'<insufficient privilege> INSERT INTO side VALUES (1)',
	'the culprit role: its own frozen holder, not the texts composed from every role\'s');
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO watcher');
like($node->safe_psql('postgres', "SET ROLE watcher; SELECT subject FROM pg_contention_incidents WHERE id = $id"),
	qr/^pid $holder_pid /, 'with pg_read_all_stats: the texts');
$node->safe_psql('postgres', 'REVOKE pg_read_all_stats FROM watcher');

# The fix.
$holder->query_safe('COMMIT');
ok($node->poll_query_until('postgres', "SELECT closed IS NOT NULL FROM pg_contention_incidents WHERE id = $id"),
	'closed after the commit');
is($node->safe_psql('postgres', "SELECT resolution FROM pg_contention_incidents WHERE id = $id"),
	"the holder of the xmin horizon, pid $holder_pid, ended its transaction", 'the resolution: the transaction ended');
$holder->quit;

# ---- (h) The history that backed it wraps (history_seconds = 15); the
# frozen history stays.
ok($node->poll_query_until('postgres',
	"SELECT min(h.bucket_start) > (SELECT peak FROM pg_contention_incidents WHERE id = $id) FROM pg_contention_history AS h"),
	'the history of the peak has wrapped');
is($node->safe_psql('postgres', "SELECT jsonb_array_length(details -> 'history') > 0
	AND (details -> 'history' -> 0 ->> 'bucket_start')::timestamptz <= peak FROM pg_contention_incidents WHERE id = $id"),
	't', 'the frozen history still has the seconds before the peak');

# ---- (k) Evidence that a slot cannot keep even compressed: five
# holders idle in their transactions, each last ran a statement of 3,900
# characters that do not compress.  The worker freezes it again, smaller:
# no history, the first holder (the oldest) whole, "truncated" said.
# (The restarts of (c) then check that it comes back as it was.)  No
# holder counts until all five are there (horizon_min_age 1 h meanwhile):
# every incident opens with the five in its evidence.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.horizon_min_age = '1h'");
$node->reload;
evaluated_twice();				# with it
my @big_holders;
my @big_texts;
srand(26);
for my $n (1 .. 5)
{
	my $text = join('', map { ('a' .. 'z', '0' .. '9')[int(rand(36))] } 1 .. 3900);
	my $session = $node->background_psql('postgres');
	$session->query_safe("BEGIN; INSERT INTO side VALUES (100 + $n)");
	$session->query_safe("SELECT '$text' IS NOT NULL AS big_$n");
	push @big_holders, $session;
	push @big_texts, "SELECT '$text' IS NOT NULL AS big_$n";
}
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_incidents WHERE closed IS NULL"),
	'0', 'no incident while the holders gather');
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.horizon_min_age = '1s'");
$node->reload;
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 5 FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL"),
	'five holders: five incidents');
# (The session's text as the server has it ends with psql's ";".)
like($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT (details ->> 'truncated') || ' '
		|| jsonb_array_length(details -> 'holders') || ' ' || jsonb_array_length(details -> 'history')
		|| ' ' || (details -> 'holders' -> 0 ->> 'query'), ',')
	FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL}),
	qr/^true 1 0 \Q$big_texts[0]\E\s*;$/,
	'evidence too large for a slot: frozen again, smaller, the oldest holder whole');
$_->query_safe('COMMIT') for @big_holders;
$_->quit for @big_holders;

# The function behind the view: without details (what counting and
# listing read), and one incident by id (what its report reads).
is($node->safe_psql('postgres', q{SELECT ((SELECT string_agg(id || ' ' || problem || ' ' || coalesce(closed::text, '-'), ',' ORDER BY id)
		FROM pg_contention_incidents(with_details => false))
	= (SELECT string_agg(id || ' ' || problem || ' ' || coalesce(closed::text, '-'), ',' ORDER BY id) FROM pg_contention_incidents))
	|| ' ' || (SELECT count(*) FROM pg_contention_incidents(false) WHERE details IS NOT NULL)}),
	'true 0', 'with_details => false: the same incidents, details NULL');
my $some = $node->safe_psql('postgres', "SELECT min(id) FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held'");
is($node->safe_psql('postgres', "SELECT string_agg(i.id || ' ' || (i.details = v.details), ',')
	FROM pg_contention_incidents(incident => $some) AS i JOIN pg_contention_incidents AS v USING (id)"),
	"$some true", 'incident => N: that one, its details as the view has them');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_incidents(true, -1)"), '0', 'no such id: no row');

# ---- (c) A clean restart and a crash restart keep them (all closed: an
# open one would change meanwhile).
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_contention_incidents WHERE closed IS NULL'),
	'every incident closed');
my $all = q{SELECT string_agg(id || ' ' || problem || ' ' || peak_severity || ' ' || opened || ' ' || peak || ' ' || closed
	|| ' ' || coalesce(resolution, '-') || ' ' || md5(details::text), E'\n' ORDER BY id) FROM pg_contention_incidents};
my $before = $node->safe_psql('postgres', $all);
$node->restart;
is($node->safe_psql('postgres', $all), $before, 'a clean restart: the same incidents');
# A crash: what the sampler saved (every save_interval) is back.
my $marker = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
ok($node->poll_query_until('postgres', "SELECT last_saved > '$marker' FROM pg_contention_info"),
	'saved since');
crash();
is($node->safe_psql('postgres', $all), $before, 'after the crash: the same incidents');
my $next = $node->safe_psql('postgres', 'SELECT max(id) + 1 FROM pg_contention_incidents');

# ---- (d) The bound: three prepared transactions hold the horizon, each
# its own root holder, with max_incidents = 2.
$node->append_conf('postgresql.conf', 'pg_contention.max_incidents = 2');
$node->restart;
is($node->safe_psql('postgres', 'SELECT count(*) || \' \' || min(id) FROM pg_contention_incidents'),
	'2 ' . ($next - 2), 'a smaller store keeps the newest');
# The counters before (the restart into a smaller store counted what it
# could not keep).
my $evictions = $node->safe_psql('postgres', 'SELECT incident_evictions FROM pg_contention_info');
my $opened_before = $node->safe_psql('postgres', "SELECT value FROM pg_contention_metrics WHERE metric = 'incidents_opened_total'
	AND labels = '{\"problem\": \"xmin_horizon_held\", \"severity\": \"warning\"}'");
# The third subject finds every slot open, held by its own role: an open
# incident gives its slot only to a role that holds fewer (t/038); the
# subject is counted and logged once, and opens once a slot is free.
$offset = -s $node->logfile;
for my $g (1 .. 3)
{
	$node->safe_psql('postgres', "BEGIN; INSERT INTO side VALUES ($g); PREPARE TRANSACTION 'batch$g'");
}
churn($node, 'postgres');		# what they hold costs
ok($node->poll_query_until('postgres',
	"SELECT incident_evictions = $evictions + 2 AND incidents_not_opened = 1 FROM pg_contention_info"),
	'full: the closed incidents were evicted, the third subject counted as not opened');
evaluated_twice();
my $open_ids = "SELECT count(*) || ' ' || min(id) || ' ' || max(id) FROM pg_contention_incidents
	WHERE problem = 'xmin_horizon_held' AND closed IS NULL";
is($node->safe_psql('postgres', $open_ids), '2 ' . $next . ' ' . ($next + 1),
	'the two open incidents stay, no other opens');
is($node->safe_psql('postgres', 'SELECT incidents_not_opened FROM pg_contention_info'), '1',
	'counted once while it stays refused');
my @refusals = (slurp_file($node->logfile, $offset) =~
	/LOG:  pg_contention: incident not opened: all 2 incident slots hold open incidents, 2 of them of role \S+: warning xmin_horizon_held: prepared transaction 'batch\d'/g);
is(scalar(@refusals), 1, 'logged once');
is($node->safe_psql('postgres', "SELECT value FROM pg_contention_metrics WHERE metric = 'incidents_open'"),
	'2', 'the incidents_open gauge');
is($node->safe_psql('postgres', "SELECT value FROM pg_contention_metrics WHERE metric = 'incidents_opened_total'
	AND labels = '{\"problem\": \"xmin_horizon_held\", \"severity\": \"warning\"}'"),
	$opened_before + 2, 'the incidents_opened_total counter counts the incidents opened');
my $refused = $node->safe_psql('postgres', "SELECT gid FROM pg_prepared_xacts WHERE gid NOT IN
	(SELECT details -> 'finding' ->> 'holder' FROM pg_contention_incidents WHERE closed IS NULL)");
like($refused, qr/^batch\d$/, 'one prepared transaction has no incident');
my $first = $node->safe_psql('postgres', "SELECT details -> 'finding' ->> 'holder' FROM pg_contention_incidents WHERE id = $next");
$node->safe_psql('postgres', "COMMIT PREPARED '$first'");
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_contention_incidents
	WHERE closed IS NULL AND details -> 'finding' ->> 'holder' = '$refused'"),
	'once an incident closed, the refused subject opens');
is($node->safe_psql('postgres', "SELECT max(id) FROM pg_contention_incidents"), $next + 2, 'under the next id');
$node->safe_psql('postgres', "COMMIT PREPARED '$_'")
  for split /\n/, $node->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_contention_incidents WHERE closed IS NULL"),
	'closed after COMMIT PREPARED');
like($node->safe_psql('postgres', "SELECT string_agg(resolution, ',') FROM pg_contention_incidents"),
	qr/^the prepared transaction 'batch\d' was committed or rolled back,the prepared transaction 'batch\d' was committed or rolled back$/,
	'the resolution names the prepared transaction');

# ---- (f) pg_contention_reset() removes them.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_incidents'), '0', 'reset: no incident');
is($node->safe_psql('postgres', "SELECT incidents || ' ' || incident_evictions || ' ' || incidents_opened FROM pg_contention_info"),
	'0 0 {}', 'reset: the counters too');

# incident_log = off: no LOG line; ids start again at 1.
$node->append_conf('postgresql.conf', 'pg_contention.incident_log = off');
$node->reload;
$offset = -s $node->logfile;
$node->safe_psql('postgres', "BEGIN; INSERT INTO side VALUES (9); PREPARE TRANSACTION 'quiet'");
churn($node, 'postgres');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_contention_incidents WHERE id = 1"),
	'after the reset the ids start at 1');
$node->safe_psql('postgres', "ROLLBACK PREPARED 'quiet'");
ok($node->poll_query_until('postgres', "SELECT closed IS NOT NULL FROM pg_contention_incidents WHERE id = 1"),
	'closed');
ok(!$node->log_contains(qr/pg_contention: incident/, $offset), 'incident_log = off: no LOG line');

# ---- (i) Dead index entries behind a held transaction (the README's
# second incident): the index's incident closes once VACUUM has removed
# them, with that named, and no evaluation fails on the way.  The
# findings' window is 5 min here, so that the bad executions are still in
# it after the restarts below.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.findings_window = '5min'");
$node->reload;
$offset = -s $node->logfile;
$node->safe_psql('postgres', q{
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
	ANALYZE orders;
});
my $blocker = $node->background_psql('postgres');
$blocker->query_safe("SET application_name = 'billing'; BEGIN; SELECT txid_current()");
$node->safe_psql('postgres',
	"INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000)");
$node->safe_psql('postgres', "DELETE FROM orders WHERE note = 'gone'");
$node->safe_psql('postgres', 'SELECT * FROM orders WHERE customer = 42') for 1 .. 3;
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan' AND closed IS NULL"),
	'dead_tuple_index_scan: an incident opened');
$id = $node->safe_psql('postgres',
	"SELECT id FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan' AND closed IS NULL");
like($node->safe_psql('postgres', "SELECT subject FROM pg_contention_incidents WHERE id = $id"),
	qr/^index public\.orders_customer scanned by SELECT \* FROM orders WHERE customer = /, 'it names the index');
$blocker->query_safe('COMMIT');
$blocker->quit;
$node->safe_psql('postgres', 'VACUUM orders');
ok($node->poll_query_until('postgres', "SELECT closed IS NOT NULL FROM pg_contention_incidents WHERE id = $id"),
	'closed after the holder ended and VACUUM');
like($node->safe_psql('postgres', "SELECT resolution FROM pg_contention_incidents WHERE id = $id"),
	qr/^vacuum removed the dead entries: the index's lookups no longer visit them$/,
	'the resolution: vacuum removed them');
ok(!$node->log_contains(qr/pg_contention incidents: the evaluation failed/, $offset),
	'no evaluation failed meanwhile');

# A crash after the fix: the statement store comes back from its file, the
# table statistics (last_vacuum) do not.  The finding must not turn into
# "vacuum has not removed them yet" (a warning, a new incident) for
# entries VACUUM removed before the crash: whether they are still there
# is unknown until the statement runs again.  A clean restart keeps the
# statistics: still vacuumed.
my $dead_state = "SELECT severity || ' ' || (details ->> 'state') FROM pg_contention_findings
	WHERE problem = 'dead_tuple_index_scan'";
is($node->safe_psql('postgres', $dead_state), 'info vacuumed', 'the finding: vacuumed, info');
$node->restart;
is($node->safe_psql('postgres', $dead_state), 'info vacuumed', 'after a clean restart: still vacuumed');
$marker = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
ok($node->poll_query_until('postgres', "SELECT last_saved > '$marker' FROM pg_contention_info"),
	'saved since');
crash();
is($node->safe_psql('postgres', "SELECT last_vacuum IS NULL AND last_autovacuum IS NULL FROM pg_stat_user_tables
	WHERE relname = 'orders'"), 't', 'the crash lost the table statistics');
like($node->safe_psql('postgres', "SELECT severity || ' ' || (details ->> 'state') || ' ' || evidence FROM pg_contention_findings
	WHERE problem = 'dead_tuple_index_scan'"),
	qr/^info unknown .*; the table statistics were reset at \d\d:\d\d:\d\d \(a crash restart, or pg_stat_reset\(\)\), after the last of these executions: whether vacuum has removed the dead entries since is unknown until the statement runs again\.$/,
	'after the crash: unknown, info, and why');
evaluated_twice();
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan'"),
	'1', 'no incident opens for it after the crash');
# The statement runs again and visits no dead entry: clean.
$node->safe_psql('postgres', 'SELECT * FROM orders WHERE customer = 42');
is($node->safe_psql('postgres', $dead_state), 'info clean', 'the next execution decides: clean');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET pg_contention.findings_window');
$node->reload;

# ---- (j) One incident's query failing costs that incident its part, not
# the evaluation: the evidence and the resolution of the incident of
# prepared transaction 'p1' fail (wrappers raise for it), 'p2''s beside it
# open and close as ever.  And an incident that opens or closes reaches
# the stores' file at once (save_interval is 1 h here): a crash right
# after keeps it, under the same id.
$node->safe_psql('postgres', q{
	ALTER FUNCTION pg_contention_incident_evidence(text, jsonb, integer) RENAME TO broken_evidence;
	ALTER FUNCTION pg_contention_incident_resolution(text, jsonb, timestamptz, jsonb) RENAME TO broken_resolution;
	CREATE FUNCTION pg_contention_incident_evidence(problem text, details jsonb, max_bytes integer)
	RETURNS jsonb LANGUAGE plpgsql AS $$
	BEGIN
		IF details ->> 'holder' = 'p1' THEN RAISE EXCEPTION 'evidence broken on purpose'; END IF;
		RETURN public.broken_evidence(problem, details, max_bytes);
	END $$;
	CREATE FUNCTION pg_contention_incident_resolution(problem text, details jsonb, opened timestamptz, index_states jsonb)
	RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		IF details ->> 'holder' = 'p1' THEN RAISE EXCEPTION 'resolution broken on purpose'; END IF;
		RETURN public.broken_resolution(problem, details, opened, index_states);
	END $$;
	ALTER SYSTEM SET pg_contention.save_interval = '1h';
});
# Restarted, the sampler's first save is an hour away.
$node->restart;
$offset = -s $node->logfile;
$node->safe_psql('postgres', "BEGIN; INSERT INTO side VALUES ($_); PREPARE TRANSACTION 'p$_'") for 1 .. 2;
churn($node, 'postgres');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL"),
	'two incidents opened, one with its evidence failing');
is($node->safe_psql('postgres', "SELECT string_agg((details -> 'finding' ->> 'holder') || ' '
	|| coalesce(details ->> 'unavailable', 'kept') || ' ' || (jsonb_array_length(details -> 'holders') > 0), ',' ORDER BY id)
	FROM pg_contention_incidents WHERE closed IS NULL"),
	'p1 true false,p2 kept true', 'p1: its evidence unavailable; p2: frozen as ever');
ok($node->log_contains(qr/pg_contention incidents: the evidence of a new incident failed: evidence broken on purpose/, $offset),
	'the failure is one LOG line');
like($node->safe_psql('postgres', "SELECT pg_contention_report(incident => (SELECT id FROM pg_contention_incidents
	WHERE closed IS NULL AND details -> 'finding' ->> 'holder' = 'p1'))"),
	qr/\(Unavailable: the statements, holders and history could not be frozen when the incident opened; the server log says why\.\)/,
	'the report says the evidence is unavailable');
ok($node->poll_query_until('postgres',
	"SELECT last_saved >= (SELECT max(opened) FROM pg_contention_incidents) FROM pg_contention_info"),
	'saved once they opened, not an hour later');
my $open_now = "SELECT string_agg(id || ' ' || opened, ',' ORDER BY id) FROM pg_contention_incidents WHERE closed IS NULL";
my $open_before = $node->safe_psql('postgres', $open_now);
my $before_crash = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
crash();
is($node->safe_psql('postgres', $open_now), $open_before, 'after the crash: the same open incidents, the same ids');
# Their timeline shows the restart (the clean one before they opened is not theirs).
is($node->safe_psql('postgres', qq{SELECT string_agg((details ->> 'restart_count') || ' '
	|| ((details -> 'restarts' ->> 0)::timestamptz > '$before_crash'), ',' ORDER BY id)
	FROM pg_contention_incidents WHERE closed IS NULL}),
	'1 true,1 true', 'each open incident lists the crash restart in its timeline');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_incidents WHERE closed IS NOT NULL
	AND (details ->> 'restart_count')::integer > 0"),
	'0', 'an incident closed before a restart lists none');
like($node->safe_psql('postgres', "SELECT pg_contention_report(incident => (SELECT min(id) FROM pg_contention_incidents WHERE closed IS NULL))"),
	qr/^Restarts:   1 while it was open: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+$/m, 'report(incident) lists the restart');
{
	my $open_id = $node->safe_psql('postgres', 'SELECT min(id) FROM pg_contention_incidents WHERE closed IS NULL');
	my ($rc, $html) = PgContention::Test::run_client($node, 'report', '--incident', $open_id, '--html', '-');
	is($rc, 0, 'report --incident --html of an incident open across a restart');
	like($html, qr{<tr><td>server restarted</td><td>\d{4}-[^<]+</td><td></td><td></td><td>open across this start of the server</td></tr>},
		'report --incident --html: the timeline has the restart');
}
$node->safe_psql('postgres', "COMMIT PREPARED 'p$_'") for 1 .. 2;
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_contention_incidents WHERE closed IS NULL"), 'both closed');
is($node->safe_psql('postgres', "SELECT string_agg((details -> 'finding' ->> 'holder') || ': ' || coalesce(resolution, '-'), ',' ORDER BY id)
	FROM pg_contention_incidents WHERE details -> 'finding' ->> 'holder' IN ('p1', 'p2')"),
	"p1: -,p2: the prepared transaction 'p2' was committed or rolled back", 'p1 closed without a resolution, p2 with its own');
ok($node->log_contains(qr/pg_contention incidents: the resolution of incident \d+ failed: resolution broken on purpose/, $offset),
	'that failure is one LOG line too');
ok(!$node->log_contains(qr/pg_contention incidents: the evaluation failed/, $offset), 'no evaluation failed');
$node->safe_psql('postgres', q{
	DROP FUNCTION pg_contention_incident_evidence(text, jsonb, integer);
	DROP FUNCTION pg_contention_incident_resolution(text, jsonb, timestamptz, jsonb);
	ALTER FUNCTION broken_evidence(text, jsonb, integer) RENAME TO pg_contention_incident_evidence;
	ALTER FUNCTION broken_resolution(text, jsonb, timestamptz, jsonb) RENAME TO pg_contention_incident_resolution;
	ALTER SYSTEM RESET pg_contention.save_interval;
});
$node->reload;

# pg_cancel_backend() cancels at most an evaluation: the worker goes on.
my $worker_pid = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_contention incidents'");
$node->safe_psql('postgres', "SELECT pg_cancel_backend($worker_pid)");
evaluated_twice();
is($node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_contention incidents'"),
	$worker_pid, 'after pg_cancel_backend() the same worker evaluates on');
# It leaves promptly on SIGTERM and comes back.
$node->safe_psql('postgres', "SELECT pg_terminate_backend($worker_pid)");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_contention incidents' AND pid <> $worker_pid"),
	'terminated, the worker is started again');

# ---- A hot standby runs the worker too: it evaluates (read-only) without
# failing.
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
$offset = -s $standby->logfile;
for (1 .. 2)
{
	my $mark = $standby->safe_psql('postgres', 'SELECT clock_timestamp()');
	ok($standby->poll_query_until('postgres',
		"SELECT state_change > '$mark' AND state = 'idle' FROM pg_stat_activity
		  WHERE backend_type = 'pg_contention incidents'"),
		'the standby\'s worker evaluated');
}
ok(!$standby->log_contains(qr/pg_contention incidents: the evaluation failed/, $offset),
	'on the standby: no failed evaluation');
$standby->stop;

# ---- The extension dropped and created in another schema under the
# worker: it says once that it is gone, then finds it in its new schema
# and evaluates with the new objects (anything it kept of the schema, it
# forgets after a failed evaluation).
$offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP EXTENSION pg_contention');
ok(defined wait_for_log_line($node,
		qr/pg_contention incidents: the extension pg_contention \S+ is not installed in database "postgres"; incidents wait for it/,
		$offset),
	'the worker says the extension is gone');
$offset = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE SCHEMA pgc; CREATE EXTENSION pg_contention SCHEMA pgc');
ok(defined wait_for_log_line($node, qr/pg_contention incidents: found the extension in schema pgc/, $offset),
	'the worker finds it in its new schema');
evaluated_twice();
ok(!$node->log_contains(qr/pg_contention incidents: the evaluation failed/, $offset),
	'and evaluates with it: no evaluation failed');

$node->stop;
done_testing();
