# The source of hidden subtransactions named: a row trigger that wraps
# its audit INSERT in BEGIN ... EXCEPTION ... END opens a subtransaction
# per inserted row, so a bulk import of 400 rows overflows.  The finding
# names the importer's statement, the trigger and its function (the line
# of the error context stack, in the session's language) and the
# statement inside it, and advises for that source (catch nothing per
# row), read in the application's database and from postgres.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE items (k integer PRIMARY KEY, payload text);
	CREATE TABLE audit (k integer PRIMARY KEY, at timestamptz);
	CREATE FUNCTION audit_items() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		BEGIN
			INSERT INTO audit VALUES (NEW.k, now());
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
		RETURN NEW;
	END $$;
	CREATE TRIGGER items_audit AFTER INSERT ON items FOR EACH ROW EXECUTE FUNCTION audit_items();});

$node->safe_psql('shop', q{SET application_name = 'importer';
	INSERT INTO items (k, payload) SELECT g, 'x' FROM generate_series(1, 400) AS g});
is($node->safe_psql('shop', 'SELECT count(*) FROM audit'), '400', 'the import ran the trigger for each row');

like($node->safe_psql('shop', q{SELECT string_agg(context || ' | ' || coalesce(trigger, 'none'), ', ')
	FROM pg_contention_nested_contexts()}),
	qr/^PL\/pgSQL function audit_items\(\) line \d+ at SQL statement \| items_audit on public\.items$/,
	'the backend noted the function and the trigger that fired it');

for my $db ('shop', 'postgres')
{
	my $f = $node->safe_psql($db, q{SELECT subject || ' | ' || advice FROM pg_contention_findings
		WHERE problem = 'subxact_overflow'});
	note("$db: $f");
	like($f, qr/^statement INSERT INTO items \(k, payload\) SELECT g, \$1 FROM generate.* in pid \d+ \(application importer.*, inside PL\/pgSQL function audit_items\(\) line \d+ at SQL statement, fired by trigger items_audit on public\.items: INSERT INTO audit VALUES \(NEW\.k, now\(\)\) \(query id -?\d+\) \|/,
		"$db: the subject names the importer's statement, the trigger, its function and the statement inside");
	like($f, qr/\| (.*; k|K)eep transactions under 64 subtransactions: here they come from PL\/pgSQL function audit_items\(\) line \d+ at SQL statement, which trigger items_audit on public\.items fires for each row, which opens one each time it enters an EXCEPTION block \(or a savepoint\); catch nothing per row: INSERT \.\.\. ON CONFLICT/,
		"$db: the advice is for that source");
}
done_testing();
