# Case 2 (README, The three incidents): while another session holds an uncommitted insert of
# many rows with the same key, a point lookup's index scan visits all their
# entries and finds them invisible.  pg_contention_index_scans names the
# statement and the index, with the dead visits per scan; after the rows
# are committed, deleted and vacuumed, new scans visit no dead entries.
# pg_contention_index_scans(dead_only) keeps whole the sums over a
# statement's index that visited dead entries.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('index_scans');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE t123 (id int, info text) WITH (autovacuum_enabled = off);
	CREATE INDEX idx_t123_id ON t123 (id);
	INSERT INTO t123 SELECT generate_series(1, 300000), 'test';
	ANALYZE t123;
});

# Case 2's lookup, as a plain index scan.  (Statements are told apart
# by their query id, which ignores constants, so each check below uses a
# statement of its own shape.)
my $plain = 'SET enable_bitmapscan = off; SET enable_seqscan = off;';
my $lookup = 'SELECT * FROM t123 WHERE id = 1';
my $lookup_text = 'SELECT * FROM t123 WHERE id = $1';	# as normalised
my $stats = q{
	SELECT scans, entries_read, live_fetched, dead_visits, max_dead_visits_per_scan,
		   round(dead_ratio::numeric, 4), schemaname, relname, indexrelname
	  FROM pg_contention_index_scans WHERE query = 'SELECT * FROM t123 WHERE id = $1'};

# Session A inserts 300,000 rows with id = 1 and does not commit.
my $a = $node->background_psql('postgres');
my $a_pid = $a->query_safe('SELECT pg_backend_pid()');
$a->query_safe("BEGIN; INSERT INTO t123 SELECT 1, 'test123' FROM generate_series(1, 300000);");

$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
is($node->safe_psql('postgres', "$plain $lookup"), '1|test', 'the lookup sees one row');
my @s = split /\|/, $node->safe_psql('postgres', $stats);
is($s[0], 1, 'one plain index scan counted');
is($s[1], 300001, 'it read 300,001 index entries');
is($s[2], 1, 'and found one visible heap tuple');
is($s[3], 300000, 'so 300,000 dead or invisible entries were visited');
is($s[4], 300000, 'all in that one execution');
cmp_ok($s[5], '>', 0.99, "dead_ratio $s[5] is above 0.99");
is("$s[6].$s[7].$s[8]", 'public.t123.idx_t123_id', 'the index and its table are named');

# The horizon view names the culprit meanwhile.
is($node->safe_psql('postgres',
	"SET pg_contention.horizon_min_age = 0;
	 SELECT kind, state, blocks_cleanup FROM pg_contention_horizon WHERE pid = $a_pid"),
	'backend|idle in transaction|t', 'the inserting session holds the horizon');

# Commit, delete all but one id = 1 row, vacuum with nothing holding the
# horizon: the dead entries are gone.
$a->query_safe('COMMIT');
$a->quit;
$node->safe_psql('postgres', q{
	DELETE FROM t123 WHERE id = 1 AND info = 'test123';
	VACUUM t123;
});
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$node->safe_psql('postgres', "$plain $lookup");
@s = split /\|/, $node->safe_psql('postgres', $stats);
is("$s[0]|$s[1]|$s[2]|$s[3]", '1|1|1|0', 'after VACUUM the scan reads one entry, no dead one');
is($s[5], '0.0000', 'dead_ratio is 0');

# An index-only scan is counted as such and measured like an index scan
# (its heap fetches less the visible tuples they found: none dead here).
$node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM t123 WHERE id BETWEEN 10 AND 20;
});
is($node->safe_psql('postgres',
	"SELECT scans, index_only_scans, entries_read, other_entries_read, dead_visits
	   FROM pg_contention_index_scans WHERE query LIKE 'SELECT count(*) FROM t123 WHERE id BETWEEN%'"),
	'1|1|11|0|0', 'an index-only scan is measured: its 11 entries, none dead');

# A statement inside a function counts under its own query id, and EXPLAIN
# without ANALYZE counts nothing.
$node->safe_psql('postgres', q{
	CREATE FUNCTION lookup_two() RETURNS text LANGUAGE sql
		AS 'SELECT max(info) FROM t123 WHERE id = 2';
	SET enable_bitmapscan = off; SET enable_seqscan = off;
	SELECT lookup_two();
	EXPLAIN SELECT info, id FROM t123 WHERE id = 3;
});
is($node->safe_psql('postgres',
	"SELECT scans, entries_read FROM pg_contention_index_scans WHERE query = 'SELECT max(info) FROM t123 WHERE id = \$1'"),
	'1|1', 'the function\'s lookup is counted with its own text');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_index_scans WHERE query LIKE '%info, id%'"),
	'0', 'EXPLAIN without ANALYZE is not counted');

