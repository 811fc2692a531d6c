# Index-only scans measured like index scans, and lookups in functions
# named with their caller (issue 47, item 8): behind a
# held horizon, an index-only lookup fetches the heap for every entry on a
# page that is not all-visible and finds the dead versions there (EXPLAIN:
# "Heap Fetches: 20000" for 0 rows); the finding names it as it names a
# plain index scan.  A count over an all-visible table, which reads many
# entries and fetches nothing, stays clean; the fix (end the holder, then
# VACUUM) clears it.  The application is in shop.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('index_only');
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
});
$node->safe_psql('shop', 'VACUUM (ANALYZE) orders');

my $ios = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET application_name = \'shop-api\';';
my $lookup = 'SELECT customer FROM orders WHERE customer = 42';
my $count = 'SELECT count(customer) FROM orders WHERE customer >= 0';
like($node->safe_psql('shop', "$ios EXPLAIN (COSTS OFF) $lookup"), qr/Index Only Scan using orders_customer/,
	'the lookup is an index-only scan');

# Healthy: every page all-visible, 20,000 entries read, no heap fetch.
$node->safe_psql('shop', "$ios $count") for 1 .. 3;
is($node->safe_psql('shop', q{SELECT scans || ' ' || entries_read || ' ' || dead_visits || ' ' || index_only_scans
	FROM pg_contention_index_scans WHERE query LIKE 'SELECT count(customer)%'}),
	'3 60000 0 3', 'an all-visible count: measured, 20,000 entries each, no dead entry');

# A holder keeps 20,000 dead versions of customer 42.
my $holder = $node->background_psql('shop');
$holder->query_safe('BEGIN; SELECT txid_current()');
$node->safe_psql('shop', q{
	INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000);
	DELETE FROM orders WHERE note = 'gone';
});
like($node->safe_psql('shop', "$ios EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $lookup"),
	qr/Heap Fetches: 20\d\d\d/, 'EXPLAIN: the index-only scan fetches the heap for every dead entry');
$node->safe_psql('shop', "$ios $lookup") for 1 .. 3;

is($node->safe_psql('shop', q{SELECT scans || ' ' || dead_visits || ' ' || index_only_scans
	FROM pg_contention_index_scans WHERE query = 'SELECT customer FROM orders WHERE customer = $1'}),
	'3 60000 3', 'the index-only lookups: 20,000 dead entries each (their heap fetches that found nothing)');
like($node->safe_psql('shop', q{SELECT severity || ' ' || subject || ' | ' || evidence
	FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'}),
	qr/^warning index public\.orders_customer scanned by SELECT customer FROM orders WHERE customer = \$1 .*\| 3 executions .* visited 20,000 dead index entries each/,
	'a finding, as for a plain index scan');
is($node->safe_psql('shop', q{SELECT dead_visits FROM pg_contention_index_scans
	WHERE query LIKE 'SELECT count(customer)%'}), '0',
	'the healthy count was not blamed');

# A lookup inside a PL/pgSQL function is named with the client statement
# that called the function (issue 47, item 8).
$node->safe_psql('shop', q{
	CREATE FUNCTION orders_of(c integer) RETURNS SETOF orders LANGUAGE plpgsql AS $$
	BEGIN
		RETURN QUERY SELECT * FROM orders WHERE customer = c;
	END $$});
$node->safe_psql('shop', "$ios SELECT count(*) FROM orders_of(42)") for 1 .. 3;
like($node->safe_psql('shop', q{SELECT subject || ' | ' || (details ->> 'worst_caller_query_id')
	FROM pg_contention_index_findings WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%customer = c%'}),
	qr/^index public\.orders_customer scanned by SELECT \* FROM orders WHERE customer = c \(query id -?\d+\) in PL\/pgSQL function orders_of\(integer\) line \d+ at RETURN QUERY, inside SELECT count\(\*\) FROM orders_of\(\$1\) \(query id (-?\d+)\) \| \1$/,
	'the function\'s lookup is named with its function and the client statement that called it');
# The findings: one for the holder's dead entries in the one index, the
# costlier statement's, saying there is one more.
like($node->safe_psql('shop', q{SELECT count(*) || ' ' || min(subject) || ' | ' || min(details ->> 'touched_count')
	FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'}),
	qr/^1 index public\.orders_customer scanned by .* \(and 1 more statement on it\) \| 1$/,
	'one finding for the cause: one index, two statements');
# From another database (where the incidents worker and check read), the
# same: the function was noted in shop, where its catalog is.
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
like($node->safe_psql('postgres', q{SELECT subject || ' | ' || (details ->> 'worst_function')
	FROM pg_contention_index_findings WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%customer = c%'}),
	qr/^index public\.orders_customer in database shop scanned by .* in PL\/pgSQL function orders_of\(integer\) line \d+ at RETURN QUERY, inside SELECT count\(\*\) FROM orders_of\(\$1\) .*\| PL\/pgSQL function orders_of\(integer\) line \d+ at RETURN QUERY$/,
	'read from database postgres: the function is named too');
# A role without pg_read_all_stats in postgres sees none of shop's.
$node->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
is($node->psql('postgres', 'SELECT count(*) FROM pg_contention_nested_contexts()', extra_params => [ '-U', 'plain' ]) , 0,
	'pg_contention_nested_contexts() runs for a plain role');
is($node->safe_psql('postgres', 'SET ROLE plain; SELECT count(*) FROM pg_contention_nested_contexts()'), '0',
	'and shows it none of another database\'s');
# In shop itself, as pg_stat_statements shows them: another role's query
# id and function masked (issue 58, item 6).
is($node->safe_psql('shop', q{SET ROLE plain;
	SELECT string_agg(coalesce(query_id::text, 'NULL') || ' ' || context, ', ') FROM pg_contention_nested_contexts()}),
	'NULL <insufficient privilege>', 'in shop, a plain role reads neither the query id nor the function of another role\'s statement');
# The same statement in a second function: named as noted in several places.
$node->safe_psql('shop', q{
	CREATE FUNCTION orders_again(c integer) RETURNS SETOF orders LANGUAGE plpgsql AS $$
	BEGIN
		RETURN QUERY SELECT * FROM orders WHERE customer = c;
	END $$});
$node->safe_psql('shop', "$ios SELECT count(*) FROM orders_again(42)");
like($node->safe_psql('postgres', q{SELECT string_agg(context || ' ' || several, ', ') FROM pg_contention_nested_contexts()}),
	qr/^PL\/pgSQL function orders_(of|again)\(integer\) line \d+ at RETURN QUERY true$/,
	'a statement run in two functions: one entry, marked several');

# The fix: the holder ends, VACUUM removes the dead versions; the lookups
# run clean and the finding is resolved.
$holder->query_safe('COMMIT');
$holder->quit;
$node->safe_psql('shop', 'VACUUM orders');
$node->safe_psql('shop', "$ios $lookup") for 1 .. 2;
$node->safe_psql('shop', "$ios SELECT count(*) FROM orders_of(42)") for 1 .. 2;
is($node->safe_psql('shop', q{SELECT string_agg(DISTINCT severity, ',') FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'}),
	'info', 'after the fix the findings are info (resolved)');

$node->stop;
done_testing();
