# pg_contention's own sessions are not the workload: top lists neither a
# session of its client among the holders of the xmin horizon (a few
# milliseconds' snapshot that follows a real holder) nor its statements
# among those that ran on suboverflowed snapshots, while the
# application's holder and statements stay.  Nor are a DBA's monitoring
# queries (pg_stat_activity, pg_locks) among those who pay: they run on
# suboverflowed snapshots too, but read no table's rows; a statement that
# reads a table beside them still pays.  A session that merely takes
# the client's name is still listed once it blocks cleanup.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client);

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION pg_contention; CREATE TABLE side (id integer); INSERT INTO side VALUES (1)');

# The application: a writer idle in its transaction, overflowed (70
# savepoints), and a reader whose snapshots are suboverflowed meanwhile.
my $writer = $node->background_psql('shop');
my $writer_pid = $writer->query_safe('SELECT pg_backend_pid()');
$writer->query_safe("BEGIN;\n" . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));
# (A snapshot is suboverflowed once an XID later than the writer's has
# ended: before, the writer's is past its xmax.)
$node->safe_psql('shop', 'SELECT pg_catalog.txid_current()');
$node->safe_psql('shop', 'SET application_name = \'shop-api\'; SELECT count(*) FROM side') for 1 .. 2;

# Another pg_contention client beside it: its snapshot follows the
# writer's XID, and its statement runs on a suboverflowed snapshot too.
my $other = $node->background_psql('shop');
$other->query_safe("SET application_name = 'pg_contention'");
my $other_pid = $other->query_safe('SELECT pg_backend_pid()');
$other->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_contention_horizon;');
is($node->safe_psql('shop', "SELECT follows FROM pg_contention_horizon WHERE pid = $other_pid"), $writer_pid,
	'the other client follows the writer');
is($node->safe_psql('shop', q{SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_contention_statements
	WHERE suboverflowed_calls > 0 AND query LIKE 'SELECT count(*) FROM %'}), 'pg_contention,shop-api',
	'both the reader\'s and the client\'s statements ran on suboverflowed snapshots');

# The DBA's monitoring queries, in psql beside it; and a report that
# reads a table with them.
# (Not the writer's application, whose statements are the culprit's.)
$node->safe_psql('shop', q{SET application_name = 'psql'; SELECT pid, state, query FROM pg_stat_activity WHERE state <> 'idle'}) for 1 .. 2;
$node->safe_psql('shop', q{SET application_name = 'psql'; SELECT l.locktype, a.query FROM pg_catalog.pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted});
$node->safe_psql('shop', q{SET application_name = 'psql'; SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'});
$node->safe_psql('shop', q{SET application_name = 'reports'; SELECT a.pid, s.id FROM pg_stat_activity a, side s WHERE s.id = 1});
is($node->safe_psql('shop', q{SELECT count(*) FROM pg_contention_statements
	WHERE suboverflowed_calls > 0 AND (query LIKE '%pg_stat_activity%' OR query LIKE '%information_schema%')}), '4',
	'the monitoring queries ran on suboverflowed snapshots');
my $payers = $node->safe_psql('shop', q{SELECT string_agg(query, E'\n' ORDER BY query) FROM pg_contention_victims()
	WHERE kind = 'suboverflowed_snapshots'});
note($payers);
like($payers, qr/SELECT count\(\*\) FROM side/, 'who pays: the application\'s reader');
like($payers, qr/FROM pg_stat_activity a, side s/, 'who pays: a statement that reads a table beside a view');
unlike($payers, qr/pg_locks|information_schema|FROM pg_stat_activity WHERE/, 'who pays: not the monitoring queries');

my ($rc, $out, $err) = run_client($node, 'top', '-n', '1', '-d', 'shop');
is($rc, 0, 'top -n 1') or diag($err);
my ($holders) = $out =~ /(Holders of the xmin horizon.*?)\n\n/s;
my ($statements) = $out =~ /(Statements by pg_subtrans waits.*?)(\n\n|\z)/s;
note($holders // 'no holders section');
note($statements // 'no statements section');
like($holders, qr/\b$writer_pid\b/, 'holders: the writer is listed');
unlike($holders, qr/\b$other_pid\b/, 'holders: the other pg_contention client is not');
like($statements, qr/SELECT count\(\*\) FROM side/, 'statements: the application\'s reader is listed');
unlike($statements, qr/pg_contention_horizon/, 'statements: the client\'s own statement is not');

# A name is anyone's: the same session, holding past horizon_min_age,
# is listed.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.horizon_min_age = '1s'");
$node->reload;
$writer->query_safe('COMMIT');
ok($node->poll_query_until('shop', "SELECT blocks_cleanup FROM pg_contention_horizon WHERE pid = $other_pid"),
	'the session named pg_contention now holds by itself');
($rc, $out, $err) = run_client($node, 'top', '-n', '1', '-d', 'shop');
($holders) = $out =~ /(Holders of the xmin horizon.*?)\n\n/s;
like($holders, qr/\b$other_pid\b/, 'holders: a session named pg_contention that blocks cleanup is listed');

$other->query_safe('COMMIT');
$other->quit;
$writer->quit;
done_testing();
