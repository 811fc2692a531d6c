# The sampler dozes on an idle server (one tick a second instead of one a
# period) and misses no start of activity: a client's statement wakes it
# when it starts, and it does not doze at all while a lock that a new
# statement could wait for is held, since such a wait can begin before
# anything wakes it (in parse analysis).  The worker says what it does at
# DEBUG1; the test reads the log, because any query would wake it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(wait_for_log_line);

my $node = PostgreSQL::Test::Cluster->new('doze');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
max_prepared_transactions = 2
log_min_messages = debug1
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
$node->safe_psql('postgres', 'CREATE TABLE doze_t (k int)');

# Two clients, connected now: a new connection wakes the sampler too.
my $client = $node->background_psql('postgres');
my $client_pid = $client->query_safe('SELECT pg_backend_pid()');
my $locker = $node->background_psql('postgres');
my $locker_pid = $locker->query_safe('SELECT pg_backend_pid()');

# Whether the log gets a line matching $re after $offset (moved past it).
my $offset = -s $node->logfile;
sub logged
{
	my ($re) = @_;
	my $after = wait_for_log_line($node, $re, $offset);
	$offset = $after if defined $after;
	return defined $after;
}

# ---- Nothing runs: it dozes.
ok(logged(qr/pg_contention sampler: dozing/), 'on an idle server the sampler dozes');

# ---- A statement starts: it wakes the sampler, whose first tick is at once.
$client->query_safe('SELECT pg_sleep(0.2) AS woke_it');
ok(logged(qr/pg_contention sampler: woken by process $client_pid\b/),
	'a statement that starts wakes the dozing sampler');
my $samples = $node->safe_psql('postgres', q{
	SELECT coalesce(sum(w.samples), 0)
	  FROM pg_contention_waits w JOIN pg_contention_statements s USING (query_id)
	 WHERE s.query LIKE '%AS woke_it%'});
cmp_ok($samples, '>', 0, "the statement that woke it was sampled ($samples samples)");

# ---- A lock others could wait for: it does not doze while it is held.
$offset = -s $node->logfile;
$locker->query_safe('BEGIN; LOCK TABLE doze_t IN ACCESS EXCLUSIVE MODE');
ok(logged(qr/pg_contention sampler: not dozing, process $locker_pid holds a lock others could wait for/),
	'while an idle transaction holds a lock, the sampler stays at its period');

# A wait that begins in parse analysis, before any hook could wake the
# sampler: it is sampled from its start, since the sampler never dozed.
$client->query_until(qr/waiting/,
	"\\echo waiting\nSELECT count(*) AS blocked_in_analysis FROM doze_t;\n");
ok($node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $client_pid"),
	'the client waits for the lock');
# The samples of a statement still in parse analysis are held until its
# query id is known (sampler.c); the history counts them at once.
ok($node->poll_query_until('postgres',
	'SELECT coalesce(sum(lock_samples), 0) > 0 FROM pg_contention_history'),
	'the lock wait is sampled');
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/pg_contention sampler: dozing/,
	'the sampler did not doze between the lock and the wait');
# From before the COMMIT: while the lock is held it cannot doze (above),
# and once calm it may doze at the very next tick, before this script
# could look at the log.
$offset = -s $node->logfile;
$locker->query_safe('COMMIT');
ok($node->poll_query_until('postgres',
	"SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $client_pid"),
	'the waiter got the lock and finished');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0
	  FROM pg_contention_waits w JOIN pg_contention_statements s USING (query_id)
	 WHERE s.query LIKE '%AS blocked_in_analysis%' AND w.wait_event_type = 'Lock'}),
	'and its samples go to the blocked statement');

# ---- Once the lock is gone it dozes again.
ok(logged(qr/pg_contention sampler: dozing/), 'after the lock is released it dozes again');

# ---- A prepared transaction's locks keep it awake too.
$offset = -s $node->logfile;
$locker->query_safe(
	"BEGIN; LOCK TABLE doze_t IN SHARE MODE; PREPARE TRANSACTION 'doze_p'");
ok(logged(qr/pg_contention sampler: not dozing, a prepared transaction holds a lock others could wait for/),
	'a prepared transaction holding a lock keeps the sampler at its period');
# The offset stays where the line above left it: the sampler kept
# counting calm ticks while the prepared transaction held its lock, so it
# dozes at its first tick after COMMIT PREPARED, possibly before this
# script could measure the log again (a CI run of 2026-12-03 missed it so).
$locker->query_safe("COMMIT PREPARED 'doze_p'");
ok(logged(qr/pg_contention sampler: dozing/), 'and it dozes once the prepared transaction is gone');

# ---- What the status says.
my ($dozes, $wakeups) = split /\|/, $node->safe_psql('postgres',
	'SELECT dozes, doze_wakeups FROM pg_contention_sampler_status');
cmp_ok($dozes, '>=', 3, "the status counts the dozes ($dozes)");
cmp_ok($wakeups, '>=', 1, "and the wake-ups by a client ($wakeups)");

# Sampling turned off ends a doze: the status never says dozing then.
$node->safe_psql('postgres', 'ALTER SYSTEM SET pg_contention.sampler = off');
$node->reload;
ok($node->poll_query_until('postgres',
	'SELECT NOT enabled AND NOT dozing FROM pg_contention_sampler_status'),
	'with sampling off the sampler does not doze');

$client->quit;
$locker->quit;
done_testing();
