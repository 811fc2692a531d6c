# Bounded shared memory: the event ring wraps and counts what it dropped,
# the statement hash evicts the least used entries and counts them, long
# statement texts are cut to pg_contention.max_query_length, and reset
# clears it all.  Small capacities make this quick.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('bounded');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.max_events = 3
pg_contention.max_statements = 100
pg_contention.max_query_length = 64
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE TABLE r (id int)');

is($node->safe_psql('postgres', 'SELECT statements_max, events_max FROM pg_contention_info'),
	'100|3', 'capacities come from the settings');

# Five overflowing transactions, each tagged by its application_name.
for my $tx (1 .. 5)
{
	my $sql = "SET application_name = 'tx$tx';\nBEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO r VALUES ($_);\n" } 1 .. 66)
	  . "COMMIT;\n";
	$node->safe_psql('postgres', $sql);
}
is($node->safe_psql('postgres',
	"SELECT string_agg(application_name, ',') FROM pg_contention_overflow_events"),
	'tx3,tx4,tx5', 'ring keeps the newest three, oldest first');
is($node->safe_psql('postgres',
	'SELECT events_written, events_dropped FROM pg_contention_info'),
	'5|2', 'two events dropped and counted');

# 300 distinct statements into a hash of 100 (constants do not make a
# statement distinct, so each has a different number of columns).
sub distinct_statements
{
	my ($first) = @_;
	return join('', map { "SELECT $first" . (', 1' x $_) . ";\n" } 1 .. 300);
}
my $many = distinct_statements('0');
$node->safe_psql('postgres', $many);
my ($count, $evictions) = split /\|/, $node->safe_psql('postgres',
	'SELECT statements, statement_evictions FROM pg_contention_info');
cmp_ok($count, '<=', 100, "hash holds at most 100 statements (has $count)");
cmp_ok($evictions, '>=', 200, "evictions counted ($evictions)");
is($node->safe_psql('postgres', 'SELECT count(*) <= 100 FROM pg_contention_statements'),
	't', 'the view shows no more than the capacity');

# A frequently used statement survives eviction of rarely used ones.
$node->safe_psql('postgres', join('', map { "SELECT 'hot' AS hot;\n" } 1 .. 50));
$node->safe_psql('postgres', distinct_statements('true'));
is($node->safe_psql('postgres',
	"SELECT calls FROM pg_contention_statements WHERE query = 'SELECT ''hot'' AS hot'"),
	'50', 'the most used statement was not evicted');

# Long texts are cut to max_query_length - 1 bytes.
$node->safe_psql('postgres',
	"SELECT 1 AS long_marker_" . ('x' x 40) . ", 2 AS " . ('y' x 40));
is($node->safe_psql('postgres',
	"SELECT max(octet_length(query)) <= 63 FROM pg_contention_statements"),
	't', 'statement texts are cut to fit max_query_length');
is($node->safe_psql('postgres',
	"SELECT max(octet_length(query)) <= 63 FROM pg_contention_overflow_events"),
	't', 'event texts are cut to fit max_query_length');

# Eviction while four clients update entries concurrently (their cached
# entry pointers are invalidated by each eviction): 120 statement shapes
# into a hash of 100, picked at random.
my %scripts;
for my $i (1 .. 120)
{
	$scripts{"shape_$i"} = "SELECT 1" . (', 2' x $i) . ";\n";
}
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$node->pgbench('-n -c 4 -j 2 -t 300', 0, [qr{processed: 1200/1200}], [qr{^$}],
	'pgbench with 120 statement shapes', \%scripts);
($count, $evictions) = split /\|/, $node->safe_psql('postgres',
	'SELECT statements, statement_evictions FROM pg_contention_info');
cmp_ok($count, '<=', 100, "still at most 100 statements under concurrent eviction ($count)");
cmp_ok($evictions, '>', 0, "evictions happened meanwhile ($evictions)");
cmp_ok($node->safe_psql('postgres',
	"SELECT sum(calls) FROM pg_contention_statements WHERE query LIKE 'SELECT 1, 2%'"),
	'<=', 1200, 'no execution counted twice');

# Reset clears everything, counters included.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
is($node->safe_psql('postgres',
	'SELECT statement_evictions, events_written, events_dropped FROM pg_contention_info'),
	'0|0|0', 'reset clears eviction and drop counters');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'0', 'reset clears the ring');

# A setting out of range is refused with a warning naming the range, and
# the default is used (the server's rule for preloaded libraries).
$node->append_conf('postgresql.conf', "pg_contention.max_events = 0\n");
$node->restart;
like(slurp_file($node->logfile),
	qr/0 is outside the valid range for parameter "pg_contention\.max_events" \(1 \.\. 1000000\)/,
	'an out-of-range setting is reported');
is($node->safe_psql('postgres', 'SELECT events_max FROM pg_contention_info'),
	'1000', 'and the default is used instead');

done_testing();
