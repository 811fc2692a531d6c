# Names from any database (issue 47, item 2): the application is in shop;
# the incidents worker, `check` and the DBA's psql are in postgres, whose
# catalog does not have shop's indexes.  The backend that met the dead
# entries notes the index's and its table's names in shared memory, and
# every reader names them from there: the finding, its advice (which table
# to VACUUM), the incident and its log line, `check`, the report and the
# metrics.  A role without pg_read_all_stats gets no name of another
# database, as it gets none of its statistics; a rename shows at the next
# bad execution.  With more indexes than names, the worst keep theirs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client wait_for_log_line);

my $node = PostgreSQL::Test::Cluster->new('index_names');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.horizon_min_age = 1s
pg_contention.incident_interval = 1s
pg_contention.max_index_names = 100
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE ROLE plain LOGIN;
	CREATE ROLE watcher LOGIN IN ROLE pg_read_all_stats;
});
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE SCHEMA "Sales";
	CREATE TABLE "Sales".orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX "orders by customer" ON "Sales".orders (customer);
	INSERT INTO "Sales".orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
	ANALYZE "Sales".orders;
});

# A transaction in shop keeps 20,000 dead versions of customer 42, which
# the application's plain index scans visit.
my $holder = $node->background_psql('shop');
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder->query_safe('BEGIN; SELECT txid_current()');
$node->safe_psql('shop', q{
	INSERT INTO "Sales".orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000);
	DELETE FROM "Sales".orders WHERE note = 'gone';
});
# The DBA looks first (the client's statements are busy ones: they read
# the findings), then the application runs.
{
	delete local $ENV{PGAPPNAME};
	run_client($node, 'check');
	run_client($node, 'top', '-n', '1');
}
my $lookup = q{SET application_name = 'shop-api'; SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT * FROM "Sales".orders WHERE customer = 42};
my $offset = -s $node->logfile;
$node->safe_psql('shop', $lookup) for 1 .. 3;

my $index = q{"Sales"."orders by customer"};
my $table = q{"Sales".orders};

# The finding, read in postgres.
my $finding = q{SELECT severity || ' | ' || subject || ' | ' || advice || ' | ' || (details ->> 'index')
	|| ' | ' || (details ->> 'table') || ' | ' || (details ->> 'database')
	FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'};
my $read = $node->safe_psql('postgres', $finding);
like($read, qr/^warning \| index \Q$index\E in database shop scanned by SELECT \* FROM "Sales"\.orders WHERE customer = \$1 /,
	'read in postgres, the finding names shop\'s index, schema-qualified, with its database');
like($read, qr/then VACUUM \Q$table\E in database shop; /, 'its advice names the table to vacuum');
like($read, qr/ \| \Q$index\E \| \Q$table\E \| shop$/, 'details carry the names and the database');
like($node->safe_psql('shop', $finding), qr/^warning \| index \Q$index\E scanned by .* then VACUUM \Q$table\E; /,
	'read in shop, the names need no database');

# The view, the report and the metrics, in postgres.
is($node->safe_psql('postgres', q{SELECT datname || ' ' || schemaname || '.' || relname || ' ' || indexrelname
	FROM pg_contention_index_scans WHERE dead_visits > 0}),
	'shop Sales.orders orders by customer', 'pg_contention_index_scans names shop\'s index from postgres');
like($node->safe_psql('postgres', 'SELECT pg_contention_report()'),
	qr/^Sales\.orders by customer\s+3\s+60,?000\b/m, 'the report lists it by name');
like($node->safe_psql('postgres', q{SELECT labels::text FROM pg_contention_metrics(ARRAY['index'])}),
	qr/"index": "Sales\.orders by customer".*"database": "shop"|"database": "shop".*"index": "Sales\.orders by customer"/,
	'the metrics label it with its database and name');

# The incident the worker (in postgres) opens, its log line, and check.
ok(wait_for_log_line($node, qr/LOG:  pg_contention: incident \d+ opened: \w+ dead_tuple_index_scan: index \Q$index\E in database shop scanned by /, $offset),
	'the worker opens an incident, its log line naming the index and its database');
like($node->safe_psql('postgres', q{SELECT subject || ' | ' || advice FROM pg_contention_incidents
	WHERE problem = 'dead_tuple_index_scan'}),
	qr/\Q$index\E in database shop.* \| .*VACUUM \Q$table\E in database shop/, 'so does the incident');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_contention_incidents AS i,
		jsonb_array_elements(i.details -> 'statements') AS s
	WHERE s.value ->> 'query' LIKE '%pg_contention%'}),
	'0', 'the frozen statements are not pg_contention\'s own, busy as they are');
