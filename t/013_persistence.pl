# Persistence: events, statements, the wait profile and the history survive
# a clean restart (saved at shutdown) and a crash (saved by the sampler
# every save_interval); a damaged, short or foreign file is ignored with one
# LOG line and never stops the server; a smaller store keeps what fits and
# counts the rest.  Faults: SIGKILL of a backend in an overflowed
# transaction and of the sampler while views are read; the sampler ignores
# pg_cancel_backend() and leaves without a FATAL; settings beyond the
# machine's memory stop the start with a message that names them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(crash_recovered);

my $node = PostgreSQL::Test::Cluster->new('persist');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.save_interval = '1s'
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE TABLE t (id int)');
my $file = $node->data_dir . '/pg_stat_tmp/pg_contention.stat';

sub overflow
{
	my ($n) = @_;
	$node->safe_psql('postgres', "BEGIN;\n"
		  . join('', map { "SAVEPOINT s$_; INSERT INTO t VALUES ($_);\n" } 1 .. $n)
		  . "COMMIT;");
}

sub figures
{
	return $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM pg_contention_overflow_events) || ' events, '
			|| (SELECT coalesce(sum(calls), 0) FROM pg_contention_statements
				 WHERE query LIKE 'INSERT INTO t VALUES%') || ' inserts, '
			|| (SELECT count(*) > 0 FROM pg_contention_waits WHERE wait_event = 'PgSleep') || ' sleep profiled'});
}

# Something in every store: two overflow events, 140 inserts, a sampled
# pg_sleep, and some seconds of history.
overflow(70);
overflow(70);
# Slept until the sampler has seen a sleep (a busy machine can leave one
# sleep unsampled): a poll, not a fixed spell.
for (1 .. 100)
{
	$node->safe_psql('postgres', 'SELECT pg_sleep(0.5)');
	last if $node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_contention_waits WHERE wait_event = 'PgSleep'") eq 't';
}
ok($node->poll_query_until('postgres', 'SELECT count(*) >= 3 FROM pg_contention_history'),
	'three seconds of history');
my $before = figures();
is($before, '2 events, 140 inserts, true sleep profiled', 'the stores hold something');
my $history_before = $node->safe_psql('postgres', 'SELECT min(bucket_start) FROM pg_contention_history');
my $reset_before = $node->safe_psql('postgres', 'SELECT stats_reset FROM pg_contention_info');

# A clean restart: saved at shutdown, loaded at start.
$node->restart;
is(figures(), $before, 'after a clean restart: the same events, statement counts and profile');
is($node->safe_psql('postgres', 'SELECT min(bucket_start) FROM pg_contention_history'),
	$history_before, 'the history keeps its timestamps');
is($node->safe_psql('postgres', 'SELECT stats_reset FROM pg_contention_info'), $reset_before,
	'the last reset is remembered');
is($node->safe_psql('postgres',
	'SELECT last_loaded IS NOT NULL AND loaded_file_saved_at <= last_loaded FROM pg_contention_info'),
	't', 'pg_contention_info says when the file was written and loaded');
ok($node->log_contains(qr/pg_contention: loaded 2 overflow events, \d+ statements, \d+ wait profile entries, \d+ seconds of history/),
	'one LOG line says what was loaded');

# A copy never presents evidence it did not collect: pg_basebackup of the
# running server (whose file the sampler keeps up to date) gives a standby
# that starts with empty stores, while the server keeps its own.
ok(-s $file, 'the running server has its file');
$node->backup('copy');
my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($node, 'copy', has_streaming => 1);
ok(!-e $copy->data_dir . '/pg_stat_tmp/pg_contention.stat', 'the base backup has no stores\' file');
$copy->start;
is($copy->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM pg_contention_overflow_events) || ' events, '
		|| (SELECT count(*) FROM pg_contention_statements WHERE query LIKE 'INSERT INTO t VALUES%') || ' inserts, '
		|| (SELECT count(*) FROM pg_contention_waits WHERE wait_event = 'PgSleep') || ' sleeps, '
		|| (SELECT count(*) FROM pg_contention_history WHERE bucket_start <= '$history_before') || ' seconds of the primary, '
		|| (SELECT last_loaded IS NULL FROM pg_contention_info)}),
	'0 events, 0 inserts, 0 sleeps, 0 seconds of the primary, true',
	'a new standby from a base backup: none of the primary\'s events, statements, profile or history');
