# One role cannot crowd out another's incident or blind the incidents worker
# (issue 45, item 4).  mallory, a plain role, floods the incidents worker
# in a store of 6 incidents ((a), (b), (d)); alice's incidents still open
# and close, and no evaluation fails; (c) an incident is one cause from the
# hold to the fix.
#
# (a) The issue's flood: 105 temporary indexes, each scanned over its own
#     invisible entries inside one open transaction: one finding and one
#     incident for the holder behind them (listing the 105 indexes), not
#     105; opened for the first 5, it counts the 100 that come after.
# (b) 8 tables of hers, each scanned once over dead entries nothing holds:
#     8 incidents of hers (an incident no holder explains counts for the
#     index's owner, issue 58) for 6 slots, 2 refused (counted, logged
#     once); alice's own table's dead entries then take the slot of one of
#     them (the role that holds the most gives way to one that holds
#     fewer), which is counted and logged, and so does alice's held
#     horizon; alice's closes after her COMMIT.
# (e) What a plain role may set decides nothing that is recorded: alice
#     may not set pg_contention.dead_visits_warning, and with every setting
#     she may set at its maximum, her lookups over dead entries are noted
#     and found as before (issue 58, item 4).
# (f) mallory's flood of overflow events (50, for a ring of 20) between
#     two evaluations does not hide alice's overflow from the findings.
# (g) A cluster-wide incident is never refused for room: six roles' index
#     incidents, one each, fill the store, so that no role's incident may
#     take a slot (none holds more than one over another); pg_subtrans
#     contention, one incident for the cluster, still opens in one of
#     their slots (counted and logged).
# (c) The dead entries behind a holder, then the holder gone and the
#     entries still visited, then VACUUM: one incident from the hold to
#     the fix.
# (d) 1,000 temporary indexes scanned over dead entries, their session
#     left open: one incident of mallory's temporary indexes; alice's
#     incident opens and closes meanwhile; every evaluation ends (none is
#     logged as failed: the work of one is bounded by the causes, and at
#     most 8 incidents are frozen at one, not by the number of findings).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use File::Basename;
use IPC::Run;
use PgContention::Test qw(evaluated_twice churn savepoint_script);

my $node = PostgreSQL::Test::Cluster->new('crowding');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.incident_interval = 1s
pg_contention.incident_close_after = 2s
pg_contention.incident_database = 'shop'
pg_contention.max_incidents = 6
pg_contention.horizon_min_age = 1s
pg_contention.dead_visits_warning = 10
pg_contention.max_events = 20
pg_contention.subtrans_lookups_warning = 1
autovacuum = off
});
$node->start;
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE DATABASE shop;
});
$node->safe_psql('shop', 'CREATE EXTENSION pg_contention');
$node->safe_psql('shop', 'GRANT CREATE ON SCHEMA public TO mallory, alice') if $version >= 150000;

sub incidents
{
	my ($where) = @_;
	return $node->safe_psql('shop', "SELECT count(*) FROM pg_contention_incidents WHERE $where");
}

# mallory's session: temporary tables t1..tN (k, v) with an index on k,
# created and committed in steps.
sub temp_tables
{
	my ($session, $n) = @_;
	$session->query_safe(qq{
		DO \$\$
		BEGIN
			FOR i IN 1..$n LOOP
				EXECUTE format('CREATE TEMP TABLE t%s (k integer, v integer)', i);
				EXECUTE format('CREATE INDEX ON t%s (k)', i);
				IF i % 50 = 0 THEN COMMIT; END IF;
			END LOOP;
		END
		\$\$});
	return;
}

