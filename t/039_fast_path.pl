# The statement counters' lock-free path under stress (capture/
# statement_count.c): each backend keeps the places of its recent
# statements' entries and counts into them without the store's LWLock,
# trusting an entry whose generation has not moved.  Here a store of 100
# statements is churned by four pgbench clients running 300 distinct
# statements (every entry evicted and its memory reused over and over)
# while another session resets the store ten times a second; a session
# that cached 60 entries before the churn then counts its statements
# again, and each must count exactly its own executions: a stale place
# taken for a live one would count into another statement's entry.  Under
# the assertion-enabled build (tools/test.sh --all) the path's assertions
# check every entry it trusts.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('fast_path');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.max_statements = 100
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION pg_contention');

# 60 statements of the session that keeps its entries' places.
# (Each statement of its own shape: a query id ignores constants and
# column names, so the i-th adds i terms.)
sub statements
{
	my ($name, $n) = @_;
	return join('', map { 'SELECT ' . join(' + ', (1) x $_) . " AS ${name}_$_;\n" } 1 .. $n);
}
my $mine = statements('mine', 60);
my $session = $node->background_psql('app');
$session->query_safe($mine);

# The churn: 300 other statements, and resets.
my $script = $node->basedir . '/churn.sql';
PostgreSQL::Test::Utils::append_to_file($script, statements('churn', 300));
my ($out, $err) = ('', '');
my $churn = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '8', '-f', $script, $node->connstr('app') ],
	'>', \$out, '2>', \$err);
my $resetter = $node->background_psql('app');
my ($resets, $evictions) = (0, 0);
while ($churn->pumpable)
{
	my $e = $resetter->query_safe('SELECT statement_evictions FROM pg_contention_info');
	$evictions = $1 if $e =~ /(\d+)/ && $1 > $evictions;
	$resetter->query_safe('SELECT pg_contention_reset()');
	$resets++;
	# Some of the session's cached entries are reused in between.
	$session->query_safe('SELECT 1 AS mine_1;') if $resets % 10 == 0;
	select(undef, undef, undef, 0.1);
	$churn->pump_nb;
}
$churn->finish;
like($out, qr/number of failed transactions: 0|processed: [1-9]/, 'the churn ran') or diag($err);
cmp_ok($resets, '>=', 10, "the store was reset $resets times meanwhile");
cmp_ok($evictions, '>', 0, "entries were evicted under the cached places (up to $evictions between resets)");

# Quiet: one reset, then the session counts its 60 statements three times.
$resetter->query_safe('SELECT pg_contention_reset()');
$session->query_safe($mine) for 1 .. 3;
is($node->safe_psql('app', q{
	SELECT count(*) || ' ' || min(calls) || ' ' || max(calls)
	  FROM pg_contention_statements WHERE query LIKE '% AS mine\_%'}),
	'60 3 3', 'each of the 60 statements counted exactly its three executions');
is($node->safe_psql('app', q{
	SELECT count(*) FROM pg_contention_statements WHERE query LIKE '% AS churn\_%'}),
	'0', 'and nothing of the churn counted after the reset');
$session->quit;
$resetter->quit;

ok(!$node->log_contains(qr/TRAP:|PANIC:|terminated by signal/), 'no failed assertion, no crash');
$node->stop;
done_testing();