# Promoted, restarted: still none of them (its own saves are its own).
$copy->promote;
$copy->restart;
is($copy->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM pg_contention_overflow_events) + (SELECT count(*) FROM pg_contention_statements WHERE query LIKE 'INSERT INTO t VALUES%')}),
	'0', 'promoted and restarted: none of them either');
$copy->stop;
is(figures(), $before, 'the server keeps its own');

# An immediate stop: the postmaster still saves as it exits.
$node->stop('immediate');
$node->start;
is(figures(), $before, 'after an immediate stop: the same events, statement counts and profile');

# A crash: what the sampler saved before it is back.
overflow(70);
my $marker = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
ok($node->poll_query_until('postgres', "SELECT last_saved > '$marker' FROM pg_contention_info"),
	'the sampler saved after the third overflow');
my $saved = figures();
is($saved, '3 events, 210 inserts, true sleep profiled', 'three events before the crash');
# The backend killed writes elsewhere: what it adds after the last save
# is lost with it, and must not make the comparison racy.
$node->safe_psql('postgres', 'CREATE TABLE v (id int)');
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim_pid =~ s/\s+//g;
$victim->query_safe('BEGIN; INSERT INTO v VALUES (1)');
my $log_offset = -s $node->logfile;
kill 'KILL', $victim_pid;
$victim->{run}->kill_kill;
ok(crash_recovered($node, $log_offset), 'the server recovered from the crash');
ok($node->log_contains(qr/terminated by signal 9/, $log_offset), 'it was a crash');
is(figures(), $saved, 'after the crash: what was saved is back');
ok($node->log_contains(qr/pg_contention: loaded 3 overflow events/, $log_offset),
	'loaded at the crash restart');

# Faults while the views are read: a reader runs every view in a loop
# while a backend in the middle of an overflowed transaction, and then
# the sampler itself, are killed with SIGKILL.  Each time the postmaster
# restarts everything, the views answer, and the saved stores are back.
my $reader_script = "${\ $node->basedir}/read_views.sql";
open(my $rs, '>', $reader_script) or die $!;
print $rs join('', map { "SELECT count(*) FROM $_;\n" } qw(pg_contention_subxact
	pg_contention_overflow_events pg_contention_statements pg_contention_index_scans
	pg_contention_horizon pg_contention_waits pg_contention_history
	pg_contention_sampler_status pg_contention_old_snapshot pg_contention_findings));
close $rs;
sub start_reader
{
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-T', '60', '-f', $reader_script,
		  '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$out, '2>', \$err);
}

my $overflowed = $node->background_psql('postgres');
my $overflowed_pid = $overflowed->query_safe('SELECT pg_backend_pid()');
$overflowed_pid =~ s/\s+//g;
$overflowed->query_safe("BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO v VALUES ($_);\n" } 1 .. 70));
$marker = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
ok($node->poll_query_until('postgres', "SELECT last_saved > '$marker' FROM pg_contention_info"),
	'saved with the fourth event');
my $reader = start_reader();
$log_offset = -s $node->logfile;
kill 'KILL', $overflowed_pid;
$overflowed->{run}->kill_kill;
ok(crash_recovered($node, $log_offset), 'killed in an overflowed transaction: recovered');
$reader->kill_kill;
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '4',
	'the four saved events are back');
is(scalar(grep { $node->psql('postgres', "SELECT * FROM $_") == 0 } qw(pg_contention_subxact
	pg_contention_statements pg_contention_findings)), 3, 'the views answer');

my $sampler_pid = $node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
$reader = start_reader();
$log_offset = -s $node->logfile;
kill 'KILL', $sampler_pid;
ok(crash_recovered($node, $log_offset), 'sampler killed: recovered');
$reader->kill_kill;
ok($node->log_contains(qr/pg_contention sampler.*terminated by signal 9/, $log_offset),
	'the postmaster saw the sampler killed');
