# The sampler worker: it runs, survives SIGTERM (the postmaster restarts
# it), follows a reload of its settings, and keeps its stores bounded: the
# wait profile evicts and counts, the history ring wraps.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(wait_ticks);

my $node = PostgreSQL::Test::Cluster->new('sampler');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.max_profile_entries = 10
pg_contention.history_seconds = 5
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

ok($node->poll_query_until('postgres',
	'SELECT running AND ticks > 0 FROM pg_contention_sampler_status'),
	'the sampler runs and ticks');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_contention sampler'"),
	'1', 'it shows in pg_stat_activity as its own backend type');
is($node->safe_psql('postgres', 'SELECT period_ms, enabled FROM pg_contention_sampler_status'),
	'10|t', 'default period and on');

# SIGTERM: the postmaster starts a new worker.
my $pid = $node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
kill 'TERM', $pid;
ok($node->poll_query_until('postgres',
	"SELECT running AND pid <> $pid AND ticks > 0 FROM pg_contention_sampler_status"),
	'a new sampler runs after SIGTERM');

# SIGHUP: a new period, then off, then on again.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.sample_period = '50ms'");
$node->reload;
ok($node->poll_query_until('postgres',
	'SELECT period_ms = 50 FROM pg_contention_sampler_status'),
	'a reload changes the period');
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.sampler = off");
$node->reload;
ok($node->poll_query_until('postgres',
	'SELECT NOT enabled FROM pg_contention_sampler_status'),
	'a reload turns the sampler off');
my $ticks = $node->safe_psql('postgres', 'SELECT ticks FROM pg_contention_sampler_status');
$node->safe_psql('postgres', 'SELECT pg_sleep(0.3)');
is($node->safe_psql('postgres', 'SELECT ticks FROM pg_contention_sampler_status'),
	$ticks, 'no ticks while off');
$node->safe_psql('postgres', "ALTER SYSTEM RESET pg_contention.sampler");
$node->safe_psql('postgres', "ALTER SYSTEM RESET pg_contention.sample_period");
$node->reload;
ok($node->poll_query_until('postgres',
	"SELECT enabled AND period_ms = 10 AND ticks > $ticks FROM pg_contention_sampler_status"),
	'and on again');

# Profile eviction: distinct sleeping statements, each sampled as
# Timeout:PgSleep with its own query id, into a profile of 10, until one is
# evicted (a sleep the sampler misses on a busy machine adds nothing: more
# statements, not a longer sleep).
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
my ($entries, $evictions) = (0, 0);
for my $batch (0 .. 99)
{
	$node->safe_psql('postgres',
		join('', map { "SELECT pg_sleep(0.05)" . (', 1' x ($batch * 10 + $_)) . ";\n" } 1 .. 10));
	($entries, $evictions) = split /\|/, $node->safe_psql('postgres',
		'SELECT profile_entries, profile_evictions FROM pg_contention_sampler_status');
	last if $evictions > 0;
}
cmp_ok($entries, '<=', 10, "profile holds at most 10 entries ($entries)");
cmp_ok($evictions, '>', 0, "profile evictions counted ($evictions)");
is($node->safe_psql('postgres',
	"SELECT count(*) > 0 FROM pg_contention_waits WHERE wait_event = 'PgSleep' AND query_id IS NOT NULL
	    AND usename = current_user"),
	't', 'sleeping statements are in the profile with their role and query ids');
$node->safe_psql('postgres', 'CREATE ROLE reader LOGIN');
is($node->safe_psql('postgres',
	"SELECT count(*) > 0 AND bool_and(query_id IS NULL) FROM pg_contention_waits WHERE wait_event = 'PgSleep'",
	extra_params => [ '-U', 'reader' ]),
	't', 'another role sees the samples, not the query ids');
is($node->safe_psql('postgres',
	"SELECT round(sum(share)::numeric, 6) <= 1 FROM pg_contention_waits"),
	't', 'shares are fractions of all non-idle samples');

# History wrap-around: a ring of 5 seconds.  The reset above emptied it,
# and the eviction may have taken less than a second: wait for the first
# completed second before taking it as the oldest.
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM pg_contention_history')
  or die 'no second of history completed';
my $first = $node->safe_psql('postgres',
	'SELECT min(bucket_start) FROM pg_contention_history');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 5 AND min(bucket_start) > '$first' FROM pg_contention_history"),
	'the history keeps the newest 5 seconds');
