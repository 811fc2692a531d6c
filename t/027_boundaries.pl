# Statement boundaries come from the statements the client sends, not from
# transactions: the waits of a procedure, a DO block, VACUUM and CREATE
# INDEX CONCURRENTLY after the transactions they end inside are still
# theirs; the executor that CREATE TABLE AS or EXPLAIN ANALYZE runs inside
# a transaction block is nested in it; and a connection that sends one
# statement, blocked in parse analysis, and leaves right after, is credited
# with the wait.
#
# Each statement waits twice, on locks the test holds and releases, once
# before and once after the boundary that used to end it, and the test
# waits for the sampler to see each wait: the waits must land on one
# query id, the statement's, not on NULL and not on the next statement's
# (where the samples after the boundary went before).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(wait_ticks);

my $node = PostgreSQL::Test::Cluster->new('boundaries');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE ROLE bound LOGIN;
	GRANT pg_read_all_stats TO bound;
	CREATE TABLE lockme (id int);
	CREATE TABLE vac_t (id int);
	CREATE TABLE cic_t (a int);
	INSERT INTO lockme VALUES (1);
	GRANT ALL ON lockme TO bound;
	ALTER TABLE vac_t OWNER TO bound;	-- VACUUM and CREATE INDEX need it
	ALTER TABLE cic_t OWNER TO bound;
	GRANT CREATE ON SCHEMA public TO bound;
	CREATE PROCEDURE two_waits() LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_advisory_lock(1);
		COMMIT;
		PERFORM pg_advisory_lock(2);
		PERFORM pg_advisory_unlock_all();
	END $$;
	GRANT EXECUTE ON PROCEDURE two_waits() TO bound;
});
ok($node->poll_query_until('postgres', 'SELECT ticks > 0 FROM pg_contention_sampler_status'),
	'the sampler runs');

# Wait until the role's session waits for a lock the condition picks (a
# condition on pg_locks l), then let the sampler see it for a while.
sub see_wait_for
{
	my ($condition, $name) = @_;
	ok( $node->poll_query_until('postgres', qq{
			SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
							WHERE a.usename = 'bound' AND NOT l.granted
							  AND $condition)}),
		$name);
	wait_ticks($node, 20);
}

# The same, for a lock of a type.
sub see_lock_wait
{
	my ($locktype, $what) = @_;
	see_wait_for("l.locktype = '$locktype'", "$what: the statement waits ($locktype)");
}

# The Lock samples of the role since the last reset: query id -> samples.
sub lock_samples
{
	my %ids;
	for my $row (split /\n/, $node->safe_psql('postgres', q{
		SELECT coalesce(query_id::text, 'NULL'), sum(samples)
		  FROM pg_contention_waits
		 WHERE wait_event_type = 'Lock' AND usename = 'bound'
		 GROUP BY 1}))
	{
		my ($id, $n) = split /\|/, $row;
		$ids{$id} = $n;
	}
	return %ids;
}

sub statement_id
{
	my ($like) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT string_agg(query_id::text, ',') FROM pg_contention_statements
		 WHERE query LIKE '$like' AND userid = 'bound'::regrole});
}

# Both waits of the statement under one query id, its own.
sub check_one_id
{
	my ($what, $next_like) = @_;
	wait_ticks($node, 5);
	my %ids = lock_samples();
	my @ids = sort keys %ids;
	is(scalar(@ids), 1, "$what: every lock wait under one query id ("
		  . join(', ', map { "$_: $ids{$_}" } @ids) . ')');
	isnt($ids[0], 'NULL', "$what: not under NULL");
	if (defined $next_like)
	{
		my $next = statement_id($next_like);
		isnt($next, '', "$what: the next statement was counted");
		ok(!grep({ $_ eq $next } @ids), "$what: not under the next statement ($next)");
	}
	return $ids[0];
}

my $holder = $node->background_psql('postgres');
my $session = $node->background_psql('postgres', extra_params => [ '-U', 'bound' ]);