ok($node->poll_query_until('postgres',
	"SELECT running AND pid <> $sampler_pid AND ticks > 0 FROM pg_contention_sampler_status"),
	'a new sampler runs');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '4',
	'the saved events are back again');
ok(!$node->log_contains(qr/TRAP:|PANIC:/), 'no assertion failure, no PANIC');

# A smaller ring keeps the newest events and counts the rest as dropped.
$node->append_conf('postgresql.conf', 'pg_contention.max_events = 2');
$log_offset = -s $node->logfile;
$node->restart;
is($node->safe_psql('postgres',
	'SELECT count(*), min(top_xid::text::bigint) > 0 FROM pg_contention_overflow_events'), '2|t',
	'a ring of two keeps two events');
is($node->safe_psql('postgres', 'SELECT events_written, events_dropped FROM pg_contention_info'),
	'4|2', 'and counts the other two as dropped');
ok($node->log_contains(qr/pg_contention: kept 2 of the 4 overflow events in "pg_stat_tmp\/pg_contention.stat": the store is smaller now/, $log_offset),
	'one LOG line says so');
ok($node->log_contains(qr/DETAIL:  The file was written with max_events = 1000, max_statements = 5000/, $log_offset),
	'with the sizes the file was written with');

# Damaged files never stop the server.
sub start_with_file
{
	my ($content, $why, $name) = @_;
	$node->stop;
	open(my $fh, '>', $file) or die "$file: $!";
	binmode $fh;
	print $fh $content;
	close $fh;
	my $offset = -s $node->logfile;
	$node->start;
	ok($node->log_contains(qr/pg_contention: ignored "pg_stat_tmp\/pg_contention.stat": $why/, $offset),
		"$name: ignored, with the reason in the log");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '0',
		"$name: the server started with empty stores");
}

$node->stop;
open(my $in, '<', $file) or die "$file: $!";
binmode $in;
my $good = do { local $/; <$in> };
close $in;
my $flipped = $good;
substr($flipped, length($flipped) / 2, 1) = chr(ord(substr($flipped, length($flipped) / 2, 1)) ^ 0xFF);
$node->start;
start_with_file($flipped, 'its checksum does not match', 'a flipped byte');
start_with_file(substr($good, 0, 10), 'it is too short', 'a truncated file');
start_with_file('x' x 4096, 'it is not a pg_contention file', 'a foreign file');

# save = off: nothing is loaded (or written).
$node->append_conf('postgresql.conf', 'pg_contention.save = off');
$node->restart;
is($node->safe_psql('postgres', 'SELECT last_loaded IS NULL FROM pg_contention_info'), 't',
	'save = off: nothing loaded');

# The sampler ignores pg_cancel_backend(): it keeps its pid and its ticks.
my ($pid, $ticks) = split /\|/, $node->safe_psql('postgres',
	'SELECT pid, ticks FROM pg_contention_sampler_status');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
ok($node->poll_query_until('postgres', "SELECT ticks > $ticks FROM pg_contention_sampler_status"),
	'the sampler ticks on after pg_cancel_backend');
is($node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status'), $pid,
	'the same process');
$node->stop;
ok(!$node->log_contains(qr/FATAL:.*(pg_contention|background worker)/),
	'no FATAL from the sampler, at cancel or at shutdown');

# Settings that need more shared memory than the machine has: the server
# does not start, and says which settings and how much.
$node->append_conf('postgresql.conf', qq{
pg_contention.max_events = 1000000
pg_contention.max_statements = 1000000
pg_contention.max_query_length = 65536
});
my $offset = -s $node->logfile;
ok(!$node->start(fail_ok => 1), 'settings beyond the machine\'s memory: the server does not start');
ok($node->log_contains(qr/FATAL:  pg_contention needs \d+ MB of shared memory, more than this machine's \d+ MB/, $offset),
	'the message says how much is needed');
ok($node->log_contains(qr/HINT:  Lower pg_contention.max_events, pg_contention.max_statements or pg_contention.max_query_length\./, $offset),
	'and which settings to lower');

done_testing();
