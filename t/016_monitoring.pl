# pg_contention_metrics and the monitoring files under examples/: the view
# on a healthy server and during the incidents (an overflowed session, 100,000
# dead index entries behind an idle transaction); Debian's
# prometheus-postgres-exporter with examples/postgres_exporter/queries.yaml
# scraped on localhost; the pgwatch definitions run as pgwatch would; the
# Grafana dashboard's queries name metrics the exporter serves; the alerting
# rules checked and unit-tested with promtool.  The exporter and promtool
# parts are skipped where Debian's packages are not installed (the host's
# PostgreSQL 15 run has them).
use strict;
use warnings;
use File::Basename;
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(find_program);

my $examples = dirname(__FILE__) . '/../examples';
$examples = "$ENV{PWD}/examples" unless -d $examples;

my $node = PostgreSQL::Test::Cluster->new('monitoring');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
pg_contention.incident_interval = '1s'
});
$node->start;
# In a schema of its own, as the README creates it and the examples name it.
$node->safe_psql('postgres', q{
	CREATE SCHEMA contention;
	GRANT USAGE ON SCHEMA contention TO PUBLIC;
	CREATE EXTENSION pg_contention SCHEMA contention;
	ALTER DATABASE postgres SET search_path = "$user", public, contention;});

# ---- The view on a healthy server.
my $rows = $node->safe_psql('postgres',
	"SELECT metric, labels, value, type, length(help) > 20 FROM pg_contention_metrics ORDER BY 1, 2");
my @rows = map { [ split /\|/ ] } split /\n/, $rows;
ok(@rows >= 50 && @rows <= 65, 'a bounded number of rows (' . scalar(@rows) . ')');
is(scalar(grep { $_->[3] !~ /^(gauge|counter)$/ || $_->[4] ne 't' } @rows), 0,
	'every row is a gauge or a counter with a help text');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_metrics WHERE value IS NULL'),
	'0', 'no NULL value');
# The horizon's ages are a few XIDs when a transaction happens to run as
# they are read; everything else is zero.
is($node->safe_psql('postgres',
	"SELECT string_agg(metric || ' ' || labels || ' ' || value, ', ') FROM pg_contention_metrics
	  WHERE CASE WHEN metric IN ('sampler_running', 'active_backends') THEN false
				 WHEN metric = 'sampler_last_tick_age_seconds' THEN value >= 5
				 WHEN metric LIKE '%horizon_age_xids' THEN value >= 100
				 ELSE value <> 0 END"),
	'', 'healthy and idle: every figure is zero (the horizon\'s ages a few XIDs at most, the sampler\'s last tick a moment ago), the sampler running');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_metrics WHERE metric = 'findings'"),
	'24', 'findings: eight problems times three severities, always present');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_metrics WHERE metric = 'incidents_opened_total'"),
	'12', 'incidents opened: six problems times two severities, always present');
is($node->safe_psql('postgres',
	"SELECT string_agg(DISTINCT type, ',') FROM pg_contention_metrics WHERE metric LIKE '%\\_total'"),
	'counter', 'the *_total metrics are counters');

is($node->safe_psql('postgres',
	"SELECT string_agg(DISTINCT metric, ',' ORDER BY metric) FROM pg_contention_metrics('{horizon,findings}')"),
	'cluster_horizon_age_xids,findings,horizon_age_xids,horizon_blocking_holders,horizon_held_seconds',
	'families limit the rows to theirs');
is($node->safe_psql('postgres',
	"SELECT string_agg(DISTINCT metric, ',' ORDER BY metric) FROM pg_contention_metrics('{incidents}')"),
	'incidents_open,incidents_opened_total', 'the incidents, a family of their own (no evaluation of the findings)');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM pg_contention_metrics('{horizon,bogus}')");
like($err, qr/ERROR:  unknown metric family in \{horizon,bogus\}\nHINT:  The families are subxact, sampler, horizon, index, old_snapshot, findings and incidents/,
	'an unknown family is an error that lists them');

# ---- The manual's list of metrics (doc/monitoring.md's table) is what
# the view returns, and (below) what the exporter and pgwatch give.
my ($table) = slurp_file(dirname(__FILE__) . '/../doc/monitoring.md')
  =~ /^## pg_contention_metrics\n(.*?)^## /ms;
