# Normalised statement texts group the findings: a psycopg 3 importer
# binds Python integers as int2 when small and int4 when larger, so one
# INSERT gets two query ids (pg_stat_statements splits it too); with more
# than 64 savepoints per transaction it overflows under both.  The
# findings show ONE subxact_overflow culprit with both query ids and the
# events of both summed, and one statement for subxact_near_overflow.
# (PostgreSQL 13 keys statements by their text: there the importer binds
# on the client side, so each constant makes its own query id, and the
# normalised text groups them the same way.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
if (system($python, '-c', 'import psycopg') != 0)
{
	plan skip_all => 'psycopg 3 is not installed (Debian: python3-psycopg)';
}

my $node = PostgreSQL::Test::Cluster->new('normalized');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
});
$node->start;
$node->safe_psql('postgres',
	'CREATE EXTENSION pg_contention; CREATE TABLE imp (id integer, v integer)');
my $client_side = $node->safe_psql('postgres', 'SHOW server_version_num') < 140000 ? 1 : 0;

# The importer: per transaction, $rows savepoints each followed by an
# INSERT; in odd transactions the second value is large (int4), in even
# ones small (int2).
my $importer = $node->basedir . '/importer.py';
open(my $fh, '>', $importer) or die "cannot write $importer: $!";
print $fh <<'EOF';
import sys
import psycopg

conninfo, transactions, rows, client_side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == '1'
with psycopg.connect(conninfo, application_name='importer') as conn:
    cur = psycopg.ClientCursor(conn) if client_side else conn.cursor()
    for tx in range(transactions):
        for i in range(rows):
            cur.execute("SAVEPOINT s")
            cur.execute("INSERT INTO imp VALUES (%s, %s)",
                        (i, 100000 + i if tx % 2 == 1 else i))
        conn.commit()
EOF
close($fh);

sub import_rows
{
	my ($transactions, $rows) = @_;
	my ($stdout, $stderr);
	my $ok = IPC::Run::run([ $python, $importer, $node->connstr('postgres'),
		$transactions, $rows, $client_side ], '>', \$stdout, '2>', \$stderr);
	ok($ok, "importer ran $transactions transactions of $rows savepoints") or diag($stderr);
}

my $text = 'INSERT INTO imp VALUES ($1, $2)';

# Four overflowing transactions, two under each query id.
import_rows(4, 70);
is($node->safe_psql('postgres', qq{
	SELECT count(DISTINCT query_id) >= 2, sum(overflow_events)
	  FROM pg_contention_statements WHERE query = '$text'}),
	't|4', 'one normalised text, several query ids, four overflow events between them');

my $overflow = qq{
	SELECT f.subject, f.evidence, f.details
	  FROM pg_contention_findings() AS f
	 WHERE f.problem = 'subxact_overflow'};
is($node->safe_psql('postgres', "SELECT count(*) FROM ($overflow) AS f"),
	'1', 'one subxact_overflow finding for the statement, not one per query id');
my $subject = $node->safe_psql('postgres', "SELECT subject FROM ($overflow) AS f");
like($subject, qr/^statement \Q$text\E \(query ids -?\d+, -?\d+/,
	'its subject is the normalised text with the query ids');
like($node->safe_psql('postgres', "SELECT evidence FROM ($overflow) AS f"),
	qr/^From \S+ to \S+: 4 overflow events;/, 'the events of both query ids are summed');
is($node->safe_psql('postgres', qq{
	SELECT (f.details->>'overflow_events')::int,
		   (SELECT jsonb_agg(q ORDER BY q) FROM jsonb_array_elements(f.details->'query_ids') AS q)
		   = (SELECT jsonb_agg(DISTINCT s.query_id) FROM pg_contention_statements AS s
			   WHERE s.query = '$text' AND s.overflow_events > 0)
	  FROM ($overflow) AS f}),
	'4|t', 'details: the summed events and every query id that overflowed');

# Close to the cache without overflowing: 50 savepoints (more than the
# warning level, 48).  One statement is its normalised text: the INSERT
# and the SAVEPOINT are two statements, whatever their query ids.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
import_rows(2, 50);
my $near = $node->safe_psql('postgres', q{
	SELECT evidence || '|' || (jsonb_array_length(details->'query_ids') >= 3)
	  FROM pg_contention_findings() WHERE problem = 'subxact_near_overflow'});
like($near, qr/ executions of 2 statements from /, 'near overflow: two statements (normalised texts)');
like($near, qr/\|true$/, 'with every query id (three, or one per constant on 13) in details');

# The index finding groups the same way: one lookup text whose key is
# bound as int2 for a small customer and int4 for a large one visits the
# dead versions of both keys behind a held transaction: one
# dead_tuple_index_scan finding naming both query ids.
$node->safe_psql('postgres', q{
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
	ANALYZE orders;
	SELECT pg_contention_reset();
});
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; SELECT txid_current()');
$node->safe_psql('postgres', q{
	INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 3000);
	INSERT INTO orders (customer, note) SELECT 100042, 'gone' FROM generate_series(1, 3000);
	DELETE FROM orders WHERE note = 'gone';
});
my $lookups = $node->basedir . '/lookups.py';
open($fh, '>', $lookups) or die "cannot write $lookups: $!";
print $fh <<'EOF';
import sys
import psycopg

