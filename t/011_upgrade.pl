# Upgrades: version 1.0 (or 1.1, 1.2, 1.3) installed, then ALTER EXTENSION
# pg_contention UPDATE, gives the same objects with the same definitions,
# settings and privileges as a fresh install of the current version; and
# the updated extension works.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'");
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('postgres', 'CREATE DATABASE from11');
$node->safe_psql('postgres', 'CREATE DATABASE from12');
$node->safe_psql('postgres', 'CREATE DATABASE from13');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('updated', "CREATE EXTENSION pg_contention VERSION '1.0'");
is($node->safe_psql('updated', "SELECT extversion FROM pg_extension WHERE extname = 'pg_contention'"),
	'1.0', 'version 1.0 installs');
# Before the update, 1.0's views still work with the new library (it
# fills more columns than they declare).
for my $view (qw(pg_contention_statements pg_contention_index_scans pg_contention_horizon
	pg_contention_sampler_status))
{
	my ($ret) = $node->psql('updated', "SELECT * FROM $view");
	is($ret, 0, "1.0's $view answers with the new library");
}
$node->safe_psql('updated', 'ALTER EXTENSION pg_contention UPDATE');
$node->safe_psql('fresh', 'CREATE EXTENSION pg_contention');
my $default = $node->safe_psql('fresh',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'pg_contention'");
is($node->safe_psql('updated', "SELECT extversion FROM pg_extension WHERE extname = 'pg_contention'"),
	$default, "the update reaches the default version ($default)");

# Everything that makes an object what it is, one line per object,
# independent of OIDs and creation order.
my $describe = q{
	WITH members AS (
		SELECT d.classid, d.objid
		  FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		   AND e.extname = 'pg_contention')
	SELECT string_agg(line, E'\n' ORDER BY line) FROM (
		SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid)
			   || ') returns ' || pg_get_function_result(p.oid)
			   || ' ' || p.provolatile::text || p.proparallel::text || p.proisstrict::text
			   || ' ' || p.prosrc || ' ' || coalesce(p.proacl::text, 'default')
			   || ' ' || coalesce(p.proconfig::text, 'no settings') AS line
		  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
		UNION ALL
		SELECT 'view ' || c.relname || ' ' || coalesce(c.relacl::text, 'default') || E'\n'
			   || pg_get_viewdef(c.oid)
		  FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
		UNION ALL
		SELECT 'column ' || c.relname || '.' || a.attnum || ' ' || a.attname || ' '
			   || format_type(a.atttypid, a.atttypmod)
		  FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
		  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
		UNION ALL
		SELECT 'other ' || pg_describe_object(m.classid, m.objid, 0)
		  FROM members m
		 WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass)
		   AND pg_describe_object(m.classid, m.objid, 0) NOT LIKE 'type %') AS objects(line)
};
my $updated = $node->safe_psql('updated', $describe);
my $fresh = $node->safe_psql('fresh', $describe);
ok(length($fresh) > 1000, 'the description of a fresh install is not empty');
is($updated, $fresh, 'the updated extension equals a fresh install: objects, definitions, privileges');

# From 1.1 (installed through the chain from 1.0) too.
$node->safe_psql('from11', "CREATE EXTENSION pg_contention VERSION '1.1'");
$node->safe_psql('from11', 'ALTER EXTENSION pg_contention UPDATE');
is($node->safe_psql('from11', $describe), $fresh, '1.1 updated equals a fresh install');

# From 1.2: its history view (one column fewer) answers with the new
# library before the update.
$node->safe_psql('from12', "CREATE EXTENSION pg_contention VERSION '1.2'");
$node->poll_query_until('from12', 'SELECT count(*) > 0 FROM pg_contention_history')
  or die 'the sampler wrote no history';
is($node->safe_psql('from12',
		"SELECT count(*) FROM information_schema.columns WHERE table_name = 'pg_contention_history'"),
	'22', "1.2's pg_contention_history has 22 columns");
my ($ret12) = $node->psql('from12', 'SELECT * FROM pg_contention_history');
is($ret12, 0, "1.2's pg_contention_history answers with the new library");
$node->safe_psql('from12', 'ALTER EXTENSION pg_contention UPDATE');
is($node->safe_psql('from12', $describe), $fresh, '1.2 updated equals a fresh install');
like($node->safe_psql('from12',
		'SELECT horizon_xid_age >= 0 FROM pg_contention_history ORDER BY bucket_start DESC LIMIT 1'),
	qr/^t$/, 'after the update the history has the horizon age');

