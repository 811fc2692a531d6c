# Case 1 (README, The three incidents): its pgbench benchmark with a few clients:
# at 90 savepoints per transaction every transaction overflows, producing
# events and suboverflowed SELECT and UPDATE calls, overflowed backends in
# the sampler's history and far more Subtrans SLRU lookups; at 30 nothing
# is recorded.  Counts only: no timing is asserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(savepoint_script subtrans_only_differences);

my $node = PostgreSQL::Test::Cluster->new('bench');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL)
		WITH (fillfactor = '50');
	INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	VACUUM (ANALYZE) contend;
});

# With -M prepared, pgbench's variables become parameters: one statement
# each, whatever the values.
my $select = 'SELECT count(*) FROM contend%';
my $update = 'UPDATE contend%';

sub run_case
{
	my ($savepoints) = @_;
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
	my $start = $node->safe_psql('postgres', 'SELECT now()');
	$node->pgbench(
		'-n -M prepared -c 4 -j 2 -t 15',
		0,
		[qr{processed: 60/60}],
		[qr{^$}],
		"pgbench with $savepoints savepoints per transaction",
		{ "subtrans_$savepoints" => savepoint_script($savepoints) });

	# The clients' SLRU counters reach the statistics when they exit; wait
	# until the sampler has closed two buckets after that.
	my $end = $node->safe_psql('postgres', 'SELECT now()');
	ok($node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM pg_contention_history
		  WHERE bucket_start > '$end'::timestamptz + interval '1 second' AND subtrans_lookups IS NOT NULL"),
		"history covers the $savepoints-savepoint run");
	return $node->safe_psql('postgres',
		"SELECT coalesce(max(max_overflowed_backends), 0), coalesce(sum(subtrans_lookups), 0)
		   FROM pg_contention_history WHERE bucket_start >= date_trunc('second', '$start'::timestamptz)");
}

sub stats_for
{
	my ($query) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(sum(calls), 0), coalesce(sum(suboverflowed_calls), 0)
		   FROM pg_contention_statements WHERE query LIKE '$query'");
}

my ($overflowed90, $lookups90) = split /\|/, run_case(90);
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'60', '90 savepoints: one overflow event per transaction');
is($node->safe_psql('postgres',
	"SELECT count(DISTINCT query) FROM pg_contention_overflow_events"),
	'1', 'every event names the same statement');
like($node->safe_psql('postgres', 'SELECT min(query) FROM pg_contention_overflow_events'),
	qr/^UPDATE contend/, 'the statement is the UPDATE that took the 65th XID');
my ($calls, $subof) = split /\|/, stats_for($select);
is($calls, 60 * 90, 'every SELECT execution counted');
cmp_ok($subof, '>', 0, "SELECT ran on suboverflowed snapshots ($subof of $calls)");
($calls, $subof) = split /\|/, stats_for($update);
is($calls, 60 * 90, 'every UPDATE execution counted');
cmp_ok($subof, '>', 0, "UPDATE ran on suboverflowed snapshots ($subof of $calls)");

# pg_contention_statements(subtrans_only), which top and the metrics read
# instead of the whole store: exactly the view's rows that ran suboverflowed
# or waited on pg_subtrans, and not the others.
my $differ = subtrans_only_differences();
is($node->safe_psql('postgres', qq{
	SELECT $differ
		 || '|' || (SELECT count(*) > 0 FROM pg_contention_statements(true))
		 || '|' || ((SELECT count(*) FROM pg_contention_statements(true))
					< (SELECT count(*) FROM pg_contention_statements))}),
	'0|true|true', 'statements(subtrans_only): the view\'s suboverflowed or waiting rows, and only them');

# The sampler saw it: overflowed backends, and the profile has the
# benchmark's statements.
cmp_ok($overflowed90, '>', 0, "history shows overflowed backends ($overflowed90)");
# The profile is sampled: a short run on a loaded machine can slip every
# execution of one statement between two ticks, so the same run goes on
# (up to 20 times more) until a tick has caught each.
my $profiled_sql = "SELECT count(DISTINCT s.query_id) FROM pg_contention_waits w
	   JOIN pg_contention_statements s USING (query_id)
	  WHERE s.query LIKE 'SELECT count(*) FROM contend%' OR s.query LIKE 'UPDATE contend%'";
my $profiled = $node->safe_psql('postgres', $profiled_sql);
my $more = PostgreSQL::Test::Utils::tempdir() . '/subtrans_90_more';
PostgreSQL::Test::Utils::append_to_file($more, savepoint_script(90));
for (my $round = 0; $round < 20 && $profiled ne '2'; $round++)
{
	PostgreSQL::Test::Utils::system_log('pgbench', '-n', '-M', 'prepared', '-c', '4', '-j', '2', '-t', '15',
		'-f', $more, '-h', $node->host, '-p', $node->port, 'postgres');
	$profiled = $node->safe_psql('postgres', $profiled_sql);
}
is($profiled, '2', 'the wait profile holds the SELECT and the UPDATE');

my ($overflowed30, $lookups30) = split /\|/, run_case(30);
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'0', '30 savepoints: no overflow event');
($calls, $subof) = split /\|/, stats_for($select);
is("$calls|$subof", (60 * 30) . '|0', 'SELECT counted, never suboverflowed');
is($node->safe_psql('postgres',
	'SELECT coalesce(sum(suboverflowed_calls), 0) FROM pg_contention_statements'),
	'0', 'no suboverflowed calls anywhere');
is($overflowed30, '0', 'history shows no overflowed backend at 30 savepoints');

# Case 1's reproduction measured 500 times more Subtrans lookups at 90 than at 30.
cmp_ok($lookups90, '>=', 100 * ($lookups30 > 0 ? $lookups30 : 1),
	"Subtrans SLRU lookups: $lookups90 at 90 savepoints, $lookups30 at 30");

done_testing();
