# A holder of the xmin horizon is named for the dead index entries of an
# execution only if it was holding when that execution ran.  The
# application is in shop.
#
# (a) A session scans an index over dead entries that nothing holds, then
#     at once runs a long statement: its snapshot, taken a fraction of a
#     millisecond after the scan, blocks cleanup a second later, but the
#     finding names no holder (the rules compare the holder's start with
#     the execution on one clock: the evaluation's own start, earlier by
#     the milliseconds it has run, used to make it seem to have held).
# (b) A REPEATABLE READ transaction whose snapshot was taken before the
#     rows were deleted is named for the entries it does hold.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('holder_from');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
pg_contention.horizon_min_age = 1s
pg_contention.dead_visits_warning = 10
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE public.orders (k integer, v integer);
	CREATE INDEX orders_k ON public.orders (k);
	CREATE TABLE public.returns (k integer, v integer);
	CREATE INDEX returns_k ON public.returns (k);
	INSERT INTO public.orders SELECT 1, 1 FROM generate_series(1, 11);
	DELETE FROM public.orders;
});

my $scan = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT sum(v) FROM public.%s WHERE k = 1;';

# The holder a finding names for INDEX: its pid, or 'none'.
sub holder_named
{
	my ($index) = @_;
	return $node->safe_psql('shop', qq{
		SELECT coalesce(string_agg(coalesce(details #>> '{holder,pid}', 'none'), ','), 'no finding')
		  FROM pg_contention_findings
		 WHERE problem = 'dead_tuple_index_scan' AND subject LIKE 'index public.$index %'});
}

# ---- (a) The scan, then at once a long statement in the same session:
# a read of a table another session has locked, which waits with its
# snapshot taken (a LOCK TABLE takes none: the locker holds nothing).
$node->safe_psql('shop', 'CREATE TABLE public.gate (id integer)');
my $locker = $node->background_psql('shop');
$locker->query_safe('BEGIN; LOCK TABLE public.gate IN ACCESS EXCLUSIVE MODE');
my $session = $node->background_psql('shop');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$pid =~ s/\s+//g;
$session->query_until(qr/scanned/, sprintf($scan, 'orders') . "\n\\echo scanned\nSELECT count(*) FROM public.gate;\n");
ok($node->poll_query_until('shop', qq{
	SELECT blocks_cleanup FROM pg_contention_horizon WHERE pid = $pid}),
	'(a) the long statement\'s snapshot blocks cleanup');
is(holder_named('orders_k'), 'none',
	'(a) the finding for the scan before it names no holder');
$locker->query_safe('COMMIT');
$locker->quit;
$session->quit;

# ---- (b) A snapshot taken before the rows were deleted.
my $holder = $node->background_psql('shop');
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder_pid =~ s/\s+//g;
$node->safe_psql('shop', 'INSERT INTO public.returns SELECT 1, 1 FROM generate_series(1, 11)');
$holder->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM public.returns');
$node->safe_psql('shop', 'DELETE FROM public.returns');
ok($node->poll_query_until('shop', qq{
	SELECT blocks_cleanup FROM pg_contention_horizon WHERE pid = $holder_pid}),
	'(b) the older snapshot blocks cleanup');
$node->safe_psql('shop', sprintf($scan, 'returns'));
is(holder_named('returns_k'), $holder_pid, '(b) the finding names it for the entries it holds');
$holder->query_safe('COMMIT');
$holder->quit;

$node->stop;
done_testing();
