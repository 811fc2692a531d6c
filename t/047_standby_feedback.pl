# A standby's hot_standby_feedback is judged on what holds it there, not
# on its age between two feedback messages.  A walsender's xmin is the
# standby's, sent every wal_receiver_status_interval: while the primary
# writes it falls behind by every XID assigned since the last message, and
# moves at the next.  On a healthy pair it is past horizon_min_xid_age at
# times and nothing holds anything: no finding, no incident, check --live
# exits 0.  A snapshot held on the standby stops it: past horizon_min_age
# the primary names the standby (its xmin's age counted from when it
# stopped), an incident opens, and the snapshot's end closes both.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client);

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.horizon_min_age = '20s'
pg_contention.horizon_min_xid_age = 300
pg_contention.incident_interval = '1s'
pg_contention.incident_close_after = '2s'
pg_contention.incident_database = 'shop'
autovacuum = off
});
$primary->start;
# The application's database, where the findings are read and the
# incidents kept: before PostgreSQL 15 another database's dead tuples
# cannot be read, and they are what the hold costs.
$primary->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');
$primary->safe_psql('shop', 'CREATE EXTENSION pg_contention;
	CREATE TABLE stock (id integer PRIMARY KEY, n integer NOT NULL);
	INSERT INTO stock SELECT g, 0 FROM generate_series(1, 1000) AS g');
$primary->backup('b');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "hot_standby_feedback = on\nwal_receiver_status_interval = 2\n");
$standby->start;
$primary->wait_for_catchup($standby);

# A writer on the primary (one XID per transaction, a dead tuple each) and
# a reader on the standby, as any pair serves.
my $dir = PostgreSQL::Test::Utils::tempdir();
PostgreSQL::Test::Utils::append_to_file("$dir/write.sql",
	"\\set id random(1, 1000)\nUPDATE stock SET n = n + 1 WHERE id = :id;\n");
PostgreSQL::Test::Utils::append_to_file("$dir/read.sql",
	"\\set id random(1, 1000)\nSELECT n FROM stock WHERE id = :id;\n");
my @bench_out = ('', '', '', '');
my $writer = IPC::Run::start([ 'pgbench', '-n', '-c', '1', '-T', '900', '-f', "$dir/write.sql",
	'-h', $primary->host, '-p', $primary->port, 'shop' ], '>', \$bench_out[0], '2>', \$bench_out[1]);
my $reader = IPC::Run::start([ 'pgbench', '-n', '-c', '1', '-R', '50', '-T', '900', '-f', "$dir/read.sql",
	'-h', $standby->host, '-p', $standby->port, 'shop' ], '>', \$bench_out[2], '2>', \$bench_out[3]);

my $walsender = q{SELECT h.xmin, h.xmin_age, h.blocks_cleanup, coalesce(pg_catalog.date_part('epoch', h.held_for)::integer, -1)
	FROM pg_contention_horizon AS h WHERE h.kind = 'standby feedback'};
my $feedback_finding = q{SELECT count(*) FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'kind' = 'standby feedback'};

# The healthy pair: watched until the feedback has moved 15 times (30 s
# at the interval, past horizon_min_age) and been seen past
# horizon_min_xid_age 3 times (the old judgement would have paged).
my (%xmins, $past_xid_age, @flagged, $polls, $longest);
$past_xid_age = 0;
$longest = 0;
while (keys(%xmins) < 16 || $past_xid_age < 3)
{
	last if ++$polls > 2000;
	my ($xmin, $age, $blocks, $held) = split /\|/, $primary->safe_psql('shop', $walsender);
	next unless defined $xmin;
	$xmins{$xmin} = 1;
	$past_xid_age++ if $age >= 300;
	$longest = $held if $held > $longest;
	push @flagged, "xmin $xmin, $age XIDs old, held ${held}s" if $blocks eq 't';
	push @flagged, 'a finding' if $primary->safe_psql('shop', $feedback_finding) ne '0';
	Time::HiRes::usleep(300_000);
}
note("healthy pair: the feedback moved " . (keys(%xmins) - 1) . " times, was past 300 XIDs $past_xid_age times; longest stand ${longest}s");
cmp_ok($past_xid_age, '>=', 3,
	'healthy pair: the walsender\'s xmin was past horizon_min_xid_age between feedback messages');
cmp_ok(scalar(keys %xmins), '>=', 16, 'healthy pair: the feedback kept moving');
is(join('; ', @flagged), '', 'healthy pair: never a holder, never a finding');
is($primary->safe_psql('shop', "SELECT count(*) FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held'"),
	'0', 'healthy pair: no incident opened');
my ($rc, $out, $err) = run_client($primary, 'check', '--live', '-d', 'shop');
is($rc, 0, 'healthy pair: check --live exits 0') or diag($out . $err);

# A report on the standby holds a snapshot: the feedback stops at it.
my $report = $standby->background_psql('shop');
my $report_pid = $report->query_safe('SELECT pg_backend_pid()');
$report->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM stock;');
my $report_xmin = $standby->safe_psql('shop',
	"SELECT backend_xmin FROM pg_stat_activity WHERE pid = $report_pid");
ok($primary->poll_query_until('shop', "SELECT count(*) = 1 FROM ($walsender) AS w
	WHERE w.xmin::text::bigint <= $report_xmin"),
	'held: the feedback holds the primary at the report\'s xmin or before');
ok($primary->poll_query_until('shop', "$feedback_finding AND severity <> 'info'", '1'),
	'held: past horizon_min_age the primary names the standby, with what it costs');
like($primary->safe_psql('shop', q{SELECT subject || ' | ' || evidence FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'kind' = 'standby feedback'}),
	qr/^hot_standby_feedback of a standby \(.*walsender pid \d+\) \| Its xmin is [0-9,]+ transactions old, held for (\d+ min )?\d+ s; queries on that standby hold it through hot_standby_feedback/,
	'held: the evidence gives how long the xmin has stood still');
ok($primary->poll_query_until('shop',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL"),
	'held: an incident opened');

# The fix: the report ends.  The feedback moves again; the finding and
# the incident end.
$report->query_safe('COMMIT');
$report->quit;
ok($primary->poll_query_until('shop', $feedback_finding, '0'), 'fixed: the finding is gone');
ok($primary->poll_query_until('shop',
	"SELECT count(*) = 0 FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL"),
	'fixed: the incident closed');

$writer->kill_kill;
$reader->kill_kill;
done_testing();
