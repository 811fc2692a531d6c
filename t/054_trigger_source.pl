# The source of hidden subtransactions named: a row trigger that wraps
# its audit INSERT in BEGIN ... EXCEPTION ... END opens a subtransaction
# per inserted row, so a bulk import of 400 rows overflows.  The finding
# names the importer's statement, the trigger and its function (the line
# of the error context stack, in the session's language) and the
# statement inside it, and advises for that source (catch nothing per
# row), read in the application's database and from postgres, with how
# many subtransactions one execution opened and over how many rows:
# counted from the statement's start, whatever the transaction opened
# before it, through the executor, COPY and a function called per row.
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
	like($f, qr/^statement INSERT INTO items \(k, payload\) SELECT g, \$1 FROM generate.* in pid \d+ \(application importer.*, inside PL\/pgSQL function audit_items\(\) line \d+ at SQL statement, fired by trigger items_audit on public\.items: INSERT INTO audit VALUES \(NEW\.k, now\(\)\) \(query id -?\d+\), 400 subtransactions with an XID in one execution of 400 rows \(1 per row\) \|/,
		"$db: the subject names the importer's statement, the trigger, its function and the statement inside");
	like($f, qr/\| (.*; k|K)eep transactions under 64 subtransactions: here they come from PL\/pgSQL function audit_items\(\) line \d+ at SQL statement, which trigger items_audit on public\.items fires for each row, which opens one each time it enters an EXCEPTION block \(or a savepoint\); catch nothing per row: INSERT \.\.\. ON CONFLICT/,
		"$db: the advice is for that source");
}

# The counts each event was given at its statement's end.
sub event_counts
{
	my ($pattern) = @_;
	return $node->safe_psql('shop', qq{SELECT statement_subxacts || ' ' || coalesce(statement_rows::text, 'unknown')
		FROM pg_contention_overflow_events WHERE query LIKE '$pattern' ORDER BY event_time DESC LIMIT 1});
}
is(event_counts('INSERT INTO items%'), '400 400', 'the import: 400 subtransactions over 400 rows');

# In a transaction that opened 30 before: the statement's own 50.
$node->safe_psql('shop', q{BEGIN;
	INSERT INTO items (k, payload) SELECT g, 'before' FROM generate_series(1001, 1030) AS g;
	INSERT INTO items (k, payload) SELECT g, 'second' FROM generate_series(1031, 1080) AS g;
	COMMIT});
is(event_counts('%second%'), '50 50', 'counted from the statement\'s start, not the transaction\'s');

# COPY fires the trigger too: its rows are COPY's.
$node->safe_psql('shop', "COPY items (k) FROM PROGRAM 'seq 2001 2100' WITH (FORMAT csv)");
is(event_counts('COPY items%'), '100 100', 'COPY: 100 subtransactions over its 100 rows');

# A function with two EXCEPTION blocks, called for each of 100 rows.
$node->safe_psql('shop', q{
	CREATE FUNCTION twice(i integer) RETURNS integer LANGUAGE plpgsql AS $$
	BEGIN
		BEGIN INSERT INTO audit VALUES (100000 + i, now()); EXCEPTION WHEN unique_violation THEN NULL; END;
		BEGIN INSERT INTO audit VALUES (200000 + i, now()); EXCEPTION WHEN unique_violation THEN NULL; END;
		RETURN i;
	END $$;
	SELECT count(twice(g)) FROM generate_series(1, 100) AS g;
	SELECT twice(g) FROM generate_series(101, 200) AS g});
is(event_counts('SELECT count(twice%'), '200 1', 'an aggregate over 100 calls: 200 in one execution of one row');
is(event_counts('SELECT twice(g)%'), '200 100', 'per row: 2 per row');
# A block that takes no XID (it only reads) fills no cache: not counted.
$node->safe_psql('shop', q{
	CREATE FUNCTION reads_then_writes(i integer) RETURNS integer LANGUAGE plpgsql AS $$
	BEGIN
		BEGIN PERFORM count(*) FROM audit WHERE k = i; EXCEPTION WHEN others THEN NULL; END;
		BEGIN INSERT INTO audit VALUES (300000 + i, now()); EXCEPTION WHEN unique_violation THEN NULL; END;
		RETURN i;
	END $$;
	SELECT reads_then_writes(g) FROM generate_series(1, 100) AS g});
is(event_counts('SELECT reads_then_writes%'), '100 100', 'only the blocks that took an XID: 100 over 100 rows');

# A procedure: its count per call, its rows unknown; one that commits
# inside ends in another transaction than the one that overflowed, and
# its event is left without counts rather than given wrong ones.
$node->safe_psql('shop', q{
	CREATE PROCEDURE batch(first integer, n integer, commit_after boolean) LANGUAGE plpgsql AS $$
	BEGIN
		FOR i IN first .. first + n - 1 LOOP
			BEGIN INSERT INTO audit VALUES (i, now()); EXCEPTION WHEN unique_violation THEN NULL; END;
		END LOOP;
		IF commit_after THEN
			COMMIT;
			INSERT INTO audit VALUES (first + n, now());
		END IF;
	END $$;
	CALL batch(400000, 80, false)});
is($node->safe_psql('shop', q{SELECT statement_subxacts || ' ' || coalesce(statement_rows::text, 'unknown')
	FROM pg_contention_overflow_events WHERE query LIKE 'CALL batch(%' ORDER BY event_time DESC LIMIT 1}),
	'80 unknown', 'a procedure: 80 in its call, rows unknown');
$node->safe_psql('shop', 'CALL batch(500000, 80, true)');
is($node->safe_psql('shop', q{SELECT coalesce(statement_subxacts::text, 'none') || ' ' || coalesce(statement_rows::text, 'unknown')
	FROM pg_contention_overflow_events WHERE query LIKE 'CALL batch(500000%' ORDER BY event_time DESC LIMIT 1}),
	'none unknown', 'a procedure that committed inside: no counts');

my $f = $node->safe_psql('shop', q{SELECT subject FROM pg_contention_findings
	WHERE problem = 'subxact_overflow' AND subject LIKE 'statement SELECT twice%'});
like($f, qr/, 200 subtransactions with an XID in one execution of 100 rows \(2 per row\)$/, 'the finding says 2 per row');
$f = $node->safe_psql('shop', q{SELECT subject FROM pg_contention_findings
	WHERE problem = 'subxact_overflow' AND subject LIKE 'statement SELECT count(twice%'});
like($f, qr/, 200 subtransactions with an XID in one execution$/, 'one row: per execution only');
done_testing();
