# Incidents follow their cause, and a cost around a bar does not flap.
# An 80-savepoint statement run by pgbench, readers that commit: the
# overflow's incident opens.  Its sessions replaced by new sessions of
# the same statement, the incident goes on (one incident, open).  Then a
# session of the statement overflows once and stays, idle (the cause is
# alive), the workload stops, and the window's lookups rate (lookups per
# busy second) stays put: with the bar just above it (the rate at 90% of the
# bar) the open incident stays open, since an open incident's bars are at
# 80%; with the bar well above (the rate at 70%) it closes; back at 90%
# no incident opens again (closed, the bar is the whole bar).  The
# finding, check and the incident agree at each step.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(savepoint_script run_client);

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.incident_interval = '1s'
pg_contention.incident_close_after = '2s'
pg_contention.overflow_ended_after = '1h'
pg_contention.subtrans_lookups_warning = 100
pg_contention.subtrans_wait_warning = 100
pg_contention.subtrans_wait_critical = 100
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL) WITH (fillfactor = '50');
	INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	CREATE TABLE side (id integer);});

my $dir = PostgreSQL::Test::Utils::tempdir();
PostgreSQL::Test::Utils::append_to_file("$dir/job.sql", savepoint_script(80));
PostgreSQL::Test::Utils::append_to_file("$dir/reader.sql",
	"SELECT count(*) FROM side;\nSELECT pg_catalog.txid_current();\n");
sub bench
{
	my ($script, @opts) = @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start([ 'pgbench', '-n', @opts, '-T', '900', '-f', $script,
		'-h', $node->host, '-p', $node->port, 'shop' ], '>', \$out, '2>', \$err);
}
# The worker has evaluated twice since now: three evaluations began after
# it (they run one after the other: the first two have ended).  Read from
# the status the worker publishes, not from its idle moments, which a
# loaded server may leave too short to see.
sub evaluated_twice
{
	my $mark = $node->safe_psql('shop', 'SELECT clock_timestamp()');
	for (1 .. 3)
	{
		$node->poll_query_until('shop',
			"SELECT last_evaluation > '$mark' FROM pg_contention_incidents_status()")
		  or die 'the incidents worker did not evaluate';
		$mark = $node->safe_psql('shop', 'SELECT last_evaluation FROM pg_contention_incidents_status()');
	}
	return;
}

my $incidents = q{SELECT count(*) || ' ' || count(*) FILTER (WHERE closed IS NULL)
	FROM pg_contention_incidents WHERE problem = 'subxact_overflow'};

my $job = bench("$dir/job.sql", '-c', '2', '-j', '2');
my $reader = bench("$dir/reader.sql", '-c', '1', '-R', '20');
ok($node->poll_query_until('shop', $incidents, '1 1'), 'the overflow opens an incident');

# New sessions of the same statement: the same incident goes on.
$job->kill_kill;
$job = bench("$dir/job.sql", '-c', '2', '-j', '2');
my $mark = $node->safe_psql('shop', 'SELECT clock_timestamp()');
ok($node->poll_query_until('shop',
	"SELECT count(*) >= 2 FROM pg_contention_overflow_events WHERE event_time > '$mark'"),
	'the new sessions overflow');
evaluated_twice();
is($node->safe_psql('shop', $incidents), '1 1', 'new sessions of the same statement: one incident, still open');

# A session of the same statement overflows once and stays (idle): the
# cause is alive.  Then the workload stops: the window's rate stays put.
my $stays = $node->background_psql('shop');
$stays->query_safe("BEGIN;\n" . join('', map {
	"SAVEPOINT a; UPDATE contend SET val = val + 1 WHERE id IN (10 * 7 + 0, 10 * 7 + 0 + 10, 10 * 7 + 0 + 20, 10 * 7 + 0 + 30);\n"
} 1 .. 80) . "COMMIT;");
# Its counts reach the statistics at the end of a transaction a second
# later, not ten seconds later while it idles (so the rate stays put).
$stays->query_safe('SELECT pg_sleep(1.2)');
my $stays_pid = $stays->query_safe('SELECT pg_backend_pid()');
$stays_pid =~ s/\s+//g;
ok($node->poll_query_until('shop', "SELECT count(*) > 0 FROM pg_contention_overflow_events WHERE pid = $stays_pid"),
	'a session of the same statement overflowed and stays');
$job->kill_kill;
$reader->kill_kill;
PgContention::Test::history_settled($node);
my $rate = $node->safe_psql('shop', q{SELECT (details ->> 'subtrans_lookups_per_second')::numeric
	FROM pg_contention_findings WHERE problem = 'subxact_overflow'});
cmp_ok($rate, '>', 100, "the readers' lookups: $rate/s over the busy seconds");

sub set_bar
{
	my ($bar) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.subtrans_lookups_warning = $bar");
	$node->reload;
	$node->poll_query_until('shop', "SELECT current_setting('pg_contention.subtrans_lookups_warning')::float8 = $bar")
	  or die 'the bar was not set';
	evaluated_twice();
}
set_bar(int($rate / 0.9));
evaluated_twice();
is($node->safe_psql('shop', $incidents), '1 1', 'the rate at 90% of the bar: the open incident stays open');
is($node->safe_psql('shop', q{SELECT severity FROM pg_contention_findings WHERE problem = 'subxact_overflow'}),
	'warning', 'and the finding says warning, as the incident');
my ($rc, $out) = run_client($node, 'check', '-d', 'shop');
is($rc, 1, 'and check says WARNING');

set_bar(int($rate / 0.7) + 1);
ok($node->poll_query_until('shop', $incidents, '1 0'), 'the rate at 70% of the bar: the incident closes');
like($node->safe_psql('shop', q{SELECT severity || ' | ' || advice FROM pg_contention_findings WHERE problem = 'subxact_overflow'}),
	qr/^info \| Its cost is below the warning bars \([0-9,]+ pg_subtrans lookups\/s by readers, the bar is [0-9,]+\/s\), but every snapshot taken meanwhile is suboverflowed/,
	'the finding says info, and that the cost is below the bar, not that there is none');

set_bar(int($rate / 0.9));
evaluated_twice();
is($node->safe_psql('shop', $incidents), '1 0', 'back at 90% of the bar: no incident opens again');
is($node->safe_psql('shop', q{SELECT severity FROM pg_contention_findings WHERE problem = 'subxact_overflow'}),
	'info', 'and the finding says info');
$stays->quit;
done_testing();