ok($node->safe_psql('postgres', q{SELECT count(*) FROM pg_contention_statements
	WHERE application_name = 'pg_contention' AND query LIKE '%pg_contention%'}) > 0,
	'(the client\'s statements are in the store: their exclusion is tested)');
my ($rc, $out) = run_client($node, 'check');
like($out, qr/\Q$index\E in database shop/, 'and check, in postgres');

# Another database's names are pg_read_all_stats's, as its statistics are.
is($node->safe_psql('postgres', 'SET ROLE plain; SELECT count(*) FROM pg_contention_index_names()'), '0',
	'a plain role reads no name of shop from postgres');
like($node->safe_psql('postgres', q{SET ROLE plain; SELECT subject FROM pg_contention_findings
	WHERE problem = 'dead_tuple_index_scan'}), qr/^index oid \d+ in database shop scanned by /,
	'its finding gives the oid');
is($node->safe_psql('postgres', 'SET ROLE watcher; SELECT indexrelname FROM pg_contention_index_names()'),
	'orders by customer', 'pg_read_all_stats reads them');

# A rename shows at the next bad execution.
$node->safe_psql('shop', 'ALTER INDEX "Sales"."orders by customer" RENAME TO orders_customer_idx');
$node->safe_psql('shop', $lookup);
like($node->safe_psql('postgres', $finding), qr/^warning \| index "Sales"\.orders_customer_idx in database shop /,
	'renamed, the index is named anew');
is($node->safe_psql('postgres', 'SELECT index_names || \' \' || index_name_evictions FROM pg_contention_info'),
	'1 0', 'one name kept, none evicted');

$holder->query_safe('COMMIT');
$holder->quit;

# ---- More indexes than names: the worst keep theirs.  20 indexes whose
# lookups meet 3,000 dead entries each, then 200 whose lookups meet 1,000
# (tenants' tables): of the 100 names kept (pg_contention.max_index_names),
# the 20 are among them, whatever came after.
$node->safe_psql('shop', q{
	CREATE SCHEMA many;
	DO $$ BEGIN
		FOR i IN 1..220 LOOP
			EXECUTE format('CREATE TABLE many.t%s (k integer, v integer)', i);
			EXECUTE format('CREATE INDEX t%s_k ON many.t%s (k)', i, i);
			EXECUTE format('INSERT INTO many.t%s SELECT 1, 1 FROM generate_series(1, %s)', i,
						   CASE WHEN i <= 20 THEN 3000 ELSE 1000 END);
			EXECUTE format('DELETE FROM many.t%s', i);
		END LOOP;
	END $$;});
$node->safe_psql('shop', "SET enable_seqscan = off; SET enable_bitmapscan = off;\n"
	  . join("\n", map { "SELECT sum(v) FROM many.t$_ WHERE k = 1;" } 1 .. 220));
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE schemaname = 'many' AND indexrelname ~ '^t([1-9]|1[0-9]|20)_k$')
		   || ' of 20 worst, ' || count(*) || ' names'
	  FROM pg_contention_index_names()}),
	'20 of 20 worst, 100 names', 'the store full, the worst indexes keep their names');
is($node->safe_psql('postgres', 'SELECT index_names_max FROM pg_contention_info'), '100',
	'its size is the setting\'s');
cmp_ok($node->safe_psql('postgres', 'SELECT index_name_evictions FROM pg_contention_info'), '>=', 100,
	'and the names that gave way are counted');

$node->stop;
done_testing();