# ---- CALL with a COMMIT inside ----
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$holder->query_safe('SELECT pg_advisory_lock(1), pg_advisory_lock(2)');
$session->query_until(qr/started/, "\\echo started\nCALL two_waits();\n");
see_lock_wait('advisory', 'CALL, before its COMMIT');
$holder->query_safe('SELECT pg_advisory_unlock(1)');
see_wait_for("l.objid = 2",
	'CALL: waits again after its COMMIT');
$holder->query_safe('SELECT pg_advisory_unlock(2)');
$session->query_safe('SELECT 42 AS after_call');
check_one_id('CALL with COMMIT', 'SELECT $1 AS after_call%');

# ---- DO with a COMMIT inside ----
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$holder->query_safe('SELECT pg_advisory_lock(1), pg_advisory_lock(2)');
$session->query_until(qr/started/, q{\echo started
DO $$ BEGIN PERFORM pg_advisory_lock(1); COMMIT; PERFORM pg_advisory_lock(2); PERFORM pg_advisory_unlock_all(); END $$;
});
see_lock_wait('advisory', 'DO, before its COMMIT');
$holder->query_safe('SELECT pg_advisory_unlock(1)');
see_wait_for("l.objid = 2",
	'DO: waits again after its COMMIT');
$holder->query_safe('SELECT pg_advisory_unlock(2)');
$session->query_safe('SELECT 43 AS after_do');
check_one_id('DO with COMMIT', 'SELECT $1 AS after_do%');

# ---- VACUUM: it commits before it takes its first table's lock ----
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$holder->query_safe('BEGIN; LOCK TABLE vac_t IN SHARE UPDATE EXCLUSIVE MODE');
$session->query_until(qr/started/, "\\echo started\nVACUUM vac_t;\n");
see_lock_wait('relation', 'VACUUM');
$holder->query_safe('COMMIT');
$session->query_safe('SELECT 44 AS after_vacuum');
check_one_id('VACUUM', 'SELECT $1 AS after_vacuum%');

# ---- CREATE INDEX CONCURRENTLY: waits for writers after its commits ----
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$holder->query_safe('BEGIN; INSERT INTO cic_t VALUES (1)');
$session->query_until(qr/started/, "\\echo started\nCREATE INDEX CONCURRENTLY cic_i ON cic_t (a);\n");
see_lock_wait('virtualxid', 'CREATE INDEX CONCURRENTLY');
$holder->query_safe('COMMIT');
$session->query_safe('SELECT 45 AS after_cic');
check_one_id('CREATE INDEX CONCURRENTLY', 'SELECT $1 AS after_cic%');

# ---- CREATE TABLE AS and EXPLAIN ANALYZE in a transaction block ----
# The first wait is in parse analysis (the table), the second in the
# executor the utility statement runs (the advisory lock): the executor is
# nested in the statement, not a statement of its own.
for my $case (
	[ 'CREATE TABLE AS', 'CREATE TABLE ctas_t AS SELECT id FROM lockme WHERE pg_advisory_lock(1) IS NOT NULL' ],
	[ 'EXPLAIN ANALYZE', 'EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM lockme WHERE pg_advisory_lock(1) IS NOT NULL' ])
{
	my ($what, $sql) = @$case;
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
	$holder->query_safe('BEGIN; LOCK TABLE lockme IN ACCESS EXCLUSIVE MODE; SELECT pg_advisory_lock(1)');
	$session->query_safe('BEGIN');
	$session->query_until(qr/started/, "\\echo started\n$sql;\n");
	see_lock_wait('relation', "$what in a block, in parse analysis");
	$holder->query_safe('COMMIT');	# the table; the advisory lock stays
	see_wait_for("l.locktype = 'advisory'",
		"$what in a block: waits again in its executor");
	$holder->query_safe('SELECT pg_advisory_unlock_all()');
	$session->query_safe('SELECT pg_advisory_unlock_all()');
	$session->query_safe('COMMIT');
	check_one_id("$what in a block");
}

