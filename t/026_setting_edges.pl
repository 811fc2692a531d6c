# The server's own settings (restart and reload) at the edges of their
# documented ranges: a server started with each works, every view, the
# metrics, the findings, the report and the client answer (issue 24, item 7;
# sql/arguments.sql checks the ranges themselves and the functions'
# arguments).  With pg_contention.history_seconds = 30 the metrics (the
# exporter's view) used to fail: the old-snapshot window is now at most the
# history.  Not started here: pg_contention.max_events and max_statements
# at their upper edge (a million each, over a gigabyte of shared memory).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client);

my $node = PostgreSQL::Test::Cluster->new('edges');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
});

my @views = qw(pg_contention_subxact pg_contention_overflow_events pg_contention_statements
  pg_contention_info pg_contention_index_scans pg_contention_horizon pg_contention_waits
  pg_contention_history pg_contention_sampler_status pg_contention_old_snapshot
  pg_contention_findings pg_contention_metrics);

sub everything_answers
{
	my ($label) = @_;
	my @failed;
	for my $view (@views)
	{
		my ($ret, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM $view");
		push @failed, "$view: $err" if $ret != 0;
	}
	for my $call ('SELECT pg_contention_report()', 'SELECT count(*) FROM pg_contention_recent(1)',
		'SELECT count(*) FROM pg_contention_old_snapshot(1)')
	{
		my ($ret, $out, $err) = $node->psql('postgres', $call);
		push @failed, "$call: $err" if $ret != 0;
	}
	is(join("\n", @failed), '', "$label: every view, the report and the functions answer");

	my ($rc, $out, $err) = run_client($node, 'check', '--live');
	# The lower edges overflow on purpose, and the stores outlive restarts:
	# findings may stand; UNKNOWN (3) would mean check could not tell.
	ok($rc <= 2, "$label: check answers (exit $rc)") or diag($out . $err);
	($rc, $out, $err) = run_client($node, 'report', '--text');
	is($rc, 0, "$label: the client's report works") or diag($err);
}

sub settings
{
	my (%set) = @_;
	# Appended: the last line for a setting wins.
	$node->append_conf('postgresql.conf', join('', map { "pg_contention.$_ = $set{$_}\n" } sort keys %set));
	$node->restart;
	is($node->safe_psql('postgres',
		"SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
		  WHERE name IN (" . join(', ', map { "'pg_contention.$_'" } sort keys %set) . ')'),
		join(' ', map { "pg_contention.$_=" . ($set{$_} =~ s/^'(.*)'$/$1/r) } sort keys %set),
		'the server runs with ' . join(', ', map { "$_ = $set{$_}" } sort keys %set));
}

# ---- The issue's case: 30 seconds of history.
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
settings(history_seconds => 30);
ok($node->poll_query_until('postgres', 'SELECT count(*) >= 2 FROM pg_contention_history'),
	'the sampler records seconds');
is($node->safe_psql('postgres',
	"SELECT count(*) > 0 FROM pg_contention_metrics WHERE metric = 'old_snapshot_probe_p99_seconds'"),
	't', 'history_seconds = 30: the metrics answer');
is($node->safe_psql('postgres',
	'SELECT window_seconds_covered <= 30 FROM pg_contention_old_snapshot'),
	't', 'the old-snapshot view reads at most the 30 seconds kept');
everything_answers('history_seconds = 30');

# ---- The lower edges.
settings(history_seconds => 5, max_events => 1, max_statements => 100, max_profile_entries => 10,
	max_query_length => 64, sample_period => 1, save_interval => 0, findings_window => 10,
	subxact_warn_level => 0);
ok($node->poll_query_until('postgres', 'SELECT count(*) >= 2 FROM pg_contention_history'),
	'the sampler records seconds');
# An overflow and more statements than the store keeps.
$node->safe_psql('postgres', q{
	CREATE TABLE t (id integer);
	DO $$ BEGIN FOR i IN 1..70 LOOP BEGIN INSERT INTO t VALUES (i); EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$;
	DO $$ BEGIN FOR i IN 1..150 LOOP EXECUTE format('SELECT %s AS c%s', i, i); END LOOP; END $$;
});
is($node->safe_psql('postgres', 'SELECT events_written >= 1 FROM pg_contention_info'), 't',
	'the overflow is recorded in a ring of one');
everything_answers('the lower edges');

# ---- The upper edges (but the two largest stores).
settings(history_seconds => 86400, max_profile_entries => 1000000, max_query_length => 65536,
	sample_period => 1000, save_interval => 86400, findings_window => 86400, subxact_warn_level => 64);
ok($node->poll_query_until('postgres', 'SELECT count(*) >= 2 FROM pg_contention_history'),
	'the sampler records seconds');
everything_answers('the upper edges');

$node->stop;
done_testing();
