# The DBA's EXPLAIN (ANALYZE) beside the application (issue 47, item 6):
# the executions an EXPLAIN runs are not counted, as a plain EXPLAIN's
# are not, so its text never names the application's statement and its
# bad lookups, made while a holder kept the dead entries, never keep a
# finding alive after the application's own executions ran clean.  The
# application is in shop.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dba_queries');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.horizon_min_age = 1s
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
	ANALYZE orders;
});

# A holder keeps 20,000 dead versions of customer 42.
my $holder = $node->background_psql('shop');
$holder->query_safe('BEGIN; SELECT txid_current()');
$node->safe_psql('shop', q{
	INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000);
	DELETE FROM orders WHERE note = 'gone';
});

my $lookup = 'SELECT * FROM orders WHERE customer = 42';
my $lookup_param = 'SELECT * FROM orders WHERE customer = $1';
my $lookup_param_c = 'SELECT * FROM orders WHERE customer = :c';
# Plain index scans (a bitmap scan never marks entries dead).
my $plain = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $explain = "SET application_name = 'dba'; $plain EXPLAIN (ANALYZE, BUFFERS) $lookup";
my $app = "SET application_name = 'shop-api'; $plain $lookup";
my $statements = q{SELECT coalesce(string_agg(DISTINCT application_name || ': ' || query, ' | '), '-')
	FROM pg_contention_statements WHERE query LIKE '%orders WHERE customer%'};
my $index_finding = q{SELECT coalesce(string_agg(severity || ' ' || subject, ' | '), '-')
	FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'};

# The DBA looks first.
$node->safe_psql('shop', $explain) for 1 .. 3;
is($node->safe_psql('shop', $statements), '-', 'the EXPLAIN ANALYZE runs counted nothing');
is($node->safe_psql('shop', $index_finding), '-', 'and made no index finding');

# The application's lookups: its own text, whatever the DBA ran.
$node->safe_psql('shop', $app) for 1 .. 3;
$node->safe_psql('shop', $explain);
is($node->safe_psql('shop', $statements), 'shop-api: SELECT * FROM orders WHERE customer = $1',
	'the statement is the application\'s, under its own text');
like($node->safe_psql('shop', $index_finding),
	qr/^warning index public\.orders_customer scanned by SELECT \* FROM orders WHERE customer = \$1 /,
	'the index finding names the application\'s statement');

# The DBA prepares the lookup by hand while pgbench runs it as a
# protocol-level prepared statement: one text, the lookup's, whoever
# prepared it (before PostgreSQL 18 a prepared statement's executions
# carry the PREPARE's text).
$node->safe_psql('shop', "SET application_name = 'dba'; $plain PREPARE by_customer(integer) AS $lookup_param; EXECUTE by_customer(42)");
{
	local $ENV{PGAPPNAME} = 'shop-api';
	$node->pgbench('-n -M prepared -t 2', 0, [qr{processed: 2/2}], [qr{^$}], 'prepared lookups',
		{ 'lookup.sql' => "\\set c 42\nSET enable_seqscan = off;\nSET enable_bitmapscan = off;\n$lookup_param_c;\n" }, 'shop');
}
is($node->safe_psql('shop', q{SELECT string_agg(DISTINCT query, ' | ') FROM pg_contention_statements
	WHERE query LIKE '%FROM orders WHERE customer%'}),
	'SELECT * FROM orders WHERE customer = $1', 'the DBA\'s PREPARE is named by the statement it prepared');
unlike($node->safe_psql('shop', $index_finding), qr/PREPARE/, 'no finding names the PREPARE');

# The fix: the holder ends; the application's next lookups run clean (the
# first marks the entries dead), then the DBA looks again.
$holder->query_safe('COMMIT');
$holder->quit;
$node->safe_psql('shop', $app) for 1 .. 3;
$node->safe_psql('shop', $explain);
is($node->safe_psql('shop', "SELECT count(*) FROM pg_contention_findings WHERE severity <> 'info'"),
	'0', 'the application runs clean: no finding above info, whatever the DBA\'s EXPLAIN saw')
  or diag($node->safe_psql('shop', 'SELECT problem, severity, subject, evidence FROM pg_contention_findings'));

$node->stop;
done_testing();
