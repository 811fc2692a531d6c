# The standby as a place to diagnose the production subtransaction case:
# on the primary one long transaction with an XID stays open while a job
# runs 80-savepoint transactions; on the hot standby the readers' every
# snapshot has the long transaction's XID for xmin, and the standby takes
# it as suboverflowed while any later transaction has overflowed, even
# one that has ended.  The standby's findings name who pays there (its
# readers), the primary's transaction that keeps its snapshots
# suboverflowed (by XID, with the query that finds it on the primary),
# never blame the readers as holders of the horizon, and describe now:
# once the long transaction and the job end, the lookups stop and the
# finding falls to info, and the incident closes saying what ended.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(savepoint_script);

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '3s'
pg_contention.subtrans_lookups_warning = 10
pg_contention.incident_interval = '1s'
pg_contention.incident_close_after = '2s'
pg_contention.incident_database = 'shop'
autovacuum = off
});
$primary->start;
$primary->safe_psql('postgres', 'CREATE DATABASE shop');
$primary->safe_psql('shop', 'CREATE EXTENSION pg_contention;
	CREATE TABLE contend (id integer PRIMARY KEY, val integer NOT NULL);
	INSERT INTO contend SELECT g, 0 FROM generate_series(1, 10200) AS g;
	CREATE TABLE marker (id integer)');
$primary->backup('b');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "hot_standby_feedback = on\nwal_receiver_status_interval = 1\n");
$standby->start;
$primary->wait_for_catchup($standby);

# The long transaction: it wrote, and stays open.
my $long = $primary->background_psql('shop');
my $long_pid = $long->query_safe('SELECT pg_backend_pid()');
$long->query_safe('BEGIN; INSERT INTO marker VALUES (1);');
my $long_xid = $primary->safe_psql('shop', "SELECT backend_xid FROM pg_stat_activity WHERE pid = $long_pid");
like($long_xid, qr/^\d+$/, 'the long transaction has an XID');

# The job on the primary, the readers on the standby.
my $dir = PostgreSQL::Test::Utils::tempdir();
PostgreSQL::Test::Utils::append_to_file("$dir/job.sql", savepoint_script(80));
PostgreSQL::Test::Utils::append_to_file("$dir/read.sql",
	"\\set a random(1, 10000)\nSELECT count(*) FROM contend WHERE id BETWEEN :a AND :a + 100;\n");
my @out = ('', '', '', '');
my $job = IPC::Run::start([ 'pgbench', '-n', '-c', '1', '-T', '900', '-f', "$dir/job.sql",
	'-h', $primary->host, '-p', $primary->port, 'shop' ], '>', \$out[0], '2>', \$out[1]);
my $readers = IPC::Run::start([ 'pgbench', '-n', '-c', '2', '-T', '900', '-f', "$dir/read.sql",
	'-h', $standby->host, '-p', $standby->port, 'shop' ], '>', \$out[2], '2>', \$out[3]);

my $overflow = q{SELECT severity, evidence, advice, details ->> 'primary_xid'
	FROM pg_contention_findings WHERE problem = 'subxact_overflow'};
ok($standby->poll_query_until('shop',
	"SELECT count(*) = 1 FROM ($overflow) AS f WHERE f.severity <> 'info'"),
	'standby: the overflow costs its readers (warning or critical)');
my ($severity, $evidence, $advice, $primary_xid) = split /\|/, $standby->safe_psql('shop', $overflow);
note("standby: $severity | $evidence | $advice");
is($primary_xid, $long_xid, 'standby: the finding names the primary\'s oldest transaction, the long one');
like($evidence, qr/Every snapshot here has for xmin the primary's transaction $long_xid( \(seen here for [^)]+\))?, the oldest running there: while it runs, an overflow of any transaction since, even one that has ended, leaves every snapshot on this standby suboverflowed\./,
	'standby: the evidence says why every snapshot here is suboverflowed');
like($evidence, qr/ Paid by .*SELECT count\(\*\) FROM contend/, 'standby: who pays here, the readers\' statement');
like($advice, qr/^On the primary: end its oldest transaction, $long_xid \(SELECT pid, usename, application_name, state, xact_start, query FROM pg_stat_activity WHERE backend_xid = '$long_xid'\)/,
	'standby: the advice gives the query that finds it on the primary');
my $found = $primary->safe_psql('shop', "SELECT count(*) FROM pg_stat_activity WHERE backend_xid = '$long_xid'");
is($found, '1', 'the advice\'s query finds the long transaction on the primary');
like($standby->safe_psql('shop', q{SELECT string_agg(query, ' | ') FROM pg_contention_findings_victims(NULL::interval)}),
	qr/SELECT count\(\*\) FROM contend/, 'standby: who pays lists the readers');

# The readers hold nothing by themselves: they follow the primary's
# transaction, the one holder, whose advice is on the primary.
my $all = 'SET pg_contention.horizon_min_age = 0; SET pg_contention.horizon_min_xid_age = 0;';
is($standby->safe_psql('shop', qq{$all SELECT count(*) FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'kind' = 'backend'}),
	'0', 'standby: no reader is named as a holder of the horizon');
like($standby->safe_psql('shop', qq{$all SELECT subject || ' | ' || advice FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'kind' = 'primary transaction'}),
	qr/^the primary's transaction $long_xid \(the oldest running there as this standby replays: every snapshot here has it for xmin\) \| Find it on the primary: .*backend_xid = '$long_xid'.* Cancelling queries on this standby frees nothing\.$/,
	'standby: the primary\'s transaction is the holder, found on the primary');
ok($standby->poll_query_until('shop',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'subxact_overflow' AND closed IS NULL"),
	'standby: an incident opened');

# The fix: the job ends, then the long transaction.  The readers go on;
# no snapshot is suboverflowed, the lookups stop, and the finding says so.
# (The job first: were the long transaction to end first, the job's
# running transaction, overflowed, would become the primary's oldest,
# and the cost last seen would be its, rightly named in the resolution.)
$job->kill_kill;
ok($primary->poll_query_until('shop',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'"),
	'the job\'s session has ended on the primary');
$long->query_safe('COMMIT');
$long->quit;
ok($standby->poll_query_until('shop',
	"SELECT count(*) = 1 FROM ($overflow) AS f WHERE f.severity = 'info'
	    AND f.evidence ~ '^Stopped at [0-9:]+, [^:]+: (no transaction runs on the primary now, so new snapshots here are not suboverflowed|no reader on this standby has looked up pg_subtrans or waited on it since)\. '"),
	'fixed: the standby\'s finding falls to info once its readers stop paying');
ok($standby->poll_query_until('shop',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'subxact_overflow' AND closed IS NOT NULL
	    AND resolution = 'the primary''s transaction $long_xid, the oldest running there when the cost was last seen and the xmin of every snapshot on this standby, ended'"),
	'fixed: the incident closed, naming what ended')
  or diag($standby->safe_psql('shop', q{SELECT closed, resolution, pg_contention_incident_resolution('subxact_overflow', jsonb_build_array(details -> 'finding'), closed, '[]') FROM pg_contention_incidents WHERE problem = 'subxact_overflow'}));

$readers->kill_kill;
done_testing();