# From 1.3, the last hand-written install script, through the first
# generated update (src/sql/, tools/sql.sh).
$node->safe_psql('from13', "CREATE EXTENSION pg_contention VERSION '1.3'");
my ($ret13) = $node->psql('from13', 'SELECT * FROM pg_contention_findings');
is($ret13, 0, "1.3's pg_contention_findings answers with the new library");
is($node->safe_psql('from13',
		"SELECT count(*) FROM information_schema.columns WHERE table_name = 'pg_contention_history'"),
	'23', "1.3's pg_contention_history has 23 columns");
($ret13) = $node->psql('from13', 'SELECT * FROM pg_contention_history');
is($ret13, 0, "1.3's pg_contention_history answers with the new library");
$node->safe_psql('from13', 'ALTER EXTENSION pg_contention UPDATE');
is($node->safe_psql('from13', $describe), $fresh, '1.3 updated equals a fresh install');
is($node->safe_psql('from13',
		"SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns
		  WHERE table_name = 'pg_contention_history' AND ordinal_position > 23"),
	'xids_assigned,subtrans_reader_lookups', "1.4's history: the XIDs assigned and the readers' lookups, appended");
ok($node->poll_query_until('from13',
		'SELECT count(*) > 0 FROM pg_contention_history
		  WHERE xids_assigned >= 0 AND subtrans_reader_lookups BETWEEN 0 AND subtrans_lookups'),
	'after the update the history has the XIDs assigned and the readers\' lookups (at most the raw figure)');

# Every finding rule is a function of its own, and the findings are their
# union: each rule answers alone, with the findings' columns.
my @rules = split /\n/, $node->safe_psql('fresh',
	"SELECT proname FROM pg_proc WHERE proname LIKE 'pg\\_contention\\_rule\\_%' ORDER BY 1");
is(scalar(@rules), 8, 'eight rule functions (sampler_stale is the eighth)');
# The two that build on another's findings are given them (a JSON array).
my %given = (pg_contention_rule_subtrans_slru_contention => 'pg_contention_rule_subxact_overflow',
	pg_contention_rule_xmin_horizon_held => 'pg_contention_rule_dead_tuple_index_scan');
# (The two index rules give the findings one row per cause;
# pg_contention_index_findings asks them for every row.)
my $findings_def = $node->safe_psql('fresh',
	"SELECT pg_get_functiondef('pg_contention_findings(interval)'::regprocedure)");
is(scalar(() = $findings_def =~ /pg_contention_rule_(?:dead_tuple_index|hot_chain)_scan\(window_length, \(SELECT h\.roots FROM horizon AS h\), true\)/g),
	2, 'pg_contention_findings asks the two index rules for one finding per cause');
like($node->safe_psql('fresh',
		"SELECT pg_get_functiondef('pg_contention_index_findings(interval, jsonb)'::regprocedure)"),
	qr/pg_contention_rule_dead_tuple_index_scan\(window_length, \(SELECT h\.roots FROM horizon AS h\), false\)/,
	'pg_contention_index_findings asks them for every row');
for my $rule (@rules)
{
	my $args = $given{$rule} ? "NULL, '[]'" : '';
	my ($ret, $out, $err) = $node->psql('fresh',
		"SELECT problem, severity, subject, evidence, advice, details, since FROM $rule($args)");
	is($ret, 0, "$rule answers alone");
	(my $problem = $rule) =~ s/^pg_contention_rule_//;
	my @calls = $findings_def =~ /\Q$rule(\E\s*window_length\b/g;
	is(scalar(@calls), 1, "pg_contention_findings evaluates $problem once, through its rule");
}
# No rule calls another: each is evaluated once per execution of the findings.
for my $rule (@rules)
{
	my $def = $node->safe_psql('fresh', "SELECT string_agg(pg_get_functiondef(oid), '') FROM pg_proc WHERE proname = '$rule'");
	my @others = grep { $_ ne $rule && index($def, "$_(") >= 0 } @rules;
	is("@others", '', "$rule calls no other rule");
}

# The updated extension works: every view answers.
for my $view (qw(pg_contention_subxact pg_contention_overflow_events pg_contention_statements
	pg_contention_info pg_contention_index_scans pg_contention_horizon pg_contention_waits
	pg_contention_history pg_contention_sampler_status pg_contention_old_snapshot
	pg_contention_findings pg_contention_metrics))
{
	my ($ret) = $node->psql('updated', "SELECT * FROM $view");
	is($ret, 0, "$view answers after the update");
}
like($node->safe_psql('updated', 'SELECT pg_contention_report()'),
	qr/^pg_contention report at .*== Findings \(0\).*== The last 60 seconds/s,
	'pg_contention_report() answers after the update');

$node->stop;
done_testing();
