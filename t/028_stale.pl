# A sampler that stops is seen (issue 24, item 6): stopped with SIGSTOP, its
# status says stale with the time of its last tick, the metrics say it is
# not running and how old its last tick is, the findings say their
# evidence stops there (sampler_stale, first), `pg_contention check` exits
# 3 (UNKNOWN) with the reason, or 2 when a critical finding stands anyway,
# and `top` says so; after SIGCONT all of it clears.  Turned off, the
# sampler promises no tick and is never stale.  A hot standby's sampler is
# judged the same way.  Synchronised by polling
# only: the margin (max(5 s, 5 periods) past the promised tick) is the
# server's, and no step waits for it by the clock.
use strict;
use warnings;
use JSON::PP;
use PostgreSQL::Test::BackgroundPsql;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client);

my $node = PostgreSQL::Test::Cluster->new('stale');
$node->init(allows_streaming => 1);
# One tick a second: the worker holds its lock for well under a millisecond
# a second, so the SIGSTOP below all but never lands while it holds it
# (readers of the status would then wait for SIGCONT).
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.sample_period = 1000
pg_contention.incident_interval = '1s'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

sub client
{
	return run_client($node, @_);
}

sub metric
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT value FROM pg_contention_metrics('{sampler}') WHERE metric = '$name'");
}

# ---- Running: ticks on time.
ok($node->poll_query_until('postgres',
	'SELECT running AND ticks > 1 AND last_tick_at IS NOT NULL AND next_tick_due > last_tick_at
	   AND NOT stale FROM pg_contention_sampler_status'),
	'the sampler ticks, says when it last did and when the next tick is due');
is(metric('sampler_running'), '1', 'metrics: running');
ok(metric('sampler_last_tick_age_seconds') < 5, 'metrics: its last tick a moment ago');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_findings WHERE problem = 'sampler_stale'"),
	'0', 'no sampler_stale finding');
my ($rc, $out) = client('check', '--live');
is($rc, 0, 'check: OK') or diag($out);

# ---- Stopped.
my $pid = $node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND backend_type = 'pg_contention sampler'"),
	'1', 'the status names the sampler\'s process');
my $before = $node->safe_psql('postgres', 'SELECT last_tick_at FROM pg_contention_sampler_status');
ok(kill('STOP', $pid), 'SIGSTOP the sampler');
ok($node->poll_query_until('postgres', 'SELECT stale FROM pg_contention_sampler_status'),
	'the status says stale');
