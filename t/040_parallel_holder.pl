# A parallel query is one holder of the xmin horizon, its leader: its
# workers' snapshots are the leader's, and cancelling the leader ends them.
# A long parallel count in the application's database (shop) runs with two
# workers; pg_contention_horizon lists the leader alone, with the oldest of
# their xmins, and the one xmin_horizon_held finding names the leader's pid
# in its details and its advice.  (Before, each worker was a holder and a
# finding of its own, with pg_cancel_backend advised on a worker's pid.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('parallel');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.horizon_min_age = 1s
max_worker_processes = 16
max_parallel_workers = 8
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE big (id int);
	INSERT INTO big SELECT generate_series(1, 15000);
	ANALYZE big;
});

# The count sleeps a little per row, long enough to be read while it runs.
my $analyst = $node->background_psql('shop');
my $leader = $analyst->query_safe('SELECT pg_backend_pid()');
$analyst->query_safe(q{
	SET max_parallel_workers_per_gather = 2;
	SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0;
	SET min_parallel_table_scan_size = 0;
	SET parallel_leader_participation = off});
$analyst->query_until(qr/started/,
	"\\echo started\nSELECT count(*) AS parallel_report FROM big WHERE pg_sleep(0.0004) IS NOT NULL;\n");

ok($node->poll_query_until('shop',
	"SELECT count(*) = 2 FROM pg_stat_activity WHERE leader_pid = $leader"),
	'the query runs with two parallel workers');
my $workers = $node->safe_psql('shop',
	"SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE leader_pid = $leader");

# Held for horizon_min_age: the leader blocks cleanup.
ok($node->poll_query_until('shop',
	"SELECT blocks_cleanup FROM pg_contention_horizon WHERE pid = $leader"),
	'the leader holds the horizon past horizon_min_age');
is($node->safe_psql('shop',
	"SELECT count(*) FROM pg_contention_horizon WHERE pid IN ($workers)"),
	'0', 'its workers are no holders of their own');
is($node->safe_psql('shop', q{
	SELECT count(*) FROM pg_contention_horizon
	 WHERE kind = 'backend' AND query LIKE '%parallel_report%'}),
	'1', 'the parallel query is one holder');

my $findings = $node->safe_psql('shop', q{
	SELECT string_agg((details ->> 'pid') || ' ' || advice, E'\n')
	  FROM pg_contention_findings WHERE problem = 'xmin_horizon_held'});
my @lines = split /\n/, $findings;
is(scalar(@lines), 1, 'one xmin_horizon_held finding') or diag($findings);
like($lines[0], qr/^$leader .*pg_cancel_backend\($leader\)/,
	'it names the leader, and advises cancelling the leader');
my $worker_pids = join('|', split(/,/, $workers));
unlike($findings, qr/\b(?:$worker_pids)\b/, 'no worker pid in it');

# The count ends by itself: a cancel would end psql (ON_ERROR_STOP) before
# its \q could be written.
$analyst->quit;
done_testing();
