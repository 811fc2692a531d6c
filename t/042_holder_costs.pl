# A held xmin horizon is judged by what it costs, and advised by what
# holds it (issue 47, items 3 and 9).  The application is in shop; the
# incidents worker and check read from postgres.
#
# - A real pg_dump holding its snapshot (its output unread) in a quiet
#   cluster: xmin_horizon_held at info, "nothing measured pays for it",
#   no incident, check OK; its advice is a dump's, never a
#   statement_timeout.  A job queue then churns shop: warning and an
#   incident (from postgres on 15 and later; before, shop's counts are
#   read in shop, and postgres says it cannot read them).  The dump ends:
#   the finding is gone and the incident closes.
# - A logical slot nobody consumes, then catalog churn: info, then
#   warning with the catalogs' dead tuples and the WAL it retains; the
#   advice offers pg_replication_slot_advance.  Dropping it ends it.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client churn evaluated_twice);

my $node = PostgreSQL::Test::Cluster->new('holder_costs');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
wal_level = logical
max_replication_slots = 4
pg_contention.horizon_min_age = 1s
pg_contention.horizon_min_xid_age = 5
pg_contention.incident_interval = 1s
pg_contention.incident_close_after = 2s
});
$node->start;
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql($_, 'CREATE EXTENSION pg_contention') for qw(postgres shop);
$node->safe_psql('shop', q{
	CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL);
	INSERT INTO orders SELECT i, repeat('x', 100) FROM generate_series(1, 20000) AS i;
	VACUUM ANALYZE orders;
});
# Where a holder's cost in shop can be read: everywhere from 15 on.
my $reader = $version >= 150000 ? 'postgres' : 'shop';

sub holder_finding
{
	my ($db, $condition) = @_;
	return $node->safe_psql($db, qq{
		SELECT severity || ' | ' || evidence || ' | ' || advice FROM pg_contention_findings
		 WHERE problem = 'xmin_horizon_held' AND $condition});
}

# ---- a pg_dump, in a quiet cluster ----

# It dumps into a pipe nobody reads yet (a slow network, a full
# disk): once the pipe and the socket are full, it waits, its snapshot
# held.  (Its own application name, as in production: not the test's
# PGAPPNAME.)
my ($dump_out, $dump_err) = ('', '');
my $dump = do
{
	delete local $ENV{PGAPPNAME};
	IPC::Run::start([ 'pg_dump', '-d', $node->connstr('shop') ], '>', \$dump_out, '2>', \$dump_err);
};
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE application_name = 'pg_dump' AND wait_event = 'ClientWrite' AND backend_xmin IS NOT NULL}),
	'pg_dump holds its snapshot, waiting for its reader');
my $dump_pid = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_dump'");
my $is_dump = "details ->> 'pid' = '$dump_pid'";
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_contention_findings WHERE problem = 'xmin_horizon_held' AND $is_dump"),
	'the dump is an xmin_horizon_held finding');
my $quiet = holder_finding('postgres', $is_dump);
like($quiet, qr/^info \| /, 'age alone: info');
like($quiet, qr/Nothing measured pays for it yet \(no table of its databases is due for autovacuum, no index lookup reads dead entries\)/,
	'it says why');
like($quiet, qr/\| A dump keeps one snapshot until it ends\. Take it from a standby .* never under statement_timeout, which would fail the backup\. SELECT pg_cancel_backend\($dump_pid\) frees the horizon now, and loses this dump\.$/,
	'the advice is a dump\'s');
unlike($quiet, qr/belong .*under statement_timeout/, 'no statement_timeout advised for a dump');
evaluated_twice($node);
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_incidents'), '0', 'no incident for age alone');
my ($rc, $out) = run_client($node, 'check');
is($rc, 0, 'check: OK') or diag($out);

# A job queue churns shop meanwhile: 2,000 dead tuples due for autovacuum.
churn($node, 'shop', 2000);
ok($node->poll_query_until($reader, "SELECT severity = 'warning' FROM pg_contention_findings WHERE problem = 'xmin_horizon_held' AND $is_dump"),
	"what it keeps in shop: warning (read from $reader)");
like(holder_finding($reader, $is_dump),
	qr/the tables of (database shop|all 2 databases) hold [\d,]+ dead tuples, [\d,]+ of them in 1 table due for autovacuum( \(those of postgres cannot be read from here before PostgreSQL 15\))?\./,
	'the dead tuples it keeps, and where');
if ($version >= 150000)
{
	ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL"),
		'an incident opens');
}
else
{
	like(holder_finding('postgres', $is_dump),
		qr/^info \| .*(the dead tuples of database shop|those of shop) cannot be read from (database postgres|here) before PostgreSQL 15/,
		'before 15, postgres says it cannot read shop\'s counts');
}

# Its output is read: it ends, and nothing holds any more.
$dump->finish;
is($dump->result(0), 0, 'pg_dump succeeded') or diag($dump_err);
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_contention_findings WHERE problem = 'xmin_horizon_held'"),
	'the dump ended: no finding');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_contention_incidents WHERE closed IS NULL'),
	'no incident stays open');

# ---- a logical slot nobody consumes ----

$node->safe_psql('shop', "SELECT pg_create_logical_replication_slot('cdc', 'test_decoding')");
# Its catalog_xmin ages past horizon_min_xid_age (5 transactions).
$node->safe_psql('shop', join('', map { "SELECT txid_current();\n" } 1 .. 6));
my $is_slot = "details ->> 'holder' = 'cdc'";
ok($node->poll_query_until($reader, "SELECT count(*) = 1 FROM pg_contention_findings WHERE problem = 'xmin_horizon_held' AND $is_slot"),
	'the slot is an xmin_horizon_held finding');
like(holder_finding($reader, $is_slot), qr/^info \| Its catalog_xmin is /, 'no catalog churn yet: info');

# Catalog churn: tables made and dropped (as temporary tables are).
$node->safe_psql('shop', q{
DO $$
BEGIN
	FOR i IN 1..100 LOOP
		EXECUTE 'CREATE TABLE scratch (a int, b int, c int, d int, e int, f int, g int, h int, i int, j int)';
		EXECUTE 'DROP TABLE scratch';
	END LOOP;
END $$});
ok($node->poll_query_until($reader, "SELECT severity = 'warning' FROM pg_contention_findings WHERE problem = 'xmin_horizon_held' AND $is_slot"),
	'catalog churn behind it: warning');
my $slot = holder_finding($reader, $is_slot);
like($slot, qr/the system catalogs of (database shop|all 2 databases) hold [\d,]+ dead tuples, [\d,]+ of them in catalogs due for autovacuum/,
	'the catalogs\' dead tuples it keeps');
like($slot, qr/; it retains [\d.]+ [kMG]?B of WAL/, 'the WAL it retains');
like($slot, qr/SELECT pg_drop_replication_slot\('cdc'\).* skip them: SELECT pg_replication_slot_advance\('cdc', pg_current_wal_lsn\(\)\)\.$/,
	'the advice: drop it, or advance it');
$node->safe_psql('shop', "SELECT pg_drop_replication_slot('cdc')");
ok($node->poll_query_until($reader, "SELECT count(*) = 0 FROM pg_contention_findings WHERE problem = 'xmin_horizon_held'"),
	'dropped: no finding');

$node->stop;
done_testing();
