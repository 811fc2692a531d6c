# The write-up's benchmark (cases.md, case 1) with a few pgbench clients:
# at 90 savepoints per transaction every transaction overflows, producing
# events and suboverflowed SELECT and UPDATE calls; at 30 nothing is
# recorded.  Counts only: no timing is asserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

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
	my $body = '';
	for my $i (1 .. $savepoints)
	{
		$body .= "SAVEPOINT a;\n"
		  . "\\set rnd random(1, 990)\n"
		  . "SELECT count(*) FROM contend WHERE id BETWEEN 10 * :rnd + :client_id + 1 AND 10 * :rnd + :client_id + 1 + 100;\n"
		  . "UPDATE contend SET val = val + 1 WHERE id IN (10 * :rnd + :client_id, 10 * :rnd + :client_id + 10, 10 * :rnd + :client_id + 20, 10 * :rnd + :client_id + 30);\n";
	}
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
	$node->pgbench(
		'-n -M prepared -c 4 -j 2 -t 15',
		0,
		[qr{processed: 60/60}],
		[qr{^$}],
		"pgbench with $savepoints savepoints per transaction",
		{ "subtrans_$savepoints" => "BEGIN;\n$body" . "COMMIT;\n" });
}

sub stats_for
{
	my ($query) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(sum(calls), 0), coalesce(sum(suboverflowed_calls), 0)
		   FROM pg_contention_statements WHERE query LIKE '$query'");
}

run_case(90);
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

run_case(30);
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'0', '30 savepoints: no overflow event');
($calls, $subof) = split /\|/, stats_for($select);
is("$calls|$subof", (60 * 30) . '|0', 'SELECT counted, never suboverflowed');
is($node->safe_psql('postgres',
	'SELECT coalesce(sum(suboverflowed_calls), 0) FROM pg_contention_statements'),
	'0', 'no suboverflowed calls anywhere');

done_testing();