is($node->safe_psql('postgres',
	"SELECT running, last_tick_at >= '$before', clock_timestamp() - last_tick_at > interval '5 s',
			clock_timestamp() > next_tick_due + interval '5 s'
	   FROM pg_contention_sampler_status"),
	't|t|t|t', 'still running, its last tick more than the margin before now and past the due tick');
is(metric('sampler_running'), '0', 'metrics: sampler_running 0');
ok(metric('sampler_last_tick_age_seconds') > 5, 'metrics: the last tick is more than 5 s old');
# The findings family reads the incidents worker's evaluation: one made
# since the sampler stopped.
PgContention::Test::evaluated_twice($node);
is($node->safe_psql('postgres',
	"SELECT value FROM pg_contention_metrics('{findings}')
	  WHERE labels = '{\"problem\": \"sampler_stale\", \"severity\": \"warning\"}'"),
	'1', 'metrics: one sampler_stale finding');
my $finding = $node->safe_psql('postgres',
	"SELECT problem, severity, subject, evidence, details ->> 'pid' FROM pg_contention_findings LIMIT 1");
like($finding,
	qr/^sampler_stale\|warning\|the pg_contention sampler \(pid $pid\)\|It last sampled at \d\d:\d\d:\d\d, \d+ s ago; its next sample was due at \d\d:\d\d:\d\d \(period 1000 ms\)\.  The wait profile and the per-second history stop there: .*their silence means nothing\.\|$pid$/,
	'the findings say first that their evidence stopped, and when');
like($node->safe_psql('postgres', 'SELECT pg_contention_report()'),
	qr/== Findings \(1\)\n1\. \[warning\] sampler_stale: the pg_contention sampler \(pid $pid\)/,
	'the report shows it');

($rc, $out) = client('check', '--live');
is($rc, 3, 'check: UNKNOWN (3)');
like($out,
	qr/^PG_CONTENTION UNKNOWN - the sampler has stopped, the findings are blind since its last sample; 1 finding \(0 critical, 1 warning, 0 info\) on .* \| findings=1 critical=0 warning=1 info=0\nwarning sampler_stale: the pg_contention sampler \(pid $pid\)\. It last sampled at /,
	'check: the reason on the status line, the finding below') or diag($out);
($rc, $out) = client('check', '--live', '--json');
my $json = eval { decode_json($out) };
ok($json && $json->{status} eq 'UNKNOWN' && $json->{exit_code} == 3
	  && $json->{error} =~ /sampler has stopped/ && $json->{findings}[0]{problem} eq 'sampler_stale',
	'check --json: UNKNOWN, exit 3, the reason and the finding') or diag($out);
($rc, $out) = client('top', '-n', '1');
like($out, qr/Last \d+ seconds \(the sampler has stopped\)/, 'top: the history says the sampler has stopped')
  or diag($out);
like($out, qr/sampler_stale/, 'top: and shows the finding');

# A critical finding still says CRITICAL: a transaction holding the
# horizon, judged with thresholds of 0 through PGOPTIONS (an XID age past
# horizon_critical_xid_age is a cost in itself).
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; SELECT txid_current()');
{
	local $ENV{PGOPTIONS} = '-c pg_contention.horizon_min_age=0 -c pg_contention.horizon_critical_xid_age=0';
	($rc, $out) = client('check', '--live');
}
is($rc, 2, 'check: a critical finding beside a stale sampler is CRITICAL (2)') or diag($out);
like($out, qr/^PG_CONTENTION CRITICAL - the sampler has stopped, the findings are blind since its last sample; /,
	'check: and still gives the reason');
$holder->query_safe('ROLLBACK');
$holder->quit;

# ---- Running again.
ok(kill('CONT', $pid), 'SIGCONT the sampler');
ok($node->poll_query_until('postgres',
	"SELECT running AND pid = $pid AND NOT stale AND clock_timestamp() - last_tick_at < interval '5 s'
	   FROM pg_contention_sampler_status"),
	'the same sampler ticks again and is not stale');
is(metric('sampler_running'), '1', 'metrics: running again');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_contention_findings WHERE problem = 'sampler_stale'"),
	'0', 'the finding is gone');
($rc, $out) = client('check', '--live');
is($rc, 0, 'check: OK again') or diag($out);

# ---- Turned off: no tick is promised, so it is never stale.
$node->safe_psql('postgres', 'ALTER SYSTEM SET pg_contention.sampler = off');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT NOT enabled FROM pg_contention_sampler_status'),
	'a reload turns sampling off');
is($node->safe_psql('postgres', 'SELECT next_tick_due IS NULL, stale FROM pg_contention_sampler_status'),
	't|f', 'off: no tick due, not stale');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET pg_contention.sampler');
$node->reload;
ok($node->poll_query_until('postgres',
	"SELECT enabled AND NOT stale AND next_tick_due IS NOT NULL FROM pg_contention_sampler_status"),
	'on again: a tick is due');

# ---- A hot standby's sampler: the same, seen from the standby.
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('stale_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
ok($standby->poll_query_until('postgres',
	'SELECT running AND ticks > 1 AND NOT stale FROM pg_contention_sampler_status'),
	'standby: its sampler ticks');
my $standby_pid = $standby->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
ok(kill('STOP', $standby_pid), 'standby: SIGSTOP its sampler');
ok($standby->poll_query_until('postgres', 'SELECT stale FROM pg_contention_sampler_status'),
	'standby: the status says stale');
is($standby->safe_psql('postgres',
	"SELECT problem || ' ' || severity FROM pg_contention_findings WHERE problem = 'sampler_stale'"),
	'sampler_stale warning', 'standby: the finding');
is($standby->safe_psql('postgres',
	"SELECT value FROM pg_contention_metrics('{sampler}') WHERE metric = 'sampler_running'"),
	'0', 'standby: metrics sampler_running 0');
is($node->safe_psql('postgres', 'SELECT stale FROM pg_contention_sampler_status'), 'f',
	'the primary\'s own sampler is not stale');
ok(kill('CONT', $standby_pid), 'standby: SIGCONT');
ok($standby->poll_query_until('postgres', 'SELECT NOT stale FROM pg_contention_sampler_status'),
	'standby: not stale again');
$standby->stop;

$node->stop;
done_testing();
