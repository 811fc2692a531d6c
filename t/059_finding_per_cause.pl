# One finding per cause (issue 62, item 1): one idle transaction in the
# application's database keeps the dead entries of 30 indexes, each looked
# up.  pg_contention_findings has one dead_tuple_index_scan finding, the
# costliest index's, naming the holder, how many indexes (as the incident
# does: "and 29 more indexes"), the next costliest and where every one is
# listed; pg_contention_index_findings lists the 30; xmin_horizon_held
# counts 30 indexes; check prints one line; the worker opens one incident
# of 30.  After the fix (COMMIT, VACUUM) nothing is left above info.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client evaluated_twice);

my $node = PostgreSQL::Test::Cluster->new('causes');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.incident_interval = 1s
pg_contention.incident_close_after = 2s
pg_contention.incident_database = 'shop'
pg_contention.horizon_min_age = 1s
pg_contention.horizon_min_xid_age = 0
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION pg_contention');

my $k = 30;
# Tables t1..t30 (k, v) with an index tN_k: 100 live rows, then 1,000 +
# 20 N rows of k = 7 inserted and deleted, so that t30's lookups are the
# costliest, t29's next.
$node->safe_psql('shop', qq{
	DO \$\$
	BEGIN
		FOR i IN 1..$k LOOP
			EXECUTE format('CREATE TABLE t%s (k integer, v text)', i);
			EXECUTE format('CREATE INDEX t%s_k ON t%s (k)', i, i);
			EXECUTE format('INSERT INTO t%s SELECT g, ''live'' FROM generate_series(1, 100) AS g', i);
			EXECUTE format('ANALYZE t%s', i);
		END LOOP;
	END
	\$\$});

my $holder = $node->background_psql('shop');
$holder->query_safe("SET application_name = 'billing'; BEGIN; SELECT txid_current()");
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder_pid =~ s/\s+//g;
$node->safe_psql('shop', qq{
	DO \$\$
	BEGIN
		FOR i IN 1..$k LOOP
			EXECUTE format('INSERT INTO t%s SELECT 7, ''gone'' FROM generate_series(1, %s)', i, 1000 + 20 * i);
			EXECUTE format('DELETE FROM t%s WHERE v = ''gone''', i);
		END LOOP;
	END
	\$\$});
# Each index looked up twice, by its own statement.
$node->safe_psql('shop', 'SET enable_seqscan = off; SET enable_bitmapscan = off; '
	  . join(' ', map { "SELECT count(*) FROM t$_ WHERE k = 7; SELECT count(*) FROM t$_ WHERE k = 7;" } 1 .. $k));

sub findings_of
{
	my ($problem, $columns) = @_;
	return $node->safe_psql('shop',
		"SELECT $columns FROM pg_contention_findings WHERE problem = '$problem'");
}

is(findings_of('dead_tuple_index_scan', 'count(*)'), '1', 'one dead_tuple_index_scan finding for one holder');
like(findings_of('dead_tuple_index_scan', 'subject'),
	qr/^index public\.t30_k scanned by SELECT count\(\*\) FROM t30 WHERE k = \$1 \(query id -?\d+\) \(and 29 more indexes\)$/,
	'its subject: the costliest index, and how many more');
my $evidence = findings_of('dead_tuple_index_scan', 'evidence');
like($evidence, qr/; vacuum cannot remove them while pid $holder_pid \(application billing\) holds the xmin horizon /,
	'its evidence names the holder');
like($evidence,
	qr/ The same cause touches 30 indexes; the next costliest: public\.t29_k \(1,580 dead entries per execution\), public\.t28_k \(1,560 dead entries per execution\), public\.t27_k \(1,540 dead entries per execution\); every one in pg_contention_index_findings\.$/,
	'and the next costliest indexes, and where every one is');
is(findings_of('dead_tuple_index_scan',
		"details ->> 'touched_count', jsonb_array_length(details -> 'touched'), details #>> '{holder,pid}', details ->> 'cause'"),
	"30|10|$holder_pid|held by backend $holder_pid",
	'its details: 30 indexes, the first 10 listed, the holder, the cause');
is(findings_of('dead_tuple_index_scan', "details ->> 'dead_per_execution'"), '1600.0',
	'its figures are the costliest index\'s');
is(findings_of('dead_tuple_index_scan', 'severity'), 'warning', 'its severity: the worst index\'s');

# Every index, in the view.
is($node->safe_psql('shop', q{
	SELECT count(*) || ' ' || count(DISTINCT details ->> 'cause') || ' ' || bool_and(subject LIKE 'index public.t%_k scanned by %')
	  FROM pg_contention_index_findings}), '30 1 true', 'pg_contention_index_findings: the 30 rows, one cause');
is($node->safe_psql('shop', q{
	SELECT string_agg(details ->> 'index', ' ') FROM (SELECT details FROM pg_contention_index_findings LIMIT 3) AS f}),
	'public.t30_k public.t29_k public.t28_k', 'costliest first');
# check: one line for the cause.
my ($rc, $out) = do {
	local $ENV{PGDATABASE} = 'shop';
	run_client($node, 'check', '--live');
};
is(scalar(() = $out =~ /^\w+ dead_tuple_index_scan: /mg), 1, 'check --live: one line for the dead entries')
  or diag($out);

# The incident: one, counting the 30.
evaluated_twice($node);
is($node->safe_psql('shop', q{
	SELECT count(*) || ' ' || min(details -> 'finding' ->> 'touched_count') || ' ' || bool_and(subject LIKE '% (and 29 more indexes)')
	  FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan'}),
	'1 30 true', 'one incident, of 30 indexes');

# Once the holder has held past the minimum age (1 s here).
$node->poll_query_until('shop',
	"SELECT xact_start < clock_timestamp() - interval '2 seconds' FROM pg_stat_activity WHERE pid = $holder_pid")
  or die 'the holder did not hold';
like(findings_of('xmin_horizon_held', 'evidence'),
	qr/; it keeps the dead entries that lookups visit in 30 indexes \(dead_tuple_index_scan\)\./,
	'xmin_horizon_held counts the indexes')
  or diag($node->safe_psql('shop', 'SELECT problem, severity, subject FROM pg_contention_findings; SELECT * FROM pg_contention_horizon'));

# The fix: the holder ends, vacuum removes the entries.  Nothing is left
# above info, and the incident closes with what ended it.
$holder->query_safe('COMMIT');
$holder->quit;
$node->safe_psql('shop', join(' ', map { "VACUUM t$_;" } 1 .. $k));
# (Polled: before PostgreSQL 15 the statistics that say the vacuum ran
# reach the other sessions through the collector, a moment later.)
ok($node->poll_query_until('shop', "SELECT count(*) = 0 FROM pg_contention_findings WHERE severity <> 'info'"),
	'after the fix: no finding above info')
  or diag($node->safe_psql('shop', "SELECT problem, severity, details ->> 'state', subject FROM pg_contention_findings"));
ok($node->poll_query_until('shop', q{
	SELECT resolution IS NOT NULL FROM pg_contention_incidents
	 WHERE problem = 'dead_tuple_index_scan' AND closed IS NOT NULL}),
	'the incident closed, saying what ended it');
like($node->safe_psql('shop', "SELECT resolution FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan'"),
	qr/^(the holder of the xmin horizon, pid $holder_pid, ended its transaction|vacuum removed the dead entries: the index's lookups no longer visit them)$/,
	'what ended it: the holder\'s COMMIT or the vacuum after it');

$node->stop;
done_testing();