# ---- REFRESH MATERIALIZED VIEW in a transaction block ----
# Its executor fills the new heap, then the view's index is built again:
# the index expression waits on an advisory lock, after the executor has
# ended (where the statement used to end in a block).
$node->safe_psql('postgres', q{
	CREATE FUNCTION wait_for_two(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
	BEGIN
		PERFORM pg_advisory_lock(2);
		PERFORM pg_advisory_unlock(2);
		RETURN i;
	END $$;
	CREATE MATERIALIZED VIEW mv AS SELECT id FROM lockme;
	CREATE INDEX mv_i ON mv (wait_for_two(id));
	ALTER MATERIALIZED VIEW mv OWNER TO bound;
});
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$holder->query_safe('BEGIN; SELECT count(*) FROM mv; SELECT pg_advisory_lock(2)');
$session->query_safe('BEGIN');
$session->query_until(qr/started/, "\\echo started\nREFRESH MATERIALIZED VIEW mv;\n");
see_lock_wait('relation', 'REFRESH MATERIALIZED VIEW in a block, for its lock');
$holder->query_safe('COMMIT');	# the view; the advisory lock stays
see_wait_for("l.locktype = 'advisory'",
	'REFRESH MATERIALIZED VIEW in a block: waits again in its index build, after its executor');
$holder->query_safe('SELECT pg_advisory_unlock_all()');
$session->query_safe('COMMIT');
$session->query_safe('SELECT 46 AS after_refresh');
check_one_id('REFRESH MATERIALIZED VIEW in a block', 'SELECT $1 AS after_refresh%');

# ---- a connection that sends one statement and leaves ----
# Blocked in parse analysis (the table), it runs briefly once the lock is
# released and the connection closes at once: the sampler may never see
# it running, and the exit record it leaves behind says which statement
# the held samples were waiting for.  In the third case the sampler is
# stopped from before the lock is released until the connection and
# several after it (which take the same PGPROC: the free list is LIFO)
# have come and gone: the record must outlive them.
my $sampler_pid = $node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
for my $case (
	[ 'one statement', [ '-c', 'SELECT count(*) AS one_shot FROM lockme' ] ],
	[ 'a brief statement, then the blocked one',
		[ '-c', 'SELECT 1 AS brief_first', '-c', 'SELECT count(*) AS one_shot FROM lockme' ] ],
	[ 'one statement, other connections before the sampler looks',
		[ '-c', 'SELECT count(*) AS one_shot FROM lockme' ], 'stop' ])
{
	my ($what, $args, $stop) = @$case;
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
	$holder->query_safe('BEGIN; LOCK TABLE lockme IN ACCESS EXCLUSIVE MODE');
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres') . ' user=bound', @$args ],
		'>', \$out, '2>', \$err);
	see_lock_wait('relation', "$what: in parse analysis");
	ok(kill('STOP', $sampler_pid), "$what: SIGSTOP the sampler") if $stop;
	$holder->query_safe('COMMIT');
	$h->finish;
	is($h->result(0), 0, "$what: psql finished ($err)");
	ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE usename = 'bound' AND query LIKE '%one_shot%'"),
		"$what: the connection is gone");
	if ($stop)
	{
		# Connections as the role, each in the PGPROC the last one left.
		$node->safe_psql('postgres', 'SELECT 1', extra_params => [ '-U', 'bound' ])
		  for 1 .. 5;
		ok(kill('CONT', $sampler_pid), "$what: SIGCONT the sampler");
	}
	my $id = statement_id('SELECT count(*) AS one_shot FROM lockme%');
	isnt($id, '', "$what: the statement was counted");
	my $got = check_one_id($what);
	is($got, $id, "$what: the wait is the blocked statement's");
}

$session->quit;
$holder->quit;
done_testing();
