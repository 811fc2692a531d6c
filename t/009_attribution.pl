# Samples are attributed to the statement the backend is running, also
# before the server knows its query id: a session waiting in parse analysis
# for a lock (behind an ACCESS EXCLUSIVE lock) is counted in the wait
# profile under its own statement, not the one it ran before, and an idle
# session is credited with nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(wait_ticks);

my $node = PostgreSQL::Test::Cluster->new('attribution');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE locked_t (id int);
	INSERT INTO locked_t SELECT generate_series(1, 10);
});
ok($node->poll_query_until('postgres', 'SELECT ticks > 0 FROM pg_contention_sampler_status'),
	'the sampler runs');

# The waiter runs a statement first: that is the id that used to be
# published while it waited.
my $waiter = $node->background_psql('postgres');
$waiter->query_safe("SET application_name = 'waiter'");
$waiter->query_safe('SELECT 42 AS statement_before');

my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE locked_t IN ACCESS EXCLUSIVE MODE');

# Parse analysis opens the table: the waiter blocks there, before the
# server has computed its statement's query id.
$waiter->query_until(qr/waiting/,
	"\\echo waiting\nSELECT count(*) AS blocked_in_analysis FROM locked_t;\n");
ok($node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE application_name = 'waiter'"),
	'the waiter waits for the lock');
wait_ticks($node, 30);
$locker->query_safe('COMMIT');
ok($node->poll_query_until('postgres',
	"SELECT state = 'idle' FROM pg_stat_activity WHERE application_name = 'waiter'"),
	'the waiter got the lock and finished');
wait_ticks($node, 5);

my $id = $node->safe_psql('postgres',
	"SELECT query_id FROM pg_contention_statements WHERE query LIKE 'SELECT count(*) AS blocked_in_analysis%'");
isnt($id, '', "the blocked statement has a query id ($id)");
my ($samples, $ids, $own) = split /\|/, $node->safe_psql('postgres', qq{
	SELECT sum(samples), count(DISTINCT coalesce(query_id, 0)),
		   bool_and(query_id IS NOT DISTINCT FROM $id)
	  FROM pg_contention_waits WHERE wait_event_type = 'Lock'});
cmp_ok($samples, '>=', 20, "the lock wait was sampled ($samples samples)");
is($ids, 1, 'under one statement');
is($own, 't', 'the blocked statement itself, not the one before it');
# (It may have samples of its own, taken while it ran: not of the wait.)
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_contention_waits w JOIN pg_contention_statements s USING (query_id)
	 WHERE s.query LIKE 'SELECT $1 AS statement_before%' AND w.wait_event_type = 'Lock'}),
	'0', 'the statement before is credited with none of the wait');

$waiter->quit;
$locker->quit;
done_testing();