# pg_contention_history(since) (1.4): the seconds from since on only (the
# newest one is still in the ring a moment later); NULL: all of them.
my $newest = $node->safe_psql('postgres', 'SELECT max(bucket_start) FROM pg_contention_history');
is($node->safe_psql('postgres',
	"SELECT count(*) > 0 AND bool_and(bucket_start >= '$newest')
	   FROM pg_contention_history('$newest')"),
	't', 'history(since): only the seconds that start at since or later');
is($node->safe_psql('postgres',
	"SELECT count(*) >= 4 FROM pg_contention_history(NULL)"),
	't', 'history(NULL): every second kept');
is($node->safe_psql('postgres',
	"SELECT bool_and(ticks > 0) AND bool_and(idle_samples > 0) FROM pg_contention_history"),
	't', 'buckets have ticks and idle samples (background processes)');
ok($node->poll_query_until('postgres',
	"SELECT count(subtrans_lookups) > 0 FROM pg_contention_history"),
	'and SLRU deltas');
is($node->safe_psql('postgres',
	"SELECT (spindelay_samples IS NULL) = (current_setting('server_version_num')::int < 170000)
	    AND (oldsnapshot_timemap_samples IS NULL) = (current_setting('server_version_num')::int >= 170000)
	   FROM pg_contention_history LIMIT 1"),
	't', 'wait events the server version lacks are NULL, not 0');

# Reset empties both stores.  A bucket can close in the second after the
# reset, but it holds only ticks taken after it: none may start before the
# second the reset happened in.
ok($node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM pg_contention_history'),
	'there is history to reset');
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM pg_contention_history h, pg_contention_info i
			 WHERE h.bucket_start < date_trunc('second', i.stats_reset))
		 + (SELECT count(*) FROM pg_contention_waits WHERE samples > 5)}),
	'0', 'reset clears the history and the profile');

# Processes other than client backends are looked at every tick (only
# client backends' PGPROCs are found through the slots they hold, see
# sampler.c): parallel workers blocked on a lock that their leader never
# takes (a PL/pgSQL function's table; the leader does not take part in the
# scan) are sampled in that wait, without a query id (a worker publishes
# no statement of its own).
$node->safe_psql('postgres', q{
	CREATE TABLE par AS SELECT g FROM generate_series(1, 200000) g;
	ALTER TABLE par SET (autovacuum_enabled = off);
	ANALYZE par;
	CREATE TABLE par_side (x int);
	CREATE FUNCTION par_side_rows(int) RETURNS bigint
		LANGUAGE plpgsql STABLE PARALLEL SAFE
		AS $$BEGIN RETURN (SELECT count(*) FROM par_side); END$$;
});
my $parallel = q{
	SET max_parallel_workers_per_gather = 2;
	SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0;
	SET min_parallel_table_scan_size = 0;
	SET parallel_leader_participation = off;
};
my $blocked = 'SELECT count(*) FROM par WHERE g % 100000 = 0 AND par_side_rows(g) = 0';
like($node->safe_psql('postgres', "$parallel EXPLAIN (COSTS OFF) $blocked"),
	qr/Gather.*Parallel Seq Scan on par/s, 'the function runs in parallel workers only');
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
my $side_locker = $node->background_psql('postgres');
$side_locker->query_safe('BEGIN; LOCK TABLE par_side IN ACCESS EXCLUSIVE MODE');
my $leader = $node->background_psql('postgres');
$leader->query_safe($parallel);
$leader->query_until(qr/started/, "\\echo started\n$blocked;\n");
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM pg_stat_activity
	 WHERE backend_type = 'parallel worker' AND wait_event_type = 'Lock'}),
	'a parallel worker waits for the lock');
wait_ticks($node, 20);
$side_locker->query_safe('COMMIT');
$leader->query_safe('SELECT 1');
my ($lock_samples, $without_id) = split /\|/, $node->safe_psql('postgres', q{
	SELECT sum(samples), bool_and(query_id IS NULL)
	  FROM pg_contention_waits WHERE wait_event_type = 'Lock'});
cmp_ok($lock_samples, '>=', 10, "parallel workers' lock wait was sampled ($lock_samples samples)");
is($without_id, 't', 'without a query id');
$leader->quit;
$side_locker->quit;

# The worker's memory is reported, and a reset does not need it to grow.
ok($node->safe_psql('postgres', 'SELECT memory_bytes > 0 FROM pg_contention_sampler_status') eq 't',
	'the worker reports the memory it holds');

done_testing();