# A failed statement leaves nothing behind: the next one is counted normally.
$node->psql('postgres', "$plain SELECT id / 0 FROM t123 WHERE id = 4");
$node->safe_psql('postgres', "$plain $lookup");
is($node->safe_psql('postgres',
	"SELECT scans FROM pg_contention_index_scans WHERE query = '$lookup_text'"),
	'2', 'counting goes on after a failed statement');

# EXPLAIN without ANALYZE is not a call either.
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_statements WHERE query LIKE 'EXPLAIN%' OR query LIKE 'SELECT info, id%'"),
	'0', 'EXPLAIN without ANALYZE is not counted as a call');

# A cursor that fails while fetched inside a savepoint never reaches
# ExecutorEnd; its baselines must not pile up (20 times, more than the
# per-backend stack holds) or be reused: later scans are still counted.
my $cursor_failures = join('', map { qq{
BEGIN;
DECLARE c CURSOR FOR SELECT id / (id - 5) FROM t123 WHERE id < 10 ORDER BY id;
SAVEPOINT s;
FETCH ALL c;
ROLLBACK TO s;
CLOSE c;
COMMIT;
} } 1 .. 20);
my ($ret, $out, $err) = $node->psql('postgres', "$plain\n$cursor_failures\n$lookup;\n$lookup;",
	on_error_stop => 0);
is(() = $err =~ /division by zero/g, 20, 'the 20 cursors failed');
is($node->safe_psql('postgres',
	"SELECT scans FROM pg_contention_index_scans WHERE query = '$lookup_text'"),
	'4', 'index scans after 20 failed cursors are still counted');