with psycopg.connect(sys.argv[1], application_name='api') as conn:
    cur = psycopg.ClientCursor(conn) if sys.argv[2] == '1' else conn.cursor()
    for customer in (42, 100042, 42, 100042):
        cur.execute("SELECT id, note FROM orders WHERE customer = %s", (customer,))
        cur.fetchall()
        conn.commit()
EOF
close($fh);
{
	my ($stdout, $stderr);
	ok(IPC::Run::run([ $python, $lookups, $node->connstr('postgres'), $client_side ],
		'>', \$stdout, '2>', \$stderr), 'the lookups ran') or diag($stderr);
}
my $lookup_text = 'SELECT id, note FROM orders WHERE customer = $1';
my $index_finding = q{
	SELECT f.subject, f.details FROM pg_contention_findings() AS f
	 WHERE f.problem = 'dead_tuple_index_scan'};
is($node->safe_psql('postgres', "SELECT count(*) FROM ($index_finding) AS f"), '1',
	'one dead_tuple_index_scan finding for the lookup, not one per query id');
like($node->safe_psql('postgres', "SELECT subject FROM ($index_finding) AS f"),
	qr/^index public\.orders_customer scanned by \Q$lookup_text\E \(query ids -?\d+, -?\d+/,
	'its subject names the normalised text and both query ids');
is($node->safe_psql('postgres', qq{
	SELECT (f.details->>'executions')::int,
		   (SELECT jsonb_agg(q ORDER BY q) FROM jsonb_array_elements(f.details->'query_ids') AS q)
		   = (SELECT jsonb_agg(DISTINCT s.query_id) FROM pg_contention_statements AS s
			   WHERE s.query = '$lookup_text')
	  FROM ($index_finding) AS f}),
	'4|t', 'details: the executions of both query ids summed, and both ids');
# The worst execution's constants: bound parameters as the server logs
# them; without them (psql's simple protocol), the literals of the text,
# numbered as the normalised text numbers them.
like($node->safe_psql('postgres', "SELECT worst_literals FROM pg_contention_index_scans WHERE query = '$lookup_text' ORDER BY worst_literals LIMIT 1"),
	$client_side ? qr/^\$1 = 42$|^\$1 = 100042$/ : qr/^\$1 = '(42|100042)'$/,
	'worst_literals: the constant of a worst execution');
$node->safe_psql('postgres',
	'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT note FROM orders WHERE customer = 100042 AND id > -5');
is($node->safe_psql('postgres', q{SELECT query || ' | ' || worst_literals FROM pg_contention_index_scans
	WHERE query LIKE '%AND id >%'}),
	'SELECT note FROM orders WHERE customer = $1 AND id > $2 | $1 = 100042, $2 = -5',
	'a text\'s literals: the normalised text, and the worst execution\'s constants labelled');
$holder->query_safe('COMMIT');
$holder->quit;

# psycopg 3's nested transactions (issue 47, item 8): each level is a
# savepoint named by its depth, "_pg3_1" to "_pg3_70".  One row, shown as
# the pattern, counts every depth: its calls are the pattern's, not one
# name's; the overflow finding names the driver.  In the application's
# own database.
$node->safe_psql('postgres', 'CREATE DATABASE imports');
$node->safe_psql('imports', 'CREATE EXTENSION pg_contention; CREATE TABLE nested (depth integer)');
my $nested = $node->basedir . '/nested.py';
open($fh, '>', $nested) or die "cannot write $nested: $!";
print $fh <<'EOF';
import contextlib
import sys
import psycopg

with psycopg.connect(sys.argv[1], autocommit=True, application_name='importer') as conn:
    for tx in range(3):
        with contextlib.ExitStack() as stack:
            stack.enter_context(conn.transaction())
            for depth in range(1, 71):
                stack.enter_context(conn.transaction())
                conn.execute("INSERT INTO nested VALUES (%s)", (depth,))
EOF
close($fh);
my ($stdout, $stderr);
ok(IPC::Run::run([ $python, $nested, $node->connstr('imports') ], '>', \$stdout, '2>', \$stderr),
	'psycopg 3 ran three transactions 70 levels deep') or diag($stderr);
is($node->safe_psql('imports', q{SELECT string_agg(query || ' ' || calls, ', ' ORDER BY query)
	FROM pg_contention_statements WHERE query ~* '^(savepoint|release)'}),
	'RELEASE "_pg3_<n>" 210, SAVEPOINT "_pg3_<n>" 210',
	'the savepoints of every depth are one row each, shown as their pattern');
like($node->safe_psql('imports', q{SELECT subject FROM pg_contention_findings WHERE problem = 'subxact_overflow'}),
	qr/, savepoints by psycopg 3 nested transactions \(SAVEPOINT "_pg3_<n>"\)$/,
	'the overflow finding names the driver and the pattern');

$node->stop;
done_testing();
