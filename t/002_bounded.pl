# Bounded shared memory: the event ring wraps and counts what it dropped,
# the statement hash evicts the least used entries and counts them, long
# statement texts are cut to pg_contention.max_query_length, and reset
# clears it all.  Small capacities make this quick.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(subtrans_only_differences);

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
	"SELECT calls FROM pg_contention_statements WHERE query = 'SELECT \$1 AS hot'"),
	'50', 'the most used statement was not evicted');

# Long texts are cut to max_query_length - 1 bytes.  The statement has a
# shape of its own (a query id no earlier statement has), so its entry is
# new and holds its own, long, text.
my $long = "SELECT 1 AS long_marker_" . ('x' x 40) . ", 2, 3, 4, 5, 6, 7, 8, 9 AS " . ('y' x 40);
$node->safe_psql('postgres', $long);
is($node->safe_psql('postgres',
	"SELECT octet_length(query) FROM pg_contention_statements WHERE query LIKE 'SELECT \$1 AS long_marker_%'"),
	'63', 'a statement text is cut to max_query_length - 1 bytes');
# An overflow whose statement is long: the event keeps the cut text.
$node->safe_psql('postgres', "BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO r VALUES ($_);\n" } 1 .. 64)
	  . "SAVEPOINT s65; INSERT INTO r SELECT 65 AS long_event_marker_" . ('z' x 60) . ";\nCOMMIT;\n");
is($node->safe_psql('postgres',
	"SELECT octet_length(query) FROM pg_contention_overflow_events WHERE query LIKE 'INSERT INTO r SELECT 65 AS long_event_marker_%'"),
	'63', 'an event text is cut to max_query_length - 1 bytes');

# An overflow inside a subtransaction that then fails is recorded at the
# subtransaction's abort, and counted against its statement at the next
# statement end, not inside the abort (counting can evict, which
# allocates): here the DO statement, whose entry only that count creates,
# in a hash kept full by eviction.
$node->safe_psql('postgres', distinct_statements('false'));
my $events_before = $node->safe_psql('postgres', 'SELECT events_written FROM pg_contention_info');
$node->safe_psql('postgres', q{
	DO $$
	BEGIN
		FOR i IN 1 .. 64 LOOP
			BEGIN INSERT INTO r VALUES (i); EXCEPTION WHEN others THEN NULL; END;
		END LOOP;
		BEGIN
			INSERT INTO r VALUES (65);
			PERFORM 1 / 0;
		EXCEPTION WHEN division_by_zero THEN NULL;
		END;
	END $$;
});
is($node->safe_psql('postgres', 'SELECT events_written FROM pg_contention_info'),
	$events_before + 1, 'the overflow in the failed subtransaction is recorded');
is($node->safe_psql('postgres',
	"SELECT overflow_events FROM pg_contention_statements WHERE query LIKE 'DO \$\$%'"),
	'1', 'and counted against its statement, into a full hash');

# Eviction while four clients update entries concurrently (their cached
# entry pointers are invalidated by each eviction): 120 statement shapes
# into a hash of 100, picked at random, each followed by the same hot
# statement.  The hot statement is never the least used, so it is never
# evicted: every one of its 1,200 executions must be counted, none lost to
# an update of an entry that was being evicted.
my %scripts;
for my $i (1 .. 120)
{
	$scripts{"shape_$i"} = "SELECT 1" . (', 2' x $i) . ";\nSELECT 'hot under eviction';\n";
}
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$node->pgbench('-n -c 4 -j 2 -t 300', 0, [qr{processed: 1200/1200}], [qr{^$}],
	'pgbench with 120 statement shapes', \%scripts);
($count, $evictions) = split /\|/, $node->safe_psql('postgres',
	'SELECT statements, statement_evictions FROM pg_contention_info');
cmp_ok($count, '<=', 100, "still at most 100 statements under concurrent eviction ($count)");
cmp_ok($evictions, '>', 0, "evictions happened meanwhile ($evictions)");
is($node->safe_psql('postgres',
	"SELECT calls FROM pg_contention_statements WHERE query = 'SELECT \$1'"),
	'1200', 'every execution of the hot statement counted exactly once');
