# pg_contention_findings: each rule fires on its reproduction and stays
# silent on its near miss; a healthy pgbench run, idle sessions, short
# transactions and monitoring queries produce nothing above info.
# Counts and texts only: no timing is asserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(savepoint_script evaluated_twice missing_test_module);

my $node = PostgreSQL::Test::Cluster->new('findings');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
max_prepared_transactions = 2
autovacuum = off
pg_contention.incident_interval = 1s
});
$node->start;
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE ROLE watcher LOGIN;
	CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL)
		WITH (fillfactor = '50');
	INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	CREATE TABLE side (id integer);
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
});
$node->safe_psql('postgres', 'VACUUM (ANALYZE) contend');
$node->safe_psql('postgres', 'VACUUM (ANALYZE) orders');
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench tables');

# Findings as "problem severity" lines, most severe first.
sub findings
{
	my ($settings) = @_;
	$settings //= '';
	# A finding with a NULL text would be a blank line to the DBA.
	return $node->safe_psql('postgres',
		"$settings SELECT coalesce(string_agg(problem || ' ' || severity
			|| CASE WHEN num_nulls(subject, evidence, advice, details) > 0 THEN ' HAS NULLS' ELSE '' END,
			E'\\n'), '') FROM pg_contention_findings");
}

# finding($problem, $column, $settings) and history_settled():
# PgContention::Test's, on this node.
sub finding
{
	return PgContention::Test::finding($node, @_);
}

sub history_settled
{
	PgContention::Test::history_settled($node);
}

# The incidents the server opened by itself, once its worker has
# evaluated the findings twice since now (it reports each evaluation's
# start and end in pg_stat_activity): where the findings are silent, the
# incidents must be too.
sub incidents_after_evaluations
{
	evaluated_twice($node);
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(problem || ' ' || peak_severity, ', '), '') FROM pg_contention_incidents");
}

sub start_over
{
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
}

# How many times one evaluation of the findings called a function of the
# extension (counted in the transaction, on every version).
sub calls_in_findings
{
	my ($function, $settings) = @_;
	$settings //= '';
	return $node->safe_psql('postgres', qq{
		BEGIN;
		SET LOCAL track_functions = 'all';
		$settings
		SELECT coalesce(pg_stat_get_xact_function_calls('$function'::regprocedure), 0)
		  FROM (SELECT count(*) FROM pg_contention_findings) AS evaluated;
		COMMIT;});
}

# ---- A healthy server: default pgbench, an idle session, an idle
# transaction without a snapshot, monitoring queries.
start_over();
my $idle = $node->background_psql('postgres');
$idle->query_safe('SELECT 1');
my $idle_xact = $node->background_psql('postgres');
$idle_xact->query_safe('BEGIN; SELECT 1');
$node->pgbench('-n -c 4 -j 2 -T 5', 0, [qr{processed}], [qr{^$}], 'a healthy pgbench run');
$node->safe_psql('postgres', 'SELECT * FROM pg_stat_activity; SELECT * FROM pg_contention_statements');
$node->pgbench('-n -c 2 -j 2 -t 200', 0, [qr{processed}], [qr{^$}], 'short transactions',
	{ 'short' => "SELECT * FROM pg_stat_activity;\nSELECT count(*) FROM pgbench_branches;\n" });
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_findings WHERE severity <> 'info'"),
	'0', 'healthy server: no finding above info');
is(calls_in_findings('pg_contention_database_dead_tuples()'), '0',
	'healthy server: no holder blocks cleanup, so every table\'s dead tuples are not read');
# Each rule is evaluated once per evaluation of the findings: none
# evaluates another (the two that build on another's findings are given
# them).
for my $rule (split /\n/, $node->safe_psql('postgres',
	"SELECT p.oid::regprocedure FROM pg_proc AS p WHERE p.proname LIKE 'pg\\_contention\\_rule\\_%' ORDER BY 1"))
{
	is(calls_in_findings($rule), '1', "$rule: evaluated once per evaluation of the findings");
}
ok($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_index_scans WHERE indexrelname = 'pgbench_accounts_pkey' AND scans > 0") > 0,
	'healthy server: its index scans were measured (the silence is not blindness)');
is(incidents_after_evaluations(), '', 'healthy server: no incident');
$idle_xact->query_safe('COMMIT');
$idle_xact->quit;
$idle->quit;

# ---- Case 1: subtransaction overflow, with the pgbench script of the case
# (savepoint_script).

