# PgContention::Test: helpers shared by pg_contention's TAP tests (t/*.pl).
#
# A test loads it from its own directory, so that it is found however the
# test is run (tools/suite.sh, tools/test.sh in the chroots, make
# installcheck / tapcheck, or prove by hand):
#
#   use FindBin;
#   use lib "$FindBin::RealBin/lib";
#   use PgContention::Test qw(run_client find_program);
#
# Loading it makes every background psql session restart its timeout
# before each query and before it quits (see below).  Nothing is exported
# unless asked for.  The helpers wait by polling, never
# by sleeping, and assert nothing themselves: each test keeps its own
# checks.
#
#   run_client($node, @args)      the client program pg_contention with
#                                 @args against $node: PGHOST and PGPORT
#                                 the node's, PGDATABASE postgres unless the
#                                 caller set it (local $ENV{PGDATABASE}),
#                                 stdin empty, the rest of the environment
#                                 the caller's; returns (exit code, stdout,
#                                 stderr)
#   client_on_terminal($node, { columns => C, rows => R, term => T }, @args)
#                                 the client under script(1)'s
#                                 pseudo-terminal, against $node's database
#                                 postgres, with LC_ALL=C.UTF-8, TERM=T
#                                 (xterm if not given) and, if C and R are
#                                 given, the terminal's size set with stty;
#                                 returns (exit code, what the terminal
#                                 got, stderr); the caller skips first when
#                                 find_program('script') finds none
#   find_program($name)           the program's path in PATH, or undef
#   screen_columns($line)         screen columns of a line of UTF-8 text:
#                                 wide and fullwidth characters take two,
#                                 combining marks none
#   savepoint_script($n)          the pgbench script of the README's case 1:
#                                 a transaction of $n savepoints, each with a
#                                 range read and a write of four rows of
#                                 table contend (id integer PRIMARY KEY, val
#                                 integer, 10,000 rows)
#   finding($node, $problem, $column, $settings)
#                                 $column of pg_contention_findings for
#                                 $problem, after the SQL $settings (SET ...;)
#   history_settled($node)        waits until the sampler has closed a
#                                 second of pg_contention_history a second
#                                 after now (clients' SLRU counters reach the
#                                 statistics when they exit)
#   wait_ticks($node, $n)         waits until the sampler has ticked more
#                                 than $n times since now
#   evaluated_twice($node)        waits until the incidents worker has
#                                 evaluated the findings twice since now (it
#                                 reports each evaluation's start and end in
#                                 pg_stat_activity)
#   crash_recovered($node, $offset)
#                                 waits until the server log, after
#                                 $offset, shows the postmaster
#                                 reinitialising after a crash and then
#                                 ready again; true when it did.  (Polling
#                                 with a query instead races psql: a
#                                 connection refused during the restart
#                                 can end psql before the test library
#                                 writes the query to it, and the write's
#                                 broken pipe kills the test.)
#   missing_test_module($node, $name)
#                                 undef when the test-only extension $name
#                                 (test/modules/$name) is installed where
#                                 $node's server looks; else the reason to
#                                 skip, naming how to install it (make
#                                 installcheck against an installation that
#                                 lacks it)
#   crc32c($data)                 the CRC-32C of a string of bytes, as the
#                                 stores' file (src/persist.c) ends with
package PgContention::Test;

use strict;
use warnings;
use Encode qw(decode_utf8);
use Exporter 'import';
use IPC::Run;
use Time::HiRes ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::BackgroundPsql ();

# Every background psql session restarts its timeout before each query, as
# one that is not long-lived would have it: a session that holds a
# transaction across a test's slow part (on a loaded machine, minutes)
# must not time out at its next query for the minutes it waited.  Loading
# this module is enough.
{
	no warnings 'redefine';
	my $background_psql = \&PostgreSQL::Test::Cluster::background_psql;
	*PostgreSQL::Test::Cluster::background_psql = sub {
		my $session = $background_psql->(@_);
		$session->set_query_timer_restart if $session->can('set_query_timer_restart');
		return $session;
	};
	# quit() waits for psql to exit on the same timer, which it does not
	# restart: a session opened minutes before would die there
	# ("timeout on timer #1") although psql exits at once.
	my $quit = \&PostgreSQL::Test::BackgroundPsql::quit;
	*PostgreSQL::Test::BackgroundPsql::quit = sub {
		my ($session) = @_;
		$session->{timeout}->start
		  if defined($session->{query_timer_restart}) && defined($session->{timeout});
		return $quit->(@_);
	};
}

our @EXPORT_OK = qw(subtrans_only_differences wait_for_log_line run_client client_on_terminal find_program screen_columns
  savepoint_script finding history_settled wait_ticks evaluated_twice crash_recovered missing_test_module crc32c
  churn);

# SQL: how many rows pg_contention_statements(subtrans_only) and the
# view's filter (ran suboverflowed, or waited on pg_subtrans) disagree on,
# counted both ways.
sub subtrans_only_differences
{
	my $keys = q{userid, dbid, query_id, application_name, calls, suboverflowed_calls};
	return qq{(SELECT count(*) FROM (
			  (SELECT $keys FROM pg_contention_statements(true)
			   EXCEPT ALL
			   SELECT $keys FROM pg_contention_statements
				WHERE suboverflowed_calls > 0 OR subtrans_wait_samples > 0)
			  UNION ALL
			  (SELECT $keys FROM pg_contention_statements
				WHERE suboverflowed_calls > 0 OR subtrans_wait_samples > 0
			   EXCEPT ALL
			   SELECT $keys FROM pg_contention_statements(true))) AS d)};
}

