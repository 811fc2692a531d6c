# pg_contention check reads the incidents worker's last evaluation instead
# of evaluating the findings again (issue 26: a new session plans every
# rule first), but only when that evaluation is the session's own answer:
#
# - the kept rows are the findings the worker evaluated (a held xmin
#   horizon), in order, and pg_contention_findings_latest() returns them;
# - check says it read them ("the incidents worker's evaluation of N s
#   ago", evaluated_by in --json), and --live evaluates now;
# - no kept rows for a role without pg_read_all_stats (the worker saw every
#   text), in another database, with a threshold set differently for the
#   session (PGOPTIONS, SET), with incidents off, and after
#   pg_contention_reset(): check then evaluates, and says so;
# - top and pg_contention_metrics' findings family read them the same way.
#
# The worker evaluates once when it starts and then every hour: each step
# below reads that one evaluation, nothing races it.
use strict;
use warnings;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client churn);

my $node = PostgreSQL::Test::Cluster->new('check_kept');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
pg_contention.incident_interval = 3600
pg_contention.horizon_min_age = 1
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_contention;
CREATE ROLE monitor LOGIN IN ROLE pg_read_all_stats;
CREATE ROLE plain LOGIN;
CREATE DATABASE other;
});
$node->safe_psql('other', 'CREATE EXTENSION pg_contention');

sub client
{
	my ($user, @args) = @_;
	local $ENV{PGUSER} = $user;
	return run_client($node, @args);
}

sub json_check
{
	my ($user, @args) = @_;
	my ($rc, $out, $err) = client($user, 'check', '--json', @args);
	my $doc = eval { decode_json($out) };
	is($@, '', "check --json as $user @args: one JSON document") or diag($out, $err);
	return ($rc, $doc // {});
}

# A horizon held by a session idle in transaction, keeping dead tuples
# VACUUM would remove: a finding that stays.
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; SELECT txid_current()');
churn($node, 'postgres');
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_findings WHERE problem = 'xmin_horizon_held' AND severity <> 'info'")
  or die 'no finding for the held horizon';

# The worker evaluated at start, before the extension existed: nothing kept.
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_findings_kept()'),
	'0', 'before the worker has evaluated with the extension: no kept rows');
my ($rc, $doc) = json_check('postgres');
is($doc->{evaluated_by}, 'check', 'check evaluated itself');

# A new worker evaluates once at start, then every hour.
sub new_evaluation
{
	my $before = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		  WHERE backend_type = 'pg_contention incidents'");
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_contention_findings_kept() WHERE evaluated_at > '$before'")
	  or die 'the restarted worker did not evaluate';
	return;
}
new_evaluation();