my @documented = sort map { /`(\w+)`/g } map { (split /\|/)[1] } grep { /^\| `/ } split /\n/, $table;
ok(@documented >= 20, scalar(@documented) . ' metrics in doc/monitoring.md');
# The name a metric is exported under: the query's name, an underscore,
# the column (the findings' count column).
sub exported_name { return $_[0] eq 'findings' ? 'pg_contention_findings_count' : "pg_contention_$_[0]" }

# ---- During the incidents.
$node->safe_psql('postgres', q{
	CREATE TABLE side (id integer);
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer NOT NULL, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 10000, 'open' FROM generate_series(1, 100000) AS g;
	VACUUM ANALYZE orders;
});
my $loader = $node->background_psql('postgres');
$loader->query_safe("SET application_name = 'loader'; BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));
$node->safe_psql('postgres',
	"INSERT INTO orders (customer, note) SELECT 42, 'cancelled' FROM generate_series(1, 100000)");
$node->safe_psql('postgres', "DELETE FROM orders WHERE note = 'cancelled'");
$node->safe_psql('postgres', 'SET enable_bitmapscan = off; SELECT * FROM orders WHERE customer = 42')
  for 1 .. 2;

# The findings family reads the incidents worker's evaluation: one made
# since the incidents began.
PgContention::Test::evaluated_twice($node);
my %metric = map { my @c = split /\|/; ("$c[0] $c[1]" => $c[2]) } split /\n/,
  $node->safe_psql('postgres', 'SELECT metric, labels, value FROM pg_contention_metrics');
# (During the incidents every metric has rows: the index's only when
# some scan met dead entries.)
my %names = map { (split / /)[0] => 1 } keys %metric;
is(join(',', @documented), join(',', sort keys %names),
	'the manual lists every metric of the view, and no other');
is($metric{'overflowed_backends {}'}, 1, 'the overflowed session is counted');
ok($metric{'overflow_events_total {}'} >= 1, 'its overflow event is counted');
ok($metric{'horizon_age_xids {"kind": "backend"}'} >= 1, 'the horizon is held by a backend');
my ($dead) = grep { /^index_dead_entries_per_execution .*"public\.orders_customer"/ } keys %metric;
is($dead && $metric{$dead}, 100000, 'the index scan\'s dead entries per execution');
is($metric{'findings {"problem": "dead_tuple_index_scan", "severity": "critical"}'}, 1,
	'the critical finding is counted');

# ---- postgres_exporter with the queries file.
my $served = '';
SKIP:
{
	my $exporter = find_program('prometheus-postgres-exporter');
	skip 'Debian\'s prometheus-postgres-exporter is not installed', 5 unless $exporter;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $log = '';
	my $run;
	{
		local $ENV{DATA_SOURCE_NAME} = 'host=' . $node->host . ' port=' . $node->port
		  . ' dbname=postgres sslmode=disable user=' . ($ENV{USER} || getpwuid($<));
		$run = IPC::Run::start(
			[ $exporter, "--extend.query-path=$examples/postgres_exporter/queries.yaml",
				"--web.listen-address=127.0.0.1:$port", '--disable-default-metrics',
				'--disable-settings-metrics' ],
			'>', \$log, '2>', \$log);
	}
	my $http = HTTP::Tiny->new(timeout => 10);
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		my $r = $http->get("http://127.0.0.1:$port/metrics");
		$served = $r->{content} if $r->{success};
		last if $served =~ /^pg_contention_findings_count/m;
		select(undef, undef, undef, 0.1);
	}
	$run->kill_kill;
	like($served, qr/^pg_contention_overflowed_backends\{server="[^"]+"\} 1$/m,
		'the exporter serves the overflowed backend') or diag($log);
	like($served,
		qr/^pg_contention_index_dead_entries_per_execution\{database="postgres",index="public\.orders_customer",query_id="-?\d+",server="[^"]+"\} 100000$/m,
		'the exporter serves the dead entries per execution, labelled with the index');
	like($served,
		qr/^pg_contention_findings_count\{problem="dead_tuple_index_scan",server="[^"]+",severity="critical"\} 1$/m,
		'the exporter serves the critical finding');
	like($served, qr/^# TYPE pg_contention_overflow_events_total counter$/m,
		'a counter is typed as one');
	unlike($log, qr/level=error/, 'the exporter logged no error');
}

# ---- Grafana: the dashboard is JSON, and its queries name served metrics.
my $dashboard = decode_json(slurp_file("$examples/grafana/pg_contention.json"));
my @exprs = map { map { $_->{expr} } @{ $_->{targets} } } @{ $dashboard->{panels} };
ok(@exprs >= 10, 'the dashboard has its panel queries (' . scalar(@exprs) . ')');
my %served_names = map { $_ => 1 } ($served =~ /^(pg_contention_\w+)[{ ]/mg);
unless (%served_names)
{
	# No exporter here: the names the queries file defines.
	my $queries = slurp_file("$examples/postgres_exporter/queries.yaml");
	my $family;
	for my $line (split /\n/, $queries)
	{
		$family = $1 if $line =~ /^(\w+):$/;
		$served_names{"${family}_$1"} = 1
		  if $line =~ /^    - (\w+):$/ && $queries !~ /^    - $1:\n        usage: "LABEL"/m;
	}
}
is(join(', ', grep { !$served_names{ exported_name($_) } } @documented), '',
	'every metric of the manual is exported by the exporter\'s queries file'
	  . ($served ? ' (a scrape returned each)' : ' (as the file defines them)'));
my @unknown = grep { !$served_names{$_} } map { /(pg_contention_\w+)/g } @exprs;
is_deeply(\@unknown, [], 'every metric the dashboard queries is one the exporter serves');
ok((grep { /pg_contention_findings_count/ } @exprs)
	  && (grep { /pg_contention_subtrans_reader_lookups_per_second/ } @exprs)
	  && (grep { /pg_contention_horizon_age_xids/ } @exprs),
	'the dashboard shows the findings, the readers\' pg_subtrans lookups and the horizon');

# ---- pgwatch: each definition runs and gives epoch_ns and its columns.
my $pgwatch = slurp_file("$examples/pgwatch/pg_contention.yaml");
my @blocks = $pgwatch =~ /^  (\w+):\n(?:    .*\n)*?      13: \|\n((?:        .*\n)+)/mg;
is(scalar @blocks, 2 * 5, 'five pgwatch metric definitions');
my %pgwatch_names;
while (my ($metric, $sql) = splice(@blocks, 0, 2))
{
	$sql =~ s/^        //mg;
	($ret, $out, $err) = $node->psql('postgres',
		"SELECT count(*) > 0 AND bool_and(epoch_ns > 0) FROM ($sql) AS pgwatch");
	is("$ret $out", '0 t', "the pgwatch definition $metric runs, with epoch_ns")
	  or diag($err);
	# Its fields, named as the exporter's metrics are (tags and the time apart).
	$pgwatch_names{"${metric}_$_"} = 1 for grep { !/^(epoch_ns|tag_\w+)$/ } split /,/, $node->safe_psql('postgres',
		"SELECT string_agg(k, ',') FROM (SELECT * FROM ($sql) AS q LIMIT 1) AS q, jsonb_object_keys(to_jsonb(q)) AS k");
}
is(join(', ', grep { !$pgwatch_names{ exported_name($_) } } @documented), '',
	'every metric of the manual is given by the pgwatch definitions');

# ---- The alerting rules: promtool checks them and runs their unit tests.
SKIP:
{
	my $promtool = find_program('promtool');
	skip 'Debian\'s prometheus (promtool) is not installed', 2 unless $promtool;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $promtool, 'check', 'rules', "$examples/prometheus/pg_contention.rules.yml" ],
		'>', \$out, '2>', \$err);
	like($out . $err, qr/SUCCESS: 7 rules found/, 'promtool check rules') or diag($out . $err);
	IPC::Run::run([ $promtool, 'test', 'rules', "$examples/prometheus/pg_contention.rules.test.yml" ],
		'>', \$out, '2>', \$err);
	is($? >> 8, 0, 'promtool test rules: the alerts fire on the findings, with their severity')
	  or diag($out . $err);
}

$loader->quit;
$node->stop;
done_testing();