sub run_client
{
	my ($node, @args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE} = $ENV{PGDATABASE} // 'postgres';
	IPC::Run::run([ 'pg_contention', @args ], '<', \undef, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

sub client_on_terminal
{
	my ($node, $terminal, @args) = @_;
	my $script = find_program('script') or die 'script(1) is not installed';
	my ($out, $err) = ('', '');
	my @size = defined $terminal->{columns} ? ("stty cols $terminal->{columns} rows $terminal->{rows};") : ();
	my $cmd = join(' ', @size, 'env', 'LC_ALL=C.UTF-8', 'TERM=' . ($terminal->{term} // 'xterm'),
		'PGHOST=' . $node->host, 'PGPORT=' . $node->port, 'PGDATABASE=postgres',
		'pg_contention', map { "'" . s/'/'\\''/gr . "'" } @args);
	IPC::Run::run([ $script, '-qec', $cmd, '/dev/null' ], '<', \undef, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

sub find_program
{
	my ($name) = @_;
	for my $dir (split /:/, $ENV{PATH})
	{
		return "$dir/$name" if -x "$dir/$name";
	}
	return undef;
}

sub screen_columns
{
	my ($line) = @_;
	my $n = 0;
	for my $ch (split //, decode_utf8($line))
	{
		$n += $ch =~ /\p{Mn}/ ? 0 : $ch =~ /\p{East_Asian_Width=Wide}|\p{East_Asian_Width=Fullwidth}/ ? 2 : 1;
	}
	return $n;
}

sub savepoint_script
{
	my ($n) = @_;
	my $body = "BEGIN;\n";
	for my $i (1 .. $n)
	{
		$body .= "SAVEPOINT a;\n"
		  . "\\set rnd random(1, 990)\n"
		  . "SELECT count(*) FROM contend WHERE id BETWEEN 10 * :rnd + :client_id + 1 AND 10 * :rnd + :client_id + 1 + 100;\n"
		  . "UPDATE contend SET val = val + 1 WHERE id IN (10 * :rnd + :client_id, 10 * :rnd + :client_id + 10, 10 * :rnd + :client_id + 20, 10 * :rnd + :client_id + 30);\n";
	}
	return $body . "COMMIT;\n";
}

sub finding
{
	my ($node, $problem, $column, $settings) = @_;
	$settings //= '';
	return $node->safe_psql('postgres',
		"$settings SELECT $column FROM pg_contention_findings WHERE problem = '$problem'");
}

# What a held horizon costs, made real: $rows rows of table pgc_churn in
# database $db updated once (made with them on the first call), leaving
# $rows dead tuples, past the autovacuum threshold (50 + 20% of $rows),
# that VACUUM cannot remove while a holder older than this holds.  The
# session ends, so its counts reach the statistics.
sub churn
{
	my ($node, $db, $rows) = @_;
	$rows //= 1000;
	$node->safe_psql($db, qq{
CREATE TABLE IF NOT EXISTS pgc_churn (id integer PRIMARY KEY, n integer NOT NULL);
INSERT INTO pgc_churn SELECT g, 0 FROM generate_series(1, $rows) AS g ON CONFLICT DO NOTHING;
UPDATE pgc_churn SET n = n + 1 WHERE id <= $rows;});
	return;
}

sub history_settled
{
	my ($node) = @_;
	my $end = $node->safe_psql('postgres', 'SELECT now()');
	$node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM pg_contention_history
		  WHERE bucket_start > '$end'::timestamptz + interval '1 second'")
	  or die 'the history did not advance';
	return;
}

sub wait_ticks
{
	my ($node, $n) = @_;
	my $t = $node->safe_psql('postgres', 'SELECT ticks FROM pg_contention_sampler_status');
	$node->poll_query_until('postgres',
		"SELECT ticks > $t + $n FROM pg_contention_sampler_status")
	  or die "the sampler stopped ticking";
	return;
}

# Wait until the log has a line matching $re after $offset; the new offset
# (undef if none came in the default timeout).
sub wait_for_log_line
{
	my ($node, $re, $offset) = @_;
	for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
	{
		my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile, $offset);
		return $offset + length($log) if $log =~ $re;
		Time::HiRes::usleep(100_000);
	}
	return undef;
}

sub evaluated_twice
{
	my ($node) = @_;
	for (1 .. 2)
	{
		my $mark = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
		$node->poll_query_until('postgres',
			"SELECT state_change > '$mark' AND state = 'idle' FROM pg_stat_activity
			  WHERE backend_type = 'pg_contention incidents'")
		  or die 'the incidents worker did not evaluate';
	}
	return;
}

# The table of the reflected CRC-32C (Castagnoli) polynomial, built once.
my @crc32c_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c
} 0 .. 255;

sub crash_recovered
{
	my ($node, $offset) = @_;
	return defined wait_for_log_line($node,
		qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
		$offset);
}

sub missing_test_module
{
	my ($node, $name) = @_;
	return undef
	  if $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_catalog.pg_available_extensions WHERE name = '$name'") eq '1';
	return "the test-only extension $name is not installed (make -C test/modules/$name install)";
}

sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	$crc = $crc32c_table[($crc ^ $_) & 0xFF] ^ ($crc >> 8) for unpack('C*', $data);
	return $crc ^ 0xFFFFFFFF;
}

1;