cmp_ok($node->safe_psql('postgres',
	"SELECT sum(calls) FROM pg_contention_statements WHERE query LIKE 'SELECT \$1, \$2%'"),
	'<=', 1200, 'no execution counted twice');

# pg_contention_statements(subtrans_only) and pg_contention_index_scans
# (dead_only) read the flags of each entry's slot instead of every entry:
# the flags follow their entries through a restart (the saved store is
# loaded), an eviction that reuses their slots for other statements, and
# a reset; pg_contention_recent(notable_only) reads them too.  Each time
# the functions must return exactly what the filters of the full reads
# keep.
sub flagged_rows
{
	my $differ = subtrans_only_differences();
	my $dead_keys = q{userid, dbid, query_id, application_name, indexrelid, dead_visits};
	# pg_contention_recent(notable_only, by_application) too: the rows of the
	# full read a finding can use, and only those: a statement's row when it
	# ran suboverflowed, came near an overflow, caused one or is a
	# SAVEPOINT; an index's row when its scans met dead entries.
	return $node->safe_psql('postgres', qq{
		WITH full_rows AS MATERIALIZED (
			SELECT * FROM pg_contention_recent(300, false, true)),
		notable_in_full AS (
			SELECT dbid, userid, query_id, application_name, indexrelid FROM full_rows
			 WHERE (indexrelid IS NULL
					AND (suboverflowed_calls > 0 OR near_overflow_calls > 0
						 OR overflow_events > 0 OR query ~* '^\\s*savepoint\\s'))
				OR (indexrelid IS NOT NULL AND dead_visits > 0)),
		notable_keys AS (
			SELECT dbid, userid, query_id, application_name, indexrelid
			  FROM pg_contention_recent(300, true, true))
		SELECT (SELECT count(*) FROM pg_contention_statements(true)) || ' suboverflowed, '
			|| $differ || ' differ; '
			|| (SELECT count(*) FROM pg_contention_index_scans(true) WHERE dead_visits > 0) || ' dead, '
			|| (SELECT count(*) FROM (
				  (SELECT $dead_keys FROM pg_contention_index_scans(true)
				   EXCEPT ALL
				   SELECT $dead_keys FROM pg_contention_index_scans() AS s
					WHERE (dbid, query_id, indexrelid) IN
						  (SELECT dbid, query_id, indexrelid FROM pg_contention_index_scans()
							WHERE dead_visits > 0))
				  UNION ALL
				  (SELECT $dead_keys FROM pg_contention_index_scans() AS s
					WHERE (dbid, query_id, indexrelid) IN
						  (SELECT dbid, query_id, indexrelid FROM pg_contention_index_scans()
							WHERE dead_visits > 0)
				   EXCEPT ALL
				   SELECT $dead_keys FROM pg_contention_index_scans(true))) AS d)
			|| ' differ; '
			|| (SELECT count(*) FROM notable_keys) || ' notable, '
			|| (SELECT count(*) FROM (
				  (TABLE notable_keys EXCEPT ALL TABLE notable_in_full)
				  UNION ALL
				  (TABLE notable_in_full EXCEPT ALL TABLE notable_keys)) AS d) || ' differ'});
}
$node->safe_psql('postgres', q{
	SELECT pg_contention_reset();
	CREATE TABLE fl (k int, v int) WITH (autovacuum_enabled = off);
	CREATE INDEX fl_k ON fl (k);
});
# A session holds an overflowed cache and the xmin horizon; meanwhile
# another one reads (a suboverflowed snapshot) and looks up rows it just
# deleted (dead index entries).
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN;
" . join('', map { "SAVEPOINT s$_; INSERT INTO r VALUES ($_);
" } 1 .. 70));
$node->safe_psql('postgres', q{
	INSERT INTO fl SELECT 1, g FROM generate_series(1, 200) AS g;
	DELETE FROM fl;
});
$node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM r;
	SELECT * FROM fl WHERE k = 1;
});
# A driver's savepoint in a short transaction: notable by its text alone.
$node->safe_psql('postgres', 'BEGIN; SAVEPOINT driver; RELEASE driver; COMMIT');
$holder->query_safe('COMMIT');
$holder->quit;
my $flagged = flagged_rows();
like($flagged, qr/^[1-9]\d* suboverflowed, 0 differ; 1 dead, 0 differ; [1-9]\d* notable, 0 differ$/,
	"flagged: the statements run on suboverflowed snapshots, the lookup of dead entries ($flagged)");
