# Other extensions' workers beside pg_contention: pg_wait_sampling's
# collector and pg_cron's launcher sleep in Extension waits all the time.
# An idle server must look idle (no active backends, no Extension or
# Timeout samples), a busy one busy, and a client's own sleep is still a
# statement someone waits for (active).  Debian's packages provide both
# neighbours (tools/test.sh and tools/chroot.sh install them).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test;

my $node = PostgreSQL::Test::Cluster->new('neighbours');
$node->init;
# The server's own pg_config (the test's PATH starts with its bindir).
my $libdir = `pg_config --pkglibdir`;
chomp $libdir;
# A server built from source (the assertion-enabled run of tools/cassert.sh)
# has no Debian packages of the neighbours: that run says so.
plan skip_all => 'no packaged neighbours for a server built from source'
  if $ENV{PGC_NO_NEIGHBOURS};
for my $lib ('pg_wait_sampling', 'pg_cron')
{
	BAIL_OUT("$lib is not installed: install Debian's package for it (tools/test.sh does)")
	  unless -f "$libdir/$lib.so";
}
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_wait_sampling, pg_cron, pg_stat_statements, pg_contention'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

# Right after the start a neighbour can still be starting or doing its
# first work (seen once on 18): wait until both are in their sleep.
ok($node->poll_query_until('postgres',
	"SELECT string_agg(wait_event_type, ',' ORDER BY backend_type)
	   FROM pg_stat_activity
	  WHERE backend_type IN ('pg_wait_sampling collector', 'pg_cron launcher')",
	'Extension,Extension'), 'both neighbours sleep in Extension waits');

# Figures over whole seconds that started after this moment.  One session
# waits for them, idle (ClientRead) between its looks every half second:
# a new connection per look (poll_query_until) would be active while it
# starts, and on a slow machine that alone made an idle server look busy.
my $watcher = $node->background_psql('postgres');
sub seconds_since
{
	my ($since, $n) = @_;
	my $have = 0;
	for (1 .. 2 * $PostgreSQL::Test::Utils::timeout_default)
	{
		$have = $watcher->query_safe(
			"SELECT count(*) >= $n FROM pg_contention_history WHERE bucket_start >= '$since'");
		last if $have eq 't';
		select(undef, undef, undef, 0.5);
	}
	die "the history does not advance" unless $have eq 't';
	return $watcher->query_safe(
		"SELECT round(avg(avg_active_backends)::numeric, 2), sum(extension_samples),
				sum(timeout_samples), sum(idle_samples) > 0
		   FROM pg_contention_history WHERE bucket_start >= '$since'");
}

my $start = $watcher->query_safe("SELECT date_trunc('second', now()) + interval '1 second'");
my ($active, $extension, $timeout, $some_idle) = split /\|/, seconds_since($start, 3);
cmp_ok($active, '<', 0.2, "an idle server has no active backends (measured $active)");
is($extension, '0', 'no Extension samples: the neighbours\' sleep is idle');
is($timeout, '0', 'no Timeout samples either');
is($some_idle, 't', 'their samples are counted as idle');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_waits WHERE wait_event_type = 'Extension'"),
	'0', 'the wait profile has no Extension entry');

# A client's pg_sleep is a statement running: active, class Timeout.  It
# sleeps until the seconds are measured (a fixed sleep could end first on
# a slow machine), and they start once it sleeps.
my $sleeper = $node->background_psql('postgres');
my $sleeper_pid = $sleeper->query_safe('SELECT pg_backend_pid()');
$sleeper->query_until(qr/sleeping/, "\\echo sleeping\nSELECT pg_sleep(600);\n");
$node->poll_query_until('postgres',
	"SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $sleeper_pid")
  or die 'the client does not sleep';