# Near misses first: 30 and 60 savepoints never overflow.
for my $n (30, 60)
{
	start_over();
	$node->pgbench('-n -M prepared -c 4 -j 2 -t 10', 0, [qr{processed: 40/40}], [qr{^$}],
		"pgbench with $n savepoints per transaction", { "sp_$n" => savepoint_script($n) });
	history_settled();
	my $found = findings();
	unlike($found, qr/subxact_overflow|subtrans_slru_contention/,
		"$n savepoints: no overflow, no pg_subtrans contention");
	is(incidents_after_evaluations(), '', "$n savepoints: no incident");
	if ($n == 30)
	{
		is($found, '', '30 savepoints: no finding at all');
	}
	else
	{
		is($found, 'subxact_near_overflow info', '60 savepoints: near overflow, as info');
		like(finding('subxact_near_overflow', 'evidence'),
			qr/ executions of \d+ statements .* ended in a transaction with more than 48 subtransaction XIDs cached \(at most 60 of 64\), without overflowing\.$/,
			'60 savepoints: the evidence says how close it came');
	}
}

# The reproduction: 90 savepoints, four clients.
start_over();
$node->pgbench('-n -M prepared -c 4 -j 2 -t 15', 0, [qr{processed: 60/60}], [qr{^$}],
	'pgbench with 90 savepoints per transaction', { 'sp_90' => savepoint_script(90) });
history_settled();
# The warning bar is pg_subtrans lookups per second: 50,000 by default,
# which an assertion-enabled build on two cores does not always reach with
# this short run.  A rate is the same work over the time the machine took:
# at 1 (the setting's minimum) the bar does not depend on the machine's
# speed; the thresholds' effect is tested below (out of reach: info).
my $low = 'SET pg_contention.subtrans_lookups_warning = 1;';
{
	local $ENV{PGOPTIONS} = '-c pg_contention.subtrans_lookups_warning=1';
	ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_contention_findings
		  WHERE problem = 'subxact_overflow' AND severity <> 'info'"),
		'90 savepoints: subxact_overflow, at least a warning (its cost in lookups)');
}
like(finding('subxact_overflow', 'subject'),
	qr/^statement UPDATE contend SET val = val \+ \$\d+ .* in 4 backends \(application [^,]+, user \w+\), savepoints SAVEPOINT a run /,
	'the subject names the statement that took the 65th XID, the backends and the savepoint pattern');
like(finding('subxact_overflow', 'evidence'),
	qr/^From \d\d:\d\d:\d\d to \d\d:\d\d:\d\d: 60 overflow events; [0-9,]+ executions of \d+ statements ran on suboverflowed snapshots; cost in the last 5 min: [0-9,]+ pg_subtrans lookups by readers \([0-9,]+\/s over \d+ s\)/,
	'the evidence counts the events, the suboverflowed executions and the readers\' lookups, each over its span');
# The span begins no later than the first of the events it counts (the
# statement store's periods can reach two windows back: not "the last 5 min").
is($node->safe_psql('postgres', q{
	SELECT substring(f.evidence FROM '^From (\d\d:\d\d:\d\d)') <= to_char(min(e.event_time), 'HH24:MI:SS')
	  FROM pg_contention_findings AS f, pg_contention_overflow_events AS e
	 WHERE f.problem = 'subxact_overflow' GROUP BY f.evidence}),
	't', 'the span it states begins before the first event it counts');
# The lookups that judge the cost are the readers': the Subtrans accesses
# less the parent records that the XIDs assigned (91 per transaction) can
# account for.  Here the suboverflowed snapshots' lookups dwarf those.
my ($readers, $accesses, $xids, $rate) = split /\|/, finding('subxact_overflow',
	"details ->> 'subtrans_lookups', details ->> 'subtrans_slru_accesses', details ->> 'xids_assigned', "
	  . "details ->> 'subtrans_lookups_per_second'");
cmp_ok($xids, '>', 0, "details: the XIDs assigned ($xids)");
ok($readers > 0 && $readers <= $accesses,
	"details: the readers' lookups ($readers) are some of the Subtrans accesses ($accesses)");
cmp_ok($rate, '>=', 1, "details: the readers' lookups per second ($rate) reach the lowered bar");
is(finding('subxact_overflow', "jsonb_array_length(details -> 'pids') || ' ' || (details ->> 'overflow_events')"),
	'4 60', 'details: the four backends and the 60 events');