# Each of the tables (from FROM, else 1, to N) scanned once by its index,
# for k = 1.
sub scan_each
{
	my ($session, $prefix, $n, $from) = @_;
	$session->query_safe('SET enable_seqscan = off; SET enable_bitmapscan = off; '
		  . join(' ', map { "SELECT sum(v) FROM $prefix$_ WHERE k = 1;" } ($from // 1) .. $n));
	return;
}

# alice holds the horizon: her incident opens, then her COMMIT closes it.
sub alice_opens_and_closes
{
	my ($what) = @_;
	my $alice = $node->background_psql('shop', extra_params => [ '-U', 'alice' ]);
	my $pid = $alice->query_safe('SELECT pg_backend_pid()');
	$pid =~ s/\s+//g;
	$alice->query_safe('BEGIN; SELECT txid_current()');
	churn($node, 'shop');		# what her hold costs
	ok($node->poll_query_until('shop', qq{
		SELECT count(*) = 1 FROM pg_contention_incidents
		 WHERE problem = 'xmin_horizon_held' AND details ->> 'key' = 'backend $pid' AND closed IS NULL}),
		"$what: alice's incident opened");
	$alice->query_safe('COMMIT');
	ok($node->poll_query_until('shop', qq{
		SELECT resolution = 'the holder of the xmin horizon, pid $pid, ended its transaction'
		  FROM pg_contention_incidents WHERE details ->> 'key' = 'backend $pid'}),
		"$what: and closed after her COMMIT, with what ended it");
	$alice->quit;
	return;
}

# A table of alice's, public.NAME (k, v) with an index NAME_k on k, and
# 11 dead rows of k = 1 that nothing holds.
sub alice_dead_table
{
	my ($name) = @_;
	$node->safe_psql('shop', qq{
		CREATE TABLE public.$name (k integer, v integer);
		CREATE INDEX ${name}_k ON public.$name (k);
		INSERT INTO public.$name SELECT 1, 1 FROM generate_series(1, 11);
		DELETE FROM public.$name;}, extra_params => [ '-U', 'alice' ]);
	return;
}

# ---- (a) 105 temporary indexes, each over its own invisible entries.
my $flood = $node->background_psql('shop', extra_params => [ '-U', 'mallory' ]);
my $flood_pid = $flood->query_safe('SELECT pg_backend_pid()');
$flood_pid =~ s/\s+//g;
temp_tables($flood, 105);
$flood->query_safe(q{BEGIN;
	DO $$ BEGIN FOR i IN 1..105 LOOP
		EXECUTE format('INSERT INTO t%s SELECT 1, 1 FROM generate_series(1, 11)', i);
		EXECUTE format('DELETE FROM t%s', i);
	END LOOP; END $$});
# The first 5 indexes: the incident opens for them; the other 100 spread
# its cause, and it counts them as they come.
scan_each($flood, 't', 5);
ok($node->poll_query_until('shop', qq{
	SELECT count(*) = 1 FROM pg_contention_incidents
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'key' = 'held by backend $flood_pid'}),
	'(a) an incident for the holder behind the dead entries');
scan_each($flood, 't', 105, 6);
ok($node->poll_query_until('shop', q{
	SELECT subject LIKE '% (and 104 more indexes)' AND (details -> 'finding' ->> 'touched_count')::integer = 105
	  FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan'}),
	'(a) as the dead entries spread to 100 more indexes, the incident counts all 105')
  or diag($node->safe_psql('shop', q{SELECT subject, details -> 'finding' ->> 'touched_count' FROM pg_contention_incidents}));
is($node->safe_psql('shop', qq{
	SELECT count(*) || ' ' || min(details ->> 'touched_count') FROM pg_contention_findings
	 WHERE problem = 'dead_tuple_index_scan' AND details -> 'holder' ->> 'holder' = '$flood_pid'}),
	'1 105', '(a) one finding for the holder, of 105 indexes');
is($node->safe_psql('shop', qq{
	SELECT count(*) FROM pg_contention_index_findings
	 WHERE problem = 'dead_tuple_index_scan' AND details -> 'holder' ->> 'holder' = '$flood_pid'}),
	'105', '(a) 105 rows in pg_contention_index_findings, one per index');
evaluated_twice($node);
is(incidents("problem = 'dead_tuple_index_scan'"), '1', '(a) one incident for them: not one per index');
is($node->safe_psql('shop', q{
	SELECT (n = 1 OR subject LIKE '% (and ' || (n - 1) || ' more ind%')
		   AND jsonb_array_length(details -> 'finding' -> 'touched') = least(n, 10)
	  FROM (SELECT *, (details -> 'finding' ->> 'touched_count')::integer AS n
			  FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan') AS i}),
	't', '(a) its subject counts the indexes, its details list the first 10');
$flood->query_safe('ROLLBACK');
$flood->quit;
ok($node->poll_query_until('shop', 'SELECT count(*) = 0 FROM pg_contention_incidents WHERE closed IS NULL'),
	'(a) its incidents closed when the session ended');

# ---- (b) 8 incidents of no role for 6 slots; alice's takes a slot.
$node->safe_psql('shop', 'SELECT pg_contention_reset()');
my $offset = -s $node->logfile;
$node->safe_psql('shop', q{
	DO $$ BEGIN FOR i IN 1..8 LOOP
		EXECUTE format('CREATE TABLE public.m%s (k integer, v integer)', i);
		EXECUTE format('CREATE INDEX ON public.m%s (k)', i);
		EXECUTE format('INSERT INTO public.m%s SELECT 1, 1 FROM generate_series(1, 11)', i);
		EXECUTE format('DELETE FROM public.m%s', i);
	END LOOP; END $$}, extra_params => [ '-U', 'mallory' ]);
my $mallory = $node->background_psql('shop', extra_params => [ '-U', 'mallory' ]);
scan_each($mallory, 'public.m', 8);
ok($node->poll_query_until('shop', q{
	SELECT incidents = 6 AND incidents_not_opened = 2 FROM pg_contention_info}),
	'(b) the store full of 6, 2 refused and counted');
# One line per evaluation for what it refused ("2 incidents not opened",
# or one line each if they came at two evaluations).
my $refusals = 0;
for (split /\n/, slurp_file($node->logfile, $offset))
{
	$refusals += $1 // 1
	  if /LOG:  pg_contention: (?:(\d+) incidents|incident) not opened: all 6 incident slots hold open incidents[,;] .*of role mallory/;
}
is($refusals, 2, '(b) the refusals are logged, once each');
is($node->safe_psql('shop', 'SELECT incident_open_evictions FROM pg_contention_info'), '0', '(b) nothing evicted yet');
# alice's own table, its dead entries held by nothing either.
alice_dead_table('a1');
my $alice_index = $node->safe_psql('shop', "SELECT 'public.a1_k'::regclass::oid");
my $alice_oid = $node->safe_psql('shop', "SELECT 'alice'::regrole::oid");
$node->safe_psql('shop', 'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT sum(v) FROM public.a1 WHERE k = 1',
	extra_params => [ '-U', 'alice' ]);
ok($node->poll_query_until('shop', qq{
	SELECT count(*) = 1 FROM pg_contention_incidents
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'key' LIKE '% index $alice_index' AND closed IS NULL}),
	'(b) alice\'s index, in a store full of mallory\'s: its incident opens');
is($node->safe_psql('shop', 'SELECT incident_open_evictions FROM pg_contention_info'), '1',
	'(b) one of mallory\'s 6 gave its slot to alice\'s, counted');
ok($node->log_contains(qr/LOG:  pg_contention: incident \d+ evicted while open, for an incident of a role that held fewer: warning dead_tuple_index_scan, of role mallory, which held 6 of the 6 incident slots/, $offset),
	'(b) and logged');
alice_opens_and_closes('(b)');
is($node->safe_psql('shop', 'SELECT incident_open_evictions FROM pg_contention_info'), '2',
	'(b) her held horizon took another of mallory\'s');
$mallory->quit;

# ---- (e) The settings a plain role may change decide nothing recorded.
# The settings every backend reads as it records (their variables in
# src/capture/ and src/stores/), from the source, not a hand list; but
# findings_latest.c, which reads the thresholds only to compare a reader's
# with the worker's (the worker records its own values).
my $top = dirname(__FILE__) . '/..';
$top = $ENV{PWD} unless -d "$top/src/capture";
my %variable_of;
my $settings_c = slurp_file("$top/src/settings.c");
while ($settings_c =~ /Define\w+Variable\("(pg_contention\.\w+)",.*?&(\w+),/gs)
{
	$variable_of{$1} = $2;
}
my $recording_code = join('', map { slurp_file($_) }
	  glob("$top/src/capture/*.c"), grep { !/findings_latest\.c$/ } glob("$top/src/stores/*.c"));
my @recording = sort grep { $recording_code =~ /\b$variable_of{$_}\b/ } keys %variable_of;
ok((grep { $_ eq 'pg_contention.dead_visits_warning' } @recording) && @recording >= 5,
	'(e) the settings the recording reads, from the source: ' . join(', ', @recording));
is($node->safe_psql('shop', "SELECT string_agg(name, ', ' ORDER BY name) FROM pg_settings
	 WHERE context = 'user' AND name IN ('" . join("', '", @recording) . "')"), '',
	'(e) none of them is one a plain role may set');
my ($ret, $out, $err) = $node->psql('shop', 'SET pg_contention.dead_visits_warning = 1000000',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied to set parameter "pg_contention.dead_visits_warning"/,
	'(e) alice may not raise dead_visits_warning to hide her lookups');
my $all_max = $node->safe_psql('shop', q{
	SELECT string_agg(format('SET %s = %s;', name, quote_literal(max_val)), ' ' ORDER BY name) FROM pg_settings
	 WHERE name LIKE 'pg\_contention.%' AND context = 'user' AND max_val IS NOT NULL});
ok($all_max =~ /horizon_min_age/, '(e) the settings alice may set, each at its maximum');
alice_dead_table('a2');
my $a2_index = $node->safe_psql('shop', "SELECT 'public.a2_k'::regclass::oid");
$node->safe_psql('shop', "$all_max SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT sum(v) FROM public.a2 WHERE k = 1",
	extra_params => [ '-U', 'alice' ]);
is($node->safe_psql('shop', "SELECT owner = $alice_oid FROM pg_contention_index_names() WHERE indexrelid = $a2_index"),
	't', '(e) her lookup over 11 dead entries was noted as the server\'s threshold says, with its owner');
ok($node->poll_query_until('shop', qq{
	SELECT count(*) = 1 FROM pg_contention_findings_kept() WHERE problem = 'dead_tuple_index_scan'
	   AND details ->> 'indexrelid' = '$a2_index' AND severity = 'warning'}),
	'(e) and the worker found it at warning');

# ---- (f) A flood of overflow events does not hide another role's.
# (Each its own statement: one overflowing 70 times into its table.)
$node->safe_psql('shop', 'CREATE TABLE public.f (i integer); CREATE TABLE public.g (i integer);
	GRANT INSERT ON public.f, public.g TO PUBLIC');
my $overflow = q{DO $$ BEGIN FOR i IN 1..70 LOOP
	BEGIN INSERT INTO public.TABLE VALUES (i); EXCEPTION WHEN others THEN NULL; END;
	END LOOP; END $$;};
$node->safe_psql('shop', $overflow =~ s/TABLE/g/r, extra_params => [ '-U', 'alice' ]);
my $flood_sql = $overflow =~ s/TABLE/f/r;
$node->safe_psql('shop', $flood_sql x 50, extra_params => [ '-U', 'mallory' ]);
is($node->safe_psql('shop', 'SELECT events_written FROM pg_contention_info'), '51',
	'(f) 51 overflow events for a ring of 20');
is($node->safe_psql('shop', "SELECT count(*) FROM pg_contention_overflow_events WHERE usename = 'alice'"), '1',
	'(f) alice\'s is still read, kept as her latest');
is($node->safe_psql('shop', qq{
	SELECT count(*) FROM pg_contention_findings
	 WHERE problem = 'subxact_overflow' AND details ->> 'user_oid' = '$alice_oid'}), '1',
	'(f) and her overflow is found');

# ---- (c) One incident from the hold to the fix: the dead entries' key
# follows their cause ("held by" the holder, then the index once it ended)
# and the incident goes on until VACUUM removes them.
$node->safe_psql('shop', 'SELECT pg_contention_reset()');
$node->safe_psql('shop', q{
	CREATE TABLE public.orders (id integer PRIMARY KEY, customer integer NOT NULL);
	CREATE INDEX orders_customer ON public.orders (customer);
	INSERT INTO public.orders SELECT i, i % 100 FROM generate_series(1, 5000) AS i;
	GRANT ALL ON public.orders TO alice;
});
$node->safe_psql('shop', 'VACUUM (ANALYZE) public.orders');
my $billing = $node->background_psql('shop', extra_params => [ '-U', 'alice' ]);
my $billing_pid = $billing->query_safe('SELECT pg_backend_pid()');
$billing_pid =~ s/\s+//g;
$billing->query_safe('BEGIN; SELECT txid_current()');
$node->safe_psql('shop', 'DELETE FROM public.orders WHERE customer = 42');
my $lookups = 'SET enable_seqscan = off; SET enable_bitmapscan = off; '
  . 'SELECT sum(id) FROM public.orders WHERE customer = 42;' x 3;
$node->safe_psql('shop', $lookups);
ok($node->poll_query_until('shop', qq{
	SELECT count(*) = 1 FROM pg_contention_incidents
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'key' = 'held by backend $billing_pid'}),
	'(c) the lookups behind the held horizon: an incident keyed by its holder');
# The incident of orders_customer's dead entries, followed by its id.
my $orders_incident = $node->safe_psql('shop', qq{
	SELECT id FROM pg_contention_incidents
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'key' = 'held by backend $billing_pid'});
$billing->query_safe('COMMIT');
$billing->quit;
# The holder ended; the entries stay dead until vacuum, and every lookup
# still visits them (a bitmap scan does not mark them).
$node->safe_psql('shop', 'SET enable_seqscan = off; SET enable_indexscan = off; '
	  . 'SELECT sum(id) FROM public.orders WHERE customer = 42;' x 3);
my $unheld = $node->safe_psql('shop', 'SELECT clock_timestamp()');
ok($node->poll_query_until('shop', qq{
	SELECT closed IS NULL AND last_seen > '$unheld' FROM pg_contention_incidents
	 WHERE id = $orders_incident}),
	'(c) the holder gone, the same incident goes on while the lookups still visit the dead entries');
$node->safe_psql('shop', 'VACUUM public.orders');
$node->safe_psql('shop', $lookups);
ok($node->poll_query_until('shop', qq{
	SELECT resolution LIKE 'vacuum removed the dead entries%' FROM pg_contention_incidents
	 WHERE id = $orders_incident}),
	'(c) it closes after VACUUM, with what ended it');
is(incidents("problem = 'dead_tuple_index_scan' AND details::text LIKE '%orders_customer%'"), '1',
	'(c) one incident from the hold to the fix')
  or diag($node->safe_psql('shop', 'SELECT id, problem, opened, closed, resolution, details ->> \'key\'
									  FROM pg_contention_incidents ORDER BY id'));

# ---- (g) A cluster-wide incident in a store full of six roles' one each.
$node->safe_psql('shop', 'SELECT pg_contention_reset()');
$offset = -s $node->logfile;
for my $i (1 .. 6)
{
	$node->safe_psql('shop', "CREATE ROLE r$i LOGIN");
	$node->safe_psql('shop', "GRANT CREATE ON SCHEMA public TO r$i") if $version >= 150000;
	$node->safe_psql('shop', qq{
		CREATE TABLE public.r$i (k integer, v integer);
		CREATE INDEX ON public.r$i (k);
		INSERT INTO public.r$i SELECT 1, 1 FROM generate_series(1, 11);
		DELETE FROM public.r$i;
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT sum(v) FROM public.r$i WHERE k = 1;}, extra_params => [ '-U', "r$i" ]);
}
ok($node->poll_query_until('shop', q{
	SELECT count(DISTINCT details -> 'finding' ->> 'owner_oid') = 6 AND count(*) = 6 FROM pg_contention_incidents
	 WHERE closed IS NULL AND problem = 'dead_tuple_index_scan'}),
	'(g) six roles\' index incidents, one each, fill the store')
  or diag($node->safe_psql('shop', 'SELECT id, problem, closed, details -> \'finding\' ->> \'owner_oid\' FROM pg_contention_incidents'));
my $evicted = $node->safe_psql('shop', 'SELECT incident_open_evictions FROM pg_contention_info');
# An overflow beside readers, alice's: the cluster's pg_subtrans lookups.
$node->safe_psql('shop', q{
	CREATE UNLOGGED TABLE public.contend (id integer PRIMARY KEY, val integer NOT NULL);
	INSERT INTO public.contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	GRANT ALL ON public.contend TO alice;});
my $script = $node->basedir . '/savepoints.sql';
open my $fh, '>', $script or die "$script: $!";
print $fh savepoint_script(70);
close $fh;
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start([ 'pgbench', '-n', '-c', '2', '-j', '2', '-R', '40', '-T', '600', '-U', 'alice',
		'-h', $node->host, '-p', $node->port, '-f', $script, 'shop' ], '>', \$bench_out, '2>', \$bench_err);
ok($node->poll_query_until('shop', q{
	SELECT count(*) = 1 FROM pg_contention_incidents
	 WHERE problem = 'subtrans_slru_contention' AND closed IS NULL}),
	'(g) the cluster\'s pg_subtrans contention opens an incident all the same')
  or diag($node->safe_psql('shop', 'SELECT problem, severity, subject FROM pg_contention_findings'));
$bench->kill_kill;
cmp_ok($node->safe_psql('shop', 'SELECT incident_open_evictions FROM pg_contention_info'), '>', $evicted,
	'(g) in the slot of one of the six, counted');
ok($node->log_contains(qr/LOG:  pg_contention: incident \d+ evicted while open, for a cluster-wide incident: warning dead_tuple_index_scan, of role r\d, which held 1 of the 6 incident slots/, $offset),
	'(g) and logged');

# ---- (d) 1,000 temporary indexes, their session left open (last: the
# server stops at once after it, rather than wait for that session to drop
# its 1,000 tables).
$node->safe_psql('shop', 'SELECT pg_contention_reset()');
my $many = $node->background_psql('shop', extra_params => [ '-U', 'mallory' ]);
temp_tables($many, 1000);
$many->query_safe(q{
	DO $$ BEGIN FOR i IN 1..1000 LOOP
		EXECUTE format('INSERT INTO t%s SELECT 1, 1 FROM generate_series(1, 11)', i);
		EXECUTE format('DELETE FROM t%s', i);
		IF i % 50 = 0 THEN COMMIT; END IF;
	END LOOP; END $$});
scan_each($many, 't', 1000);
# The worker may have opened the incident while the scans went on: it
# counts the indexes that came later too.
is($node->safe_psql('shop', q{
	SELECT count(*) || ' ' || min(details ->> 'touched_count') FROM pg_contention_findings
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'temporary' = 'true' AND severity = 'warning'}),
	'1 1000', '(d) one finding of mallory\'s 1,000 temporary indexes');
is($node->safe_psql('shop', q{
	SELECT count(*) FROM pg_contention_index_findings
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'temporary' = 'true' AND severity = 'warning'}),
	'1000', '(d) and 1,000 rows in pg_contention_index_findings, one per temporary index');
ok($node->poll_query_until('shop', q{
	SELECT count(*) = 1 FROM pg_contention_incidents
	 WHERE problem = 'dead_tuple_index_scan' AND details ->> 'key' LIKE 'database % temporary indexes of user %'
	   AND (details -> 'finding' ->> 'touched_count')::integer = 1000
	   AND jsonb_array_length(details -> 'finding' -> 'touched') = 10}),
	'(d) one incident of mallory\'s temporary indexes, listing them')
  or diag($node->safe_psql('shop', q{SELECT id, details ->> 'key', subject, details -> 'finding' ->> 'touched_count' FROM pg_contention_incidents}));
is(incidents("problem = 'dead_tuple_index_scan' AND details -> 'finding' ->> 'temporary' = 'true'
	AND details ->> 'key' LIKE 'database % index %'"), '0', '(d) none for a temporary index alone');
alice_opens_and_closes('(d)');
ok(!$node->log_contains(qr/pg_contention incidents: the evaluation failed/),
	'no evaluation failed (none ran past its timeout)');

$node->stop('immediate');
done_testing();