# Cursors closed in another order than they were opened: each executor's
# counts are matched to it, not popped as a stack (closing the first must
# not drop the second's baselines).
$node->safe_psql('postgres', q{
	CREATE TABLE t2 (id int, v text) WITH (autovacuum_enabled = off);
	CREATE INDEX idx_t2_id ON t2 (id);
	INSERT INTO t2 SELECT i, 'v' FROM generate_series(1, 1000) i;
	ANALYZE t2;
	SELECT pg_contention_reset();
});
$node->safe_psql('postgres', qq{$plain
BEGIN;
DECLARE first_opened CURSOR FOR SELECT * FROM t123 WHERE id < 10 ORDER BY id;
DECLARE second_opened CURSOR FOR SELECT * FROM t2 WHERE id < 10 ORDER BY id;
FETCH 2 FROM first_opened;
FETCH 2 FROM second_opened;
CLOSE first_opened;
CLOSE second_opened;
COMMIT;
});
is($node->safe_psql('postgres',
	"SELECT indexrelname, sum(scans), sum(entries_read) > 0 FROM pg_contention_index_scans
	  WHERE indexrelname IN ('idx_t123_id', 'idx_t2_id') GROUP BY 1 ORDER BY 1"),
	"idx_t123_id|1|t\nidx_t2_id|1|t", 'two cursors closed out of order are both counted');

# Each execution counts its own reads only: a cursor on a vacuumed table
# with no dead tuples, an index-only count and a DELETE on the same index
# between its fetches (the sequence a DBA reported: the cursor showed 521
# entries read, 501 "dead").
$node->safe_psql('postgres', q{
	CREATE TABLE v4 (i int PRIMARY KEY, pad text) WITH (autovacuum_enabled = off);
	INSERT INTO v4 SELECT i, 'x' FROM generate_series(1, 10000) i;
	VACUUM ANALYZE v4;
	SELECT pg_contention_reset();
});
$node->safe_psql('postgres', q{
	BEGIN;
	DECLARE c CURSOR FOR SELECT * FROM v4 WHERE i < 5000 ORDER BY i;
	FETCH 5 FROM c;
	SELECT count(*) FROM v4 WHERE i BETWEEN 9000 AND 9500;
	FETCH 5 FROM c;
	DELETE FROM v4 WHERE i = 9999;
	FETCH 5 FROM c;
	CLOSE c;
	COMMIT;
});
is($node->safe_psql('postgres',
	"SELECT scans, entries_read, live_fetched, dead_visits, other_entries_read
	   FROM pg_contention_index_scans WHERE query LIKE 'DECLARE c CURSOR%'"),
	'1|15|15|0|0', 'the cursor counts its 15 fetched entries, none dead');
is($node->safe_psql('postgres',
	"SELECT scans, entries_read, dead_visits FROM pg_contention_index_scans WHERE query LIKE 'DELETE FROM v4%'"),
	'1|1|0', 'the DELETE between its fetches counts its own entry, once');
is($node->safe_psql('postgres',
	"SELECT index_only_scans, entries_read, other_entries_read, dead_visits FROM pg_contention_index_scans
	  WHERE query LIKE 'SELECT count(*) FROM v4 WHERE i BETWEEN%'"),
	'1|501|0|0', 'the index-only count counts its 501 entries, none dead');
is($node->safe_psql('postgres',
	"SELECT calls, rows FROM pg_contention_statements WHERE query LIKE 'DECLARE c CURSOR%'"),
	'1|15', 'the cursor\'s rows are those of its three fetches');

# A cursor fetched from inside another client statement (a function's FETCH
# while the SELECT that calls it runs): its rows still go to the cursor's
# statement, not to the SELECT.
$node->safe_psql('postgres', q{
	CREATE FUNCTION v4_fetch(c refcursor, n int) RETURNS int LANGUAGE plpgsql AS $$
	DECLARE
		x int;
		got int := 0;
	BEGIN
		FOR k IN 1 .. n LOOP
			FETCH c INTO x;
			got := got + 1;
		END LOOP;
		RETURN got;
	END $$;
	SELECT pg_contention_reset();
});
$node->safe_psql('postgres', q{
	BEGIN;
	DECLARE c2 CURSOR FOR SELECT i FROM v4 WHERE i < 100 ORDER BY i;
	FETCH 5 FROM c2;
	SELECT v4_fetch('c2', 7) FROM v4 WHERE i <= 2;
	CLOSE c2;
	COMMIT;
});
is($node->safe_psql('postgres',
	"SELECT calls, rows FROM pg_contention_statements WHERE query LIKE 'DECLARE c2 CURSOR%'"),
	'1|19', 'the cursor\'s rows: 5 fetched directly and 14 by the function called for 2 rows');
is($node->safe_psql('postgres',
	"SELECT calls, rows FROM pg_contention_statements WHERE query LIKE 'SELECT v4_fetch(%'"),
	'1|2', 'the SELECT that called it returned its own 2 rows');

# Nested executors on the same index: a function whose statement reads the
# index, called for every row of an outer scan of that index.
$node->safe_psql('postgres', q{
	CREATE FUNCTION v4_pad(k int) RETURNS text LANGUAGE sql STABLE
		AS 'SELECT pad FROM v4 WHERE i = k + 1';
	SELECT pg_contention_reset();
});
$node->safe_psql('postgres', "$plain SELECT i, pad, v4_pad(i) FROM v4 WHERE i <= 20");
is($node->safe_psql('postgres',
	"SELECT scans, entries_read, dead_visits FROM pg_contention_index_scans WHERE query LIKE 'SELECT i, pad, v4_pad%'"),
	'1|20|0', 'the outer scan counts its 20 entries, not the function\'s');
is($node->safe_psql('postgres',
	"SELECT scans, entries_read, dead_visits FROM pg_contention_index_scans WHERE query LIKE 'SELECT pad FROM v4%'"),
	'20|20|0', 'the function\'s statement counts its own 20 lookups');

# The planner's natural plan for a lookup of many rows by a key with
# 100,000 dead versions is a bitmap scan: its dead visits are counted like
# a plain scan's, and the statement's buffers per row show their cost.
$node->safe_psql('postgres', q{
	CREATE TABLE dv (k int, v int, pad text) WITH (autovacuum_enabled = off);
	INSERT INTO dv SELECT 1, i, repeat('x', 50) FROM generate_series(1, 100) i;
	INSERT INTO dv SELECT 2 + i % 1000, i, repeat('x', 50) FROM generate_series(1, 100000) i;
	CREATE INDEX dv_k ON dv (k);
});
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM dv;');
$node->safe_psql('postgres', q{
	DO $$ BEGIN FOR n IN 1 .. 1000 LOOP UPDATE dv SET v = v + 1 WHERE k = 1; END LOOP; END $$;
	ANALYZE dv;
	SELECT pg_contention_reset();
});
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT * FROM dv WHERE k = 1'),
	qr/Bitmap Heap Scan on dv/, 'the natural plan is a bitmap scan');
$node->safe_psql('postgres', 'SELECT * FROM dv WHERE k = 1');
@s = split /\|/, $node->safe_psql('postgres',
	"SELECT scans, bitmap_scans, entries_read, live_fetched, dead_visits, bitmap_lossy_pages
	   FROM pg_contention_index_scans WHERE query = 'SELECT * FROM dv WHERE k = \$1'");
is("$s[0]|$s[1]|$s[2]|$s[3]|$s[4]", '1|1|100100|100|100000',
	'the bitmap scan read 100,100 entries, found 100 visible: 100,000 dead visits');
is($s[5], '0', 'no lossy page at this size');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_index_scans WHERE dead_visits > 0 AND relname = 'dv'
	    AND query = 'SELECT * FROM dv WHERE k = \$1'"),
	'1', 'so the README\'s query (dead_visits > 0) finds it');
my $before = $node->safe_psql('postgres',
	"SELECT rows, round(blks_per_row) FROM pg_contention_statements WHERE query = 'SELECT * FROM dv WHERE k = \$1'");
my ($rows, $per_row) = split /\|/, $before;
is($rows, '100', 'the statement returned 100 rows');
cmp_ok($per_row, '>', 5, "and read $per_row buffers per row with the dead versions");

# After VACUUM, with nothing holding the horizon: a few buffers per row.
$holder->query_safe('COMMIT');
$holder->quit;
$node->safe_psql('postgres', 'VACUUM dv; SELECT pg_contention_reset()');
$node->safe_psql('postgres', 'SELECT * FROM dv WHERE k = 1');
my $after = $node->safe_psql('postgres',
	"SELECT rows, blks_per_row FROM pg_contention_statements WHERE query = 'SELECT * FROM dv WHERE k = \$1'");
my ($rows_after, $per_row_after) = split /\|/, $after;
is($rows_after, '100', 'after VACUUM the same 100 rows');
cmp_ok($per_row_after, '<', $per_row / 4,
	"and $per_row_after buffers per row, against $per_row before");
is($node->safe_psql('postgres',
	"SELECT dead_visits FROM pg_contention_index_scans WHERE query = 'SELECT * FROM dv WHERE k = \$1'"),
	'0', 'and no dead visit');

# pg_contention_index_scans(dead_only) (1.4): the rows of the statements'
# indexes that visited dead entries, all of them: the same statement run
# by an application that met none is summed in, as the view sums it, and
# the metric per execution is over both; a statement that met none is left
# out.
$node->safe_psql('postgres', q{
	CREATE TABLE dd (k int, v text) WITH (autovacuum_enabled = off);
	CREATE INDEX dd_k ON dd (k);
	INSERT INTO dd SELECT g % 100, 'x' FROM generate_series(1, 10000) AS g;
	ANALYZE dd;
});
my $dd_holder = $node->background_psql('postgres');
$dd_holder->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1');
$node->safe_psql('postgres', "INSERT INTO dd SELECT 42, 'dead' FROM generate_series(1, 500); DELETE FROM dd WHERE v = 'dead'");
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
# One statement for both (a prepared one: PostgreSQL 13 keys statements
# by their text, constants included).
for my $app ([ 'clean', 1 ], [ 'dirty', 42 ])
{
	$node->safe_psql('postgres',
		"SET application_name = '$app->[0]'; $plain PREPARE q(int) AS SELECT * FROM dd WHERE k = \$1;"
		  . " EXECUTE q($app->[1]); EXECUTE q($app->[1]); EXECUTE q($app->[1]);");
}
$node->safe_psql('postgres', "SET application_name = 'clean'; $plain SELECT v FROM dd WHERE k = 1");
is($node->safe_psql('postgres',
	"SELECT string_agg(application_name || ' ' || scans || ' ' || (dead_visits > 0), ', ' ORDER BY application_name)
	   FROM pg_contention_index_scans(true) WHERE indexrelid = 'dd_k'::regclass AND strpos(query, '* FROM dd WHERE k') > 0"),
	'clean 3 false, dirty 3 true', 'dead_only: the statement\'s rows of both applications');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_index_scans(true) WHERE query LIKE 'SELECT v FROM dd%'"),
	'0', 'dead_only: not a statement that visited no dead entry');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_index_scans() WHERE query LIKE 'SELECT v FROM dd%'"),
	'1', 'which the whole store has');
my $whole = $node->safe_psql('postgres',
	"SELECT scans || ' ' || dead_visits || ' ' || round(dead_visits::numeric / scans, 3)
	   FROM pg_contention_index_scans WHERE indexrelid = 'dd_k'::regclass AND strpos(query, '* FROM dd WHERE k') > 0");
like($whole, qr/^6 [1-9]\d* /, 'the view sums both applications');
is($node->safe_psql('postgres',
	"SELECT sum(scans) || ' ' || sum(dead_visits) || ' ' || round(sum(dead_visits)::numeric / sum(scans), 3)
	   FROM pg_contention_index_scans(true) WHERE indexrelid = 'dd_k'::regclass AND strpos(query, '* FROM dd WHERE k') > 0"),
	$whole, 'dead_only gives the same sums');
is($node->safe_psql('postgres',
	"SELECT round(value::numeric, 3) FROM pg_contention_metrics('{index}')
	  WHERE labels ->> 'index' = 'public.dd_k'"),
	(split / /, $whole)[2], 'the metric per execution is over both applications\' executions');
$dd_holder->query_safe('COMMIT');
$dd_holder->quit;

# Masking: another role sees the counters, not the statement.
$node->safe_psql('postgres', 'CREATE ROLE reader LOGIN');
is($node->safe_psql('postgres',
	"SELECT bool_and(query = '<insufficient privilege>') AND bool_and(query_id IS NULL)
	   FROM pg_contention_index_scans",
	extra_params => [ '-U', 'reader' ]),
	't', 'others\' statements are masked');

done_testing();
