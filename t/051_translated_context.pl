# Nothing depends on the language of the server's messages.  A lookup
# inside a PL/pgSQL function is named with its function from the error
# context stack, whose lines are translated into the session's
# lc_messages when they are made: under German messages the function is
# still found ("PL/pgSQL-Funktion orders_of(integer) Zeile 3 bei RETURN
# QUERY"), read from another database in English.  Skipped where the
# locale or the server's German messages are not installed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');

my $german = "SET lc_messages = 'de_DE.UTF-8';";
my ($rc, $out, $err) = $node->psql('shop', qq{$german DO \$\$ BEGIN RAISE EXCEPTION 'x'; END \$\$});
if ($err !~ /PL\/pgSQL-Funktion/)
{
	plan skip_all => 'German messages are not available here (de_DE.UTF-8 or the server\'s translations missing)';
}
note("a German context line: $err");

$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
	CREATE FUNCTION orders_of(c integer) RETURNS SETOF orders LANGUAGE plpgsql AS $$
	BEGIN
		RETURN QUERY SELECT * FROM orders WHERE customer = c;
	END $$;
});
$node->safe_psql('shop', 'VACUUM (ANALYZE) orders');

# A holder keeps 20,000 dead versions of customer 42; the function looks
# them up, in a session whose messages are German.
my $holder = $node->background_psql('shop');
$holder->query_safe('BEGIN; SELECT txid_current()');
$node->safe_psql('shop', q{
	INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000);
	DELETE FROM orders WHERE note = 'gone';
});
my $plan = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
$node->safe_psql('shop', "$german $plan SELECT count(*) FROM orders_of(42)") for 1 .. 3;

like($node->safe_psql('postgres', q{SELECT string_agg(context, ', ') FROM pg_contention_nested_contexts()}),
	qr/^PL\/pgSQL-Funktion orders_of\(integer\) Zeile \d+ bei RETURN QUERY$/,
	'the function is noted, in the words of the session that ran it');
like($node->safe_psql('shop', q{SELECT subject FROM pg_contention_findings
	WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%customer = c%'}),
	qr/^index public\.orders_customer scanned by SELECT \* FROM orders WHERE customer = c \(query id -?\d+\) in PL\/pgSQL-Funktion orders_of\(integer\) Zeile \d+ bei RETURN QUERY, inside SELECT count\(\*\) FROM orders_of\(\$1\)/,
	'the finding names the function and the client statement that called it');

$holder->query_safe('COMMIT');
$holder->quit;
done_testing();