$node->restart;
is(flagged_rows(), $flagged, 'after a restart: the loaded entries are flagged again');
# 300 other statements through a hash of 100: both entries are evicted and
# their slots taken by statements that never ran suboverflowed nor met a
# dead entry.
$node->safe_psql('postgres', distinct_statements('2'));
like(flagged_rows(), qr/^0 suboverflowed, 0 differ; 0 dead, 0 differ; \d+ notable, 0 differ$/,
	'after their eviction: nothing flagged in the slots reused');
$node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT * FROM fl WHERE k = 1;
});
like(flagged_rows(), qr/^0 suboverflowed, 0 differ; 1 dead, 0 differ; [1-9]\d* notable, 0 differ$/,
	'the lookup again, in a new entry: flagged (its first scan since the commit still visits the dead entries)');

# A statement's figures per index come from a pool of two index records
# per statement the store can hold: 200 here.  Forty statements of six
# index lookups each need 240, in a store far from full: the least used
# statements holding records are evicted to free theirs, and counted.  A
# statement that stays keeps all six indexes, each exact: the one run
# most often, and every other (none is left with only some of its
# indexes, none untracked).
$node->safe_psql('postgres', q{
	SELECT pg_contention_reset();
	CREATE TABLE six (a int, b int, c int, d int, e int, f int);
	INSERT INTO six SELECT g, g, g, g, g, g FROM generate_series(1, 100) AS g;
	CREATE INDEX six_a ON six (a); CREATE INDEX six_b ON six (b);
	CREATE INDEX six_c ON six (c); CREATE INDEX six_d ON six (d);
	CREATE INDEX six_e ON six (e); CREATE INDEX six_f ON six (f);
	ANALYZE six;
});
# One shape per number of columns (its own query id), six index scans
# (two columns: none is an index-only scan).
sub six_lookups
{
	my ($columns, $first) = @_;
	my $list = join(', ', ('a, b') x $columns);
	return join(' UNION ALL ', map { "SELECT " . ($_ eq 'a' ? $first : $list)
		  . " FROM six WHERE $_ = 1" } qw(a b c d e f)) . ";\n";
}
$node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off;\n"
	  . join('', map { six_lookups(1, 'a AS six_hot, b') } 1 .. 30)
	  . join('', map { six_lookups($_, join(', ', ('a, b') x $_)) } 2 .. 41));
# (The texts are cut at 63 bytes here: the statements are found by their
# indexes.)
my $six_rows = q{FROM pg_contention_index_scans() WHERE indexrelid::regclass::text LIKE 'six\__'};
my ($kept, $records_evictions) = split /\|/, $node->safe_psql('postgres',
	"SELECT count(DISTINCT query_id), (SELECT statement_evictions FROM pg_contention_info) $six_rows");
cmp_ok($records_evictions, '>', 0, "statements evicted to free index records ($records_evictions)");
is($kept + $records_evictions, 41, "only those were evicted: $kept kept");
is($node->safe_psql('postgres', q{
	SELECT count(*), min(scans), max(scans), sum(indexes_untracked)
	  FROM pg_contention_index_scans() WHERE query LIKE '%six_hot%'}),
	'6|30|30|0', 'the statement run most often kept its six indexes, every scan counted');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE n <> 6 OR least_scans <> most_scans),
		   sum(n) <= 200, sum(untracked)
	  FROM (SELECT query_id, count(*) AS n, min(scans) AS least_scans,
				   max(scans) AS most_scans, sum(indexes_untracked) AS untracked
			  $six_rows GROUP BY query_id) AS s}),
	'0|t|0', 'every statement kept has its six indexes, within the pool');
# The same store after a restart: saved, loaded, every figure the same.
my $index_rows = q{SELECT string_agg(concat_ws(':', query_id, indexrelid, scans,
	entries_read, live_fetched, dead_visits, indexes_untracked), ',' ORDER BY query_id, indexrelid)
	FROM pg_contention_index_scans()};
my $before_restart = $node->safe_psql('postgres', $index_rows);
$node->restart;
is($node->safe_psql('postgres', $index_rows), $before_restart,
	'after a restart: the same index figures');

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