ok($node->safe_psql('postgres',
	"SELECT (details ->> 'query_id')::bigint = (SELECT DISTINCT query_id FROM pg_contention_overflow_events)
	   FROM pg_contention_findings WHERE problem = 'subxact_overflow'") eq 't',
	'details: the query id is the events\'');
like(finding('subtrans_slru_contention', 'severity || \' \' || subject', $low),
	qr/^(warning|critical) pg_subtrans, driven by statement UPDATE contend/,
	'subtrans_slru_contention, linked to the overflowing statement');
like(finding('subtrans_slru_contention', 'advice', $low), qr/^Remove the overflow \(see subxact_overflow\)/,
	'its advice points at the subxact_overflow finding, which exists');
unlike(findings(), qr/subxact_near_overflow/, 'no near-overflow noise where the same transactions overflowed');
my $raised = finding('subxact_overflow', 'severity',
	'SET pg_contention.subtrans_lookups_warning = 2147483647; SET pg_contention.subtrans_wait_warning = 100; SET pg_contention.subtrans_wait_critical = 100;');
is($raised, 'info', 'with the thresholds out of reach, the same overflow is info: severity comes from the cost');

# Near miss: a backend overflowed and holding, readers only, nobody
# committing: exposure without cost.
start_over();
my $holder = $node->background_psql('postgres');
$holder->query_safe("SET application_name = 'loader'; BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder_pid =~ s/\s+//g;
# One commit after the overflow: a snapshot skips XIDs newer than the
# latest completed one, and would not be suboverflowed without it.
$node->safe_psql('postgres', 'INSERT INTO side VALUES (0)');
$node->pgbench('-n -c 2 -j 2 -t 200', 0, [qr{processed}], [qr{^$}], 'readers while a backend is overflowed',
	{ 'readers' => "SELECT count(*) FROM contend WHERE id < 500;\n" });
history_settled();
# The holder's age is the machine's: on a loaded one it can pass the
# horizon's minimum (1 min) before this look, and add xmin_horizon_held as
# info, rightly but beside this check's point: pinned out of reach.
is(findings("SET pg_contention.horizon_min_age = '1h';"), 'subxact_overflow info',
	'readers only: the overflow is info, no pg_subtrans contention')
  or diag($node->safe_psql('postgres', 'SELECT problem, severity, subject, evidence FROM pg_contention_findings'));
like(finding('subxact_overflow', 'subject'),
	qr/^statement INSERT INTO side VALUES \(\$1\).* in pid $holder_pid \(application loader, user \w+, idle in transaction for /,
	'the subject names the backend, its application and state');
like(finding('subxact_overflow', 'evidence'),
	qr/; [0-9,]+ executions of \d+ statements? ran on suboverflowed snapshots; cost in the last [^:]+: /,
	'the evidence counts who ran on suboverflowed snapshots');
$holder->query_safe('ROLLBACK');
$holder->quit;

# ---- Case 2: dead index entries behind a held transaction.
start_over();
my $blocker = $node->background_psql('postgres');
$blocker->query_safe("SET application_name = 'billing'; BEGIN; SELECT txid_current()");
my $blocker_pid = $blocker->query_safe('SELECT pg_backend_pid()');
$blocker_pid =~ s/\s+//g;
$node->safe_psql('postgres',
	"INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000)");
$node->safe_psql('postgres', "DELETE FROM orders WHERE note = 'gone'");
# Near miss: a table with ten dead versions of the key looked up.
$node->safe_psql('postgres', q{
	CREATE TABLE notes (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX notes_customer ON notes (customer);
	INSERT INTO notes (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
	ANALYZE notes;
	INSERT INTO notes (customer, note) SELECT 7, 'gone' FROM generate_series(1, 10);
	DELETE FROM notes WHERE note = 'gone';
});
$node->safe_psql('postgres', 'SELECT * FROM orders WHERE customer = 42') for 1 .. 3;
$node->safe_psql('postgres', 'SELECT * FROM notes WHERE customer = 7') for 1 .. 3;
ok($node->safe_psql('postgres',
	"SELECT dead_visits FROM pg_contention_index_scans WHERE indexrelname = 'notes_customer'") >= 30,
	'the near miss\'s dead entries were measured');

# Held for a few seconds only: the default minimum age (1 min) is not
# reached, so no horizon finding; but the holder was running before the
# lookups counted the dead entries, so the index finding names it.
is(finding('xmin_horizon_held', 'count(*)'), '0', 'a horizon held for seconds is no finding');
is(finding('dead_tuple_index_scan', 'count(*)'), '1', 'one index finding: the key with 20,000 dead versions');
like(finding('dead_tuple_index_scan', 'subject'),
	qr/^index public\.orders_customer scanned by SELECT \* FROM orders WHERE customer = \$1 \(query id -?\d+\)$/,
	'the subject names the index and the statement');
like(finding('dead_tuple_index_scan', 'evidence'),
	qr/^3 executions from .* visited 20,000 dead index entries each \(\d+\.\d% of the entries read\) and used [0-9,]+ buffers per execution; /,
	'the evidence: dead entries and buffers per execution');
like(finding('dead_tuple_index_scan', 'evidence'),
	qr/vacuum cannot remove them while pid $blocker_pid \(application billing\) holds the xmin horizon/,
	'a holder younger than the threshold, running before the dead entries were counted, is named');
like(finding('dead_tuple_index_scan', 'advice'),
	qr/^End what holds the horizon \(pid $blocker_pid \(application billing\)\), then VACUUM public\.orders;/,
	'the advice names it too (there is no xmin_horizon_held finding to refer to)');

# With a shorter minimum age the holder is named, and linked.
my $short = "SET pg_contention.horizon_min_age = '1s';";
$node->poll_query_until('postgres',
	"SELECT now() - xact_start > interval '1 second' FROM pg_stat_activity WHERE pid = $blocker_pid")
  or die 'the holder is not a second old';
like(finding('xmin_horizon_held', 'severity || \' \' || subject', $short),
	qr/^warning pid $blocker_pid \(application billing, user \w+, database postgres, idle in transaction for \d+ s\)/,
	'xmin_horizon_held names the idle transaction');
like(finding('xmin_horizon_held', 'evidence', $short),
	qr/ dead tuples, [0-9,]+ of them in \d+ tables? due for autovacuum; it keeps the dead entries that lookups visit in 1 index \(dead_tuple_index_scan\)\. Paid by application 012_findings\.pl \(user \w+: SELECT \* FROM orders WHERE customer = (42|\$1) visited 60,000 dead index entries in 3 executions(; \d+ other statements? [0-9,]+ more entries)?\)\.$/,
	'it says what the holder keeps, and who pays');
like(finding('xmin_horizon_held', 'advice', $short), qr/pg_terminate_backend\($blocker_pid\)/,
	'advice for an idle transaction');
is(calls_in_findings('pg_contention_database_dead_tuples()', $short), '1',
	'with a holder that blocks cleanup, the dead tuples are read, once');
is(calls_in_findings('pg_contention_horizon_holders()', $short), '1',
	'the holders of the xmin horizon are read once, for the three rules that name them');
like(finding('dead_tuple_index_scan', 'evidence', $short),
	qr/vacuum cannot remove them while pid $blocker_pid \(application billing\) holds the xmin horizon/,
	'the index finding names the holder as the reason');
is(finding('dead_tuple_index_scan', "details -> 'holder' ->> 'pid'", $short), $blocker_pid,
	'details: the linked holder');
$blocker->query_safe('COMMIT');
$blocker->quit;
# A transaction that began after the dead entries were counted does not
# keep them: it is not named.
my $late = $node->background_psql('postgres');
$late->query_safe("SET application_name = 'late'; BEGIN; SELECT txid_current()");
like(finding('dead_tuple_index_scan', 'evidence', $short),
	qr/nothing holds the xmin horizon back: vacuum has not removed them yet \(public\.orders: [0-9,]+ dead tuples, last vacuumed /,
	'holder gone (a later transaction is not named): the index finding says vacuum has not run since');
$late->query_safe('COMMIT');
$late->quit;

# A prepared transaction is a holder of its own kind.
$node->safe_psql('postgres', "BEGIN; INSERT INTO side VALUES (1); PREPARE TRANSACTION 'tx42'");
$node->poll_query_until('postgres',
	"SELECT now() - prepared > interval '1 second' FROM pg_prepared_xacts")
  or die 'the prepared transaction is not a second old';
is(finding('xmin_horizon_held', 'subject', $short), "prepared transaction 'tx42' (database postgres, owner "
	. $node->safe_psql('postgres', 'SELECT current_user') . ')',
	'a prepared transaction is named by its gid');
like(finding('xmin_horizon_held', 'advice', $short), qr/COMMIT PREPARED 'tx42' or ROLLBACK PREPARED 'tx42'/,
	'advice for a prepared transaction');
$node->safe_psql('postgres', "ROLLBACK PREPARED 'tx42'");

# After VACUUM the same statement visits no dead entries: the finding
# judges the recent period, which still holds the earlier executions, so
# start a new window to see the lookups alone.
$node->safe_psql('postgres', 'VACUUM orders');
start_over();
$node->safe_psql('postgres', 'SELECT * FROM orders WHERE customer = 42') for 1 .. 3;
is(finding('dead_tuple_index_scan', 'count(*)'), '0', 'after VACUUM: no index finding');

# ---- Case 3: old_snapshot_threshold (PostgreSQL 13 to 16).
if ($version >= 170000)
{
	is(findings(), '', '17 and later: no old_snapshot_threshold finding (the setting is gone)');
}
else
{
	is(finding('old_snapshot_threshold_spinlock', 'count(*)'), '0', 'the setting off: no finding');
	$node->append_conf('postgresql.conf', "old_snapshot_threshold = '1min'");
	$node->restart;
	ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_contention_findings
		  WHERE problem = 'old_snapshot_threshold_spinlock' AND severity = 'info'"),
		'the setting on, a quiet server: info, as a configuration risk');
	is(finding('old_snapshot_threshold_spinlock', 'subject'), 'old_snapshot_threshold = 1min',
		'the subject is the setting');
	like(finding('old_snapshot_threshold_spinlock', 'advice'), qr/^Set old_snapshot_threshold = -1 and restart/,
		'the advice');
	SKIP:
	{
		my $missing = missing_test_module($node, 'pgc_spin_test');
		skip $missing, 2 if $missing;
		# Synthetic contention: three backends spinning on its spinlock; with the
		# occupancy threshold at its minimum, any lock word seen held is a
		# warning (which spin the sampler catches is statistical: see t/008 for
		# the figures).  The rule judges only over 400 probes or more (about
		# 10 s of sampling while anything runs): spin until the sampler has
		# made them since the reset, and a short spin first, which it must not
		# judge.
		$node->safe_psql('postgres', 'CREATE EXTENSION pgc_spin_test');
		$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
		$node->pgbench('-n -c 3 -j 3 -t 1', 0, [qr{processed}], [qr{^$}], 'spinning backends',
			{ 'spin_short' => "SELECT pgc_spin_test(1);\n" });
		history_settled();
		SKIP:
		{
			skip 'the sampler made 400 probes in a one-second spin', 1
			  if $node->safe_psql('postgres', 'SELECT total_probes >= 400 FROM pg_contention_old_snapshot') eq 't';
			like(finding('old_snapshot_threshold_spinlock', "severity || ' ' || evidence",
					'SET pg_contention.old_snapshot_held_warning = 0.0001;
					 SET pg_contention.old_snapshot_probe_warning = 1;'),
				qr/^info In the last \d+ s: its spinlock took .* \(too few probes to judge: it takes 400, /,
				'too few probes (a second of spinning), even at the lowest thresholds: info, and says why');
		}
		my $rounds = 0;
		while ($node->safe_psql('postgres', 'SELECT total_probes < 400 FROM pg_contention_old_snapshot') eq 't')
		{
			die 'the sampler made no 400 probes in 20 spins' if ++$rounds > 20;
			$node->pgbench('-n -c 3 -j 3 -t 1', 0, [qr{processed}], [qr{^$}], "spinning backends ($rounds)",
				{ "spin_$rounds" => "SELECT pgc_spin_test(3);\n" });
		}
		history_settled();
		my $held = $node->safe_psql('postgres', 'SELECT total_lock_held_pct > 0 FROM pg_contention_old_snapshot');
		SKIP:
		{
			skip 'the sampler saw no lock word held this time (t/008 measures it)', 1 if $held ne 't';
			like(finding('old_snapshot_threshold_spinlock', 'severity',
					'SET pg_contention.old_snapshot_held_warning = 0.0001;'),
				qr/^(warning|critical)$/, 'under measured pressure past the threshold: a warning or worse');
		}
	}
}

# ---- Privileges: another role sees the findings, not the statements' texts.
start_over();
my $other = $node->background_psql('postgres');
$other->query_safe("BEGIN;\n" . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));
like($node->safe_psql('postgres', "SET ROLE watcher; SELECT subject FROM pg_contention_findings WHERE problem = 'subxact_overflow'"),
	qr/^statement <insufficient privilege> in pid \d+ /,
	'another role sees the finding with the text masked');
$other->query_safe('ROLLBACK');
$other->quit;

# ---- The report and bad input.
like($node->safe_psql('postgres', 'SELECT pg_contention_report()'),
	qr/^pg_contention report at .*\n== Findings \(\d+\)\n.*== Top statements by buffers used.*== Top indexes by dead entries visited.*== Holders of the xmin horizon.*== The last 60 seconds/s,
	'the report has its sections');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_contention_findings('-1 minute')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/22023: window_length must be between 1 second and 7 days, not -00:01:00/, 'a bad window is refused with SQLSTATE 22023, naming the argument and its range');

done_testing();