my $kept = $node->safe_psql('postgres',
	'SELECT string_agg(problem || \' \' || severity, \', \' ORDER BY ordinality)
	   FROM pg_contention_findings_kept() WITH ORDINALITY');
my $live = $node->safe_psql('postgres',
	'SELECT string_agg(problem || \' \' || severity, \', \' ORDER BY ordinality)
	   FROM pg_contention_findings() WITH ORDINALITY');
like($kept, qr/xmin_horizon_held/, 'the kept rows have the held horizon');
is($kept, $live, 'the kept rows are the findings, in order, at the same severities');
is($node->safe_psql('postgres',
		q{SELECT bool_and(details ? 'holders' IS NOT NULL AND evidence <> '' AND advice <> '')
		    FROM pg_contention_findings_kept()}),
	't', 'the kept rows carry their texts and details');
is($node->safe_psql('postgres',
		q{SELECT (SELECT array_agg(evaluated_at || problem) FROM pg_contention_findings_latest())
		       = (SELECT array_agg(evaluated_at || problem) FROM pg_contention_findings_kept())}),
	't', 'pg_contention_findings_latest() returns the kept rows');

# check reads them, --live evaluates now.
($rc, my $out) = client('postgres', 'check');
like($out, qr/^PG_CONTENTION (WARNING|CRITICAL) - 1 finding .* \(the incidents worker's evaluation of \d+ s ago\) \| /,
	'check: the worker\'s evaluation, and how old');
ok($rc == 1 || $rc == 2, 'check: exit code of the held horizon');
like($out, qr/^(warning|critical) xmin_horizon_held: /m, 'check: the finding');
($rc, $doc) = json_check('postgres');
is($doc->{evaluated_by}, 'incidents worker', 'check --json: evaluated_by');
ok($doc->{evaluated_at} <= $doc->{checked_at}, 'check --json: evaluated before it was checked');
is($doc->{findings}[0]{problem}, 'xmin_horizon_held', 'check --json: the finding');
($rc, $doc) = json_check('postgres', '--live');
is($doc->{evaluated_by}, 'check', 'check --live evaluates');
is($doc->{findings}[0]{problem}, 'xmin_horizon_held', 'check --live: the same finding');

# top reads them too, and says so; with a threshold of its own it evaluates.
($rc, $out) = client('postgres', 'top', '-n', '1');
like($out, qr/^Findings over the last 5 min: .* \(the incidents worker's evaluation of \d+ s ago\)$/m,
	'top: the worker\'s evaluation, and how old');
like($out, qr/^ +(warning|critical) +xmin_horizon_held /m, 'top: the finding');
{
	local $ENV{PGOPTIONS} = '-c pg_contention.horizon_min_age=3600';
	($rc, $out) = client('postgres', 'top', '-n', '1');
	like($out, qr/^Findings over the last 5 min: none, nothing pg_contention checks for is wrong now$/m,
		'top with a threshold of its own evaluates, and answers with it');
}

# Who may read them: what the worker (a superuser) saw.
($rc, $doc) = json_check('monitor');
is($doc->{evaluated_by}, 'incidents worker', 'a member of pg_read_all_stats reads the kept rows');
is($node->safe_psql('postgres', 'SET ROLE plain; SELECT count(*) FROM pg_contention_findings_kept()'),
	'0', 'a role without pg_read_all_stats gets no kept rows');
($rc, $doc) = json_check('plain');
is($doc->{evaluated_by}, 'check', 'check as that role evaluates');
is($node->safe_psql('postgres',
		'SET ROLE plain; SELECT count(*) FROM pg_contention_findings_latest() WHERE evaluated_at >= statement_timestamp()'),
	$node->safe_psql('postgres', 'SET ROLE plain; SELECT count(*) FROM pg_contention_findings'),
	'pg_contention_findings_latest() evaluates for that role');

# The metrics' findings family reads them too: a scrape copies the
# worker's rows and evaluates no rule (the calls of the findings function
# in the scrape's transaction, with track_functions on), unless they are
# not the reader's answer.
sub metrics_findings
{
	my ($role) = @_;
	return $node->safe_psql('postgres', qq{
		SET track_functions = 'all';
		BEGIN;
		SET LOCAL ROLE $role;
		SELECT sum(value) FILTER (WHERE metric = 'findings' AND labels ->> 'problem' = 'xmin_horizon_held')
		  FROM pg_contention_metrics('{findings}');
		RESET ROLE;
		SELECT coalesce(pg_stat_get_xact_function_calls('pg_contention_findings(interval)'::regprocedure), 0);
		COMMIT;});
}
my $kept_held = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_findings_kept() WHERE problem = 'xmin_horizon_held'");
ok($kept_held > 0, 'the worker kept the held horizon');
is(metrics_findings('postgres'), "$kept_held\n0",
	'metrics: the held horizon counted from the worker\'s rows, no rule evaluated');
is(metrics_findings('monitor'), "$kept_held\n0", 'metrics as a member of pg_read_all_stats: the same');
my $plain_held = $node->safe_psql('postgres',
	"SET ROLE plain; SELECT count(*) FROM pg_contention_findings WHERE problem = 'xmin_horizon_held'");
is(metrics_findings('plain'), "$plain_held\n1", 'metrics as a role without it: evaluated');

# Another database, another setting: not this session's answer.
is($node->safe_psql('other', 'SELECT count(*) FROM pg_contention_findings_kept()'),
	'0', 'no kept rows in another database');
is($node->safe_psql('postgres',
		'SET pg_contention.dead_visits_warning = 7; SELECT count(*) FROM pg_contention_findings_kept()'),
	'0', 'no kept rows with a threshold set for the session');
# search_path changes no finding: every function pins its own (issue 45).
isnt($node->safe_psql('postgres',
		"SET search_path = pg_catalog, public; SELECT count(*) FROM public.pg_contention_findings_kept()"),
	'0', 'kept rows whatever the search_path (the functions pin theirs)');
{
	local $ENV{PGOPTIONS} = '-c pg_contention.horizon_min_age=3600';
	($rc, $doc) = json_check('postgres');
	is($doc->{evaluated_by}, 'check', 'check with a threshold in PGOPTIONS evaluates');
	is(scalar @{ $doc->{findings} }, 0, '... and answers with that threshold');
}
($rc, $doc) = json_check('postgres');
is($doc->{evaluated_by}, 'incidents worker', 'without it, the kept rows again');

# A reset forgets them.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_findings_kept()'),
	'0', 'pg_contention_reset(): no kept rows');
($rc, $doc) = json_check('postgres');
is($doc->{evaluated_by}, 'check', 'check after a reset evaluates');

# Incidents off: the worker no longer evaluates, nothing is kept.
new_evaluation();
$node->safe_psql('postgres', 'ALTER SYSTEM SET pg_contention.incident_interval = 0');
$node->reload;
$node->poll_query_until('postgres',
	"SELECT current_setting('pg_contention.incident_interval') = '0'")
  or die 'the reload did not come';
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_findings_kept()'),
	'0', 'incidents off: no kept rows');
($rc, $doc) = json_check('postgres');
is($doc->{evaluated_by}, 'check', 'check with incidents off evaluates');

# The findings window as check prints it: the client formats the setting's
# seconds itself (loading PL/pgSQL into each check's new session would
# cost more than its queries), the same text as pg_contention_duration().
foreach my $window ('45s', '90s', '10min', '37min', '3h', '1d')
{
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET pg_contention.findings_window = '$window'");
	$node->reload;
	$node->poll_query_until('postgres',
		"SELECT current_setting('pg_contention.findings_window')::interval = '$window'")
	  or die "the reload did not come ($window)";
	($rc, $doc) = json_check('postgres');
	is($doc->{findings_window},
		$node->safe_psql('postgres',
			"SELECT pg_contention_duration('$window'::interval)"),
		"check --json: a findings window of $window as the server writes it");
}

# Usage.
($rc, $out, my $err) = client('postgres', 'top', '--live');
is($rc, 3, 'top --live: a usage error');
like($err, qr/--live is an option of check, not of top/, 'top --live: says so');

$holder->query_safe('COMMIT');
$holder->quit;
$node->stop;
done_testing();