$start = $watcher->query_safe("SELECT date_trunc('second', now()) + interval '1 second'");
($active, $extension, $timeout) = split /\|/, seconds_since($start, 2);
cmp_ok($active, '>=', 0.8, "a client in pg_sleep is active (measured $active)");
cmp_ok($timeout, '>', 0, 'in class Timeout');
is($extension, '0', 'the neighbours still add nothing');
# Its psql stops at the cancelled statement (ON_ERROR_STOP): ended, not quit.
$node->safe_psql('postgres', "SELECT pg_terminate_backend($sleeper_pid)");
$sleeper->{run}->kill_kill;

# A busy server: two pgbench clients, the neighbours beside them.  Each
# transaction is server work of about a tenth of a second, so the clients
# are active whatever the machine's speed or load (with pgbench -S, a
# client starved of CPU left its backend idle in ClientRead most of the
# time on a busy machine: 0.20 active backends).
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', $node->connstr('postgres') ],
	'pgbench -i');
my $script = PostgreSQL::Test::Utils::tempdir() . '/busy.sql';
open(my $fh, '>', $script) or die "$script: $!";
print $fh "SELECT count(*) FROM generate_series(1, 1000000);\n";
close($fh);
my $out = '';
local $ENV{PGAPPNAME} = 'pgbench';
# Until the seconds are measured (killed then), however long that takes.
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-T', '600', '-f', $script, $node->connstr('postgres') ],
	'>', \$out, '2>', \$out);
$node->poll_query_until('postgres',
	"SELECT count(*) >= 2 FROM pg_stat_activity WHERE application_name = 'pgbench'")
  or die 'pgbench did not start';
$start = $watcher->query_safe("SELECT date_trunc('second', now()) + interval '1 second'");
($active, $extension) = split /\|/, seconds_since($start, 2);
cmp_ok($active, '>=', 0.5, "a busy server is busy (measured $active)");
is($extension, '0', 'and none of its activity is the neighbours\' sleep');
$bench->kill_kill;
$watcher->quit;
ok($node->safe_psql('postgres',
	"SELECT sum(samples) FILTER (WHERE wait_event_type IS NULL OR wait_event_type <> 'Extension') > 0
	    AND count(*) FILTER (WHERE wait_event_type = 'Extension') = 0
	   FROM pg_contention_waits") eq 't',
	'the profile holds pgbench\'s samples and no Extension samples');

# The incidents worker compiles nothing, whatever the server's JIT
# settings: with JIT on at every threshold 0, its queries (the findings
# query, seen by pg_stat_statements) run without it.
SKIP:
{
	skip 'pg_stat_statements reports JIT from PostgreSQL 15', 2
	  if $node->safe_psql('postgres', 'SHOW server_version_num') < 150000;
	skip 'this server has no JIT', 2
	  if $node->safe_psql('postgres', 'SELECT pg_jit_available()') ne 't';
	$node->safe_psql('postgres', q{
		CREATE EXTENSION pg_stat_statements;
		ALTER SYSTEM SET jit = on;
		ALTER SYSTEM SET jit_above_cost = 0;
		ALTER SYSTEM SET jit_inline_above_cost = 0;
		ALTER SYSTEM SET jit_optimize_above_cost = 0;
		ALTER SYSTEM SET pg_contention.incident_interval = '1s';
	});
	$node->reload;
	$node->safe_psql('postgres', 'SELECT pg_stat_statements_reset()');
	PgContention::Test::evaluated_twice($node);
	is($node->safe_psql('postgres',
			"SELECT count(*) > 0 AND coalesce(sum(jit_functions), 0) = 0 FROM pg_stat_statements
			  WHERE strpos(query, 'pg_contention_' || 'incident_key') > 0"),
		't', 'the incidents worker evaluated without JIT');
	# While a client's query is compiled: the settings took.
	$node->safe_psql('postgres', 'SELECT count(*) FROM pg_catalog.pg_class');
	is($node->safe_psql('postgres',
			"SELECT sum(jit_functions) > 0 FROM pg_stat_statements
			  WHERE query = 'SELECT count(*) FROM pg_catalog.pg_class'"),
		't', 'a client\'s query is compiled with these settings');
}

$node->stop;
done_testing();
