# The extension's calls of its own functions bind exactly (issue 58,
# items 1, 2 and 3), wherever its schema is writable by a plain role.
#
# mallory, a plain role, plants overloads of every function of the
# extension, derived from the catalog after CREATE EXTENSION (not a hand
# list): each argument as text, as another numeric type (integer for
# bigint, ...), fewer arguments and none (PgContention::Traps::overloads),
# each a trap that logs who ran it.  Where:
#
#   shop  the extension in public, which mallory may CREATE in (PUBLIC
#         may on 13 and 14; granted on 15 and later), the traps planted
#         before CREATE EXTENSION, so that its views are bound with them
#         in place (the incidents worker's database)
#   crm   the extension in schema pgc, made writable for mallory, the
#         traps planted after it, in pgc and in public
#   up_V  for each released version V: the extension created at V, the
#         traps planted in public, then ALTER EXTENSION UPDATE
#
# A positive control shows the traps armed: called the unsafe way (a
# literal of another type, a default), a planted overload runs or makes
# the call ambiguous.  Then every view is bound to pg_catalog's and the
# extension's objects only; with incidents of three problems open, the
# worker evaluates, freezes and resolves; every client command runs; every
# view and function is read as a superuser, a pg_read_all_stats member and
# a plain role; the monitoring examples' queries run as a pg_monitor role:
# no trap runs, no call is ambiguous, and mallory stays a plain role.
# Installing into a schema others can write warns with the remedy.
use strict;
use warnings;
use File::Basename;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client savepoint_script);
use PgContention::Traps qw(planted_cluster shop_tables bench_script end_holders trap_fired yaml_queries extension_functions overloads plant_overloads
  signature);

my $top = dirname(__FILE__) . '/..';
$top = $ENV{PWD} unless -d "$top/client";

my $node = planted_cluster('overloads');
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
# The released versions: those the released scripts install or update to.
my %released;
for (split /\n/, slurp_file("$top/src/sql/released.sha256"))
{
	$released{$1} = 1 if /pg_contention--(?:[\d.]+--)?([\d.]+)\.sql$/;
}
my @released = sort { $a <=> $b } keys %released;
my $share = $node->safe_psql('postgres', "SELECT setting FROM pg_catalog.pg_config WHERE name = 'SHAREDIR'");

$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE ROLE app LOGIN;
	CREATE ROLE plain LOGIN;
	CREATE ROLE stats LOGIN IN ROLE pg_read_all_stats;
	CREATE ROLE monitor LOGIN IN ROLE pg_monitor;
	CREATE DATABASE ref;
	CREATE DATABASE shop;
	CREATE DATABASE crm;
});
$node->safe_psql('postgres', "CREATE DATABASE up_$_") for map { s/\./_/gr } @released;

# On 15 and later only the database owner may CREATE in public; 13 and 14
# let every role, as do databases upgraded from them.
sub public_writable
{
	my ($db) = @_;
	$node->safe_psql($db, 'GRANT CREATE ON SCHEMA public TO mallory') if $version >= 150000;
	return;
}

# What to plant: the extension's functions, from a catalog.
$node->safe_psql('ref', 'CREATE EXTENSION pg_contention');
my $functions = extension_functions($node, 'ref');
my $overloads = overloads($functions);
ok(@$functions >= 40 && @$overloads > 2 * @$functions,
	scalar(@$functions) . ' functions of the extension, ' . scalar(@$overloads) . ' overloads of them to plant');
my %planned = map { ($_->[0] . '(' . join(', ', map { s/\|/ /r } @{ $_->[1] }) . ')') => 1 } @$overloads;
ok($planned{'pg_contention_incidents(with_details boolean, incident integer)'}
	  && $planned{'pg_contention_report(window_length interval, incident integer, with_values boolean)'}
	  && $planned{'pg_contention_rule_dead_tuple_index_scan(window_length text)'}
	  && $planned{'pg_contention_findings()'} && $planned{'pg_contention_metrics(families text)'},
	'among them the issue\'s: incidents(boolean, integer), report(..., incident integer, ...), rule_dead_tuple_index_scan(text), findings(), metrics(text)');

# ---- shop: traps in public first, the extension after them.
public_writable('shop');
my $planted = plant_overloads($node, 'shop', 'mallory', 'public', $overloads);
is($planted, scalar(@$overloads), "shop: mallory planted all $planted in public before CREATE EXTENSION");
my ($ret, $out, $err) = $node->psql('shop', 'CREATE EXTENSION pg_contention');
is($ret, 0, 'shop: CREATE EXTENSION beside them');
like($err, qr/WARNING:  pg_contention is installed in schema public, where other roles may create objects: (PUBLIC|mallory).*HINT:  Revoke CREATE on schema public from them, or install pg_contention in a schema of its own/s,
	'shop: and it warns that others may create objects there, with the remedy');

# ---- crm: the extension in pgc, writable; traps after it, in pgc and public.
public_writable('crm');
$node->safe_psql('crm', 'CREATE SCHEMA pgc; GRANT USAGE ON SCHEMA pgc TO PUBLIC');
($ret, $out, $err) = $node->psql('crm', 'CREATE EXTENSION pg_contention SCHEMA pgc');
is("$ret $err", '0 ', 'crm: no warning in a schema only its owner may create in');
$node->safe_psql('crm', 'GRANT CREATE ON SCHEMA pgc TO mallory');
ok(plant_overloads($node, 'crm', 'mallory', 'pgc', $overloads) > 0
	  && plant_overloads($node, 'crm', 'mallory', 'public', $overloads) > 0,
	'crm: mallory planted them in pgc, made writable, and in public, after CREATE EXTENSION');

# The signatures the released scripts create on the way from the first
# release: planting one of those is not an overload but the very function
# a step creates, which the server refuses to replace (the update fails,
# running nothing of the planter's): not planted in the up_V databases.
$node->safe_psql('postgres', 'CREATE DATABASE steps');
$node->safe_psql('steps', "CREATE EXTENSION pg_contention VERSION '$released[0]'");
my %created;
for my $v (@released)
{
	$node->safe_psql('steps', "ALTER EXTENSION pg_contention UPDATE TO '$v'") if $v ne $released[0];
	$created{ signature($_) } = 1 for @{ extension_functions($node, 'steps') };
}
my $update_overloads = [ grep { !$created{ signature($_) } } @$overloads ];

# ---- Each released version, updated with the traps in place.  The
# released steps before 1.3's bind their views by name: the 1.2 to 1.3
# step re-creates a view over pg_contention_metrics(NULL), which a planted
# pg_contention_metrics(text) wins (the update fails: the view's column
# would change name; a planted function returning the same columns would
# be bound until the 1.3 to 1.4 step binds the view again, in the same
# transaction), and earlier steps' views call functions that lean on a
# default (ambiguous beside a planted one).  Released scripts never change:
# such an update is refused, never captured; from 1.3 on, it succeeds.
for my $v (@released)
{
	my $db = 'up_' . ($v =~ s/\./_/gr);
	public_writable($db);
	# 1.0 and 1.3 have install scripts; the others are reached by update.
	my ($base) = grep { -e "$share/extension/pg_contention--$_.sql" } reverse grep { $_ <= $v } @released;
	$node->safe_psql($db, "SET client_min_messages = error; CREATE EXTENSION pg_contention VERSION '$base'");
	$node->safe_psql($db, "ALTER EXTENSION pg_contention UPDATE TO '$v'") if $base ne $v;
	plant_overloads($node, $db, 'mallory', 'public', $update_overloads);
	($ret, $out, $err) = $node->psql($db, 'ALTER EXTENSION pg_contention UPDATE');
	if ($v < 1.3)
	{
		ok($ret == 0 || $err =~ /ERROR:  (cannot change name of view column "pg_contention_metrics"|function public\.pg_contention_\w+\(\) is not unique)/,
			"$db: ALTER EXTENSION UPDATE from $v with the traps in public: done, or refused by a released step")
		  or diag($err);
		next;
	}
	is($ret, 0, "$db: ALTER EXTENSION UPDATE from $v with the traps in public") or diag($err);
	like($err, qr/WARNING:  pg_contention is installed in schema public, where other roles may create objects/,
		"$db: and the update warns");
}

# ---- The traps are armed: called the unsafe way, they win or break the call.
is($node->safe_psql('shop', q{
	BEGIN;
	SELECT count(*) FROM public.pg_contention_incidents(true, 1);
	SELECT public.pg_contention_rule_dead_tuple_index_scan(NULL);
	SELECT pg_catalog.string_agg(trap, ', ' ORDER BY trap) FROM public.pgc_trap_log;
	ROLLBACK;}), "1\n\npublic.pg_contention_incidents:with_details boolean,incident integer, public.pg_contention_rule_dead_tuple_index_scan:window_length text",
	'positive control: incidents(true, 1) and rule_dead_tuple_index_scan(NULL) run mallory\'s traps (rolled back)');
is($node->safe_psql('shop', q{
	BEGIN;
	SELECT public.pg_contention_report(incident => 1);
	SELECT pg_catalog.string_agg(trap, ', ' ORDER BY trap) FROM public.pgc_trap_log;
	ROLLBACK;}), "\npublic.pg_contention_report:incident integer",
	'positive control: report(incident => 1), as the client sent it, runs mallory\'s report(incident integer) (rolled back)');
($ret, $out, $err) = $node->psql('shop', 'SELECT count(*) FROM public.pg_contention_findings()');
like($err, qr/function public\.pg_contention_findings\(\) is not unique/,
	'positive control: findings() leaning on its default is ambiguous');

# ---- What the catalog promises: every view bound to pg_catalog's and the
# extension's objects only, in every database.
for my $db ('shop', 'crm', map { 'up_' . s/\./_/gr } @released)
{
	is($node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		WITH m AS (
			SELECT d.objid FROM pg_depend AS d JOIN pg_extension AS e ON e.oid = d.refobjid
			 WHERE d.refclassid = 'pg_extension'::regclass AND d.classid = 'pg_class'::regclass
			   AND e.extname = 'pg_contention' AND d.deptype = 'e'),
		bound AS (
			SELECT r.ev_class::regclass AS view, d.refclassid, d.refobjid
			  FROM m JOIN pg_rewrite AS r ON r.ev_class = m.objid
			  JOIN pg_depend AS d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid),
		named AS (
			SELECT b.view, p.pronamespace AS nsp, b.refclassid, p.oid, p.oid::regprocedure::text AS what FROM bound AS b
			  JOIN pg_proc AS p ON b.refclassid = 'pg_proc'::regclass AND p.oid = b.refobjid
			UNION ALL
			SELECT b.view, o.oprnamespace, b.refclassid, o.oid, o.oid::regoperator::text FROM bound AS b
			  JOIN pg_operator AS o ON b.refclassid = 'pg_operator'::regclass AND o.oid = b.refobjid)
		SELECT string_agg(DISTINCT view || ': ' || what, ', ')
		  FROM named AS x
		 WHERE x.nsp <> 'pg_catalog'::regnamespace
		   AND NOT EXISTS (SELECT FROM pg_depend AS d JOIN pg_extension AS e ON e.oid = d.refobjid
							WHERE d.classid = x.refclassid AND d.objid = x.oid AND d.deptype = 'e'
							  AND e.extname = 'pg_contention')}),
		'', "$db: every view of the extension is bound to pg_catalog's and the extension's functions only");
}

# ---- Incidents of three problems in shop: an overflow, an idle
# transaction in front of dead index entries, a forgotten prepared
# transaction (in crm).
for my $db (qw(shop crm))
{
	shop_tables($node, $db);
}
my $holder = $node->background_psql('shop', extra_params => [ '-U', 'app' ]);
$holder->query_safe("SET application_name = 'nightly'; BEGIN; SELECT pg_catalog.txid_current()");
$node->safe_psql('shop', 'DELETE FROM public.items WHERE k OPERATOR(pg_catalog.=) 7', extra_params => [ '-U', 'app' ]);
$node->safe_psql('crm', "BEGIN; INSERT INTO public.items VALUES (100001, 1); PREPARE TRANSACTION 'forgotten'",
	extra_params => [ '-U', 'app' ]);
my $lookup = "SET enable_seqscan = off;\nSET enable_bitmapscan = off;\n"
  . "SELECT pg_catalog.sum(id) FROM public.items WHERE k OPERATOR(pg_catalog.=) 7;\n";
$node->safe_psql($_, $lookup x 3, extra_params => [ '-U', 'app' ]) for qw(shop crm);

my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start([ 'pgbench', '-n', '-c', '2', '-j', '2', '-R', '40', '-T', '600', '-U', 'app',
		'-h', $node->host, '-p', $node->port, '-f', bench_script($node, 'savepoints.sql', savepoint_script(70)),
		'-f', bench_script($node, 'lookup.sql', $lookup), 'shop' ],
	'>', \$bench_out, '2>', \$bench_err);
ok($node->poll_query_until('shop', q{
	SELECT pg_catalog.count(DISTINCT problem) OPERATOR(pg_catalog.>=) 3 FROM public.pg_contention_incidents
	 WHERE problem OPERATOR(pg_catalog.=) ANY ('{subxact_overflow,xmin_horizon_held,dead_tuple_index_scan}')}),
	'shop: the worker opened incidents of the three problems beside the traps')
  or diag($node->safe_psql('shop', 'SELECT problem, severity, subject FROM public.pg_contention_findings'));
$bench->kill_kill;

# ---- Every client command, as the DBA runs them.
sub client_commands
{
	my ($db) = @_;
	local $ENV{PGDATABASE} = $db;
	local $ENV{PGUSER} = $superuser;
	my $html = $node->basedir . "/report-$db.html";
	my @ids = split /\n/, $node->safe_psql('shop', 'SELECT id FROM public.pg_contention_incidents');
	for my $args ([ 'check' ], [ 'check', '--live' ], [ 'report' ], [ 'report', '--with-values' ],
		[ 'report', "--html=$html" ], [ 'incidents' ], [ 'top', '-n', '2', '-i', '0.2' ],
		map { ([ 'report', "--incident=$_" ], [ 'report', "--incident=$_", '--with-values' ],
				[ 'report', "--incident=$_", "--html=$html" ]) } @ids)
	{
		my ($rc, $out, $err) = run_client($node, @$args);
		ok($rc <= 2 && $err eq '', "$db: pg_contention @$args") or diag("exit $rc: $err");
	}
	return;
}
client_commands($_) for qw(shop crm);

# ---- Every view and every function, each argument of its exact type (a
# call that leans on a default would be the test's own ambiguity): NULL
# but for the window in seconds, an incident id and the switches.
my %value_of = (
	'integer' => '10',
	'bigint' => '1::bigint',
	'boolean' => 'true');
sub read_everything
{
	my ($db, $schema, $role) = @_;
	my @statements = map { "SELECT count(*) FROM $schema.$_" } split /\n/, $node->safe_psql($db, q{
		SELECT c.relname FROM pg_depend AS d JOIN pg_class AS c ON c.oid = d.objid
		  JOIN pg_extension AS e ON e.oid = d.refobjid
		 WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
		   AND e.extname = 'pg_contention' AND c.relkind = 'v' ORDER BY 1});
	for my $f (@$functions)
	{
		my ($name, $types) = @$f;
		next if $name eq 'pg_contention_reset';
		my $args = join(', ', map { my $type = (split /\|/, $_, 2)[1]; $value_of{$type} // "NULL::$type" } @$types);
		push @statements, "SELECT count(*) FROM $schema.$name($args)";
	}
	my $script = join('', map { "$_;\n" } @statements);
	my ($ret, $out, $err) = $node->psql($db, $script, on_error_stop => 0, extra_params => [ '-U', $role ]);
	my @failed = grep { !/permission denied for (function|view)/ } $err =~ /^psql:<stdin>:\d+: ERROR:  (.*)$/mg;
	is("@failed", '', "$db: $role read " . scalar(@statements) . ' views and functions, no call ambiguous');
	return;
}
for my $role ($superuser, 'stats', 'plain')
{
	read_everything('shop', 'public', $role);
	read_everything('crm', 'pgc', $role);
}

# ---- The monitoring examples' queries, as the exporter's pg_monitor role.
my @queries = map { yaml_queries(slurp_file($_)) }
  glob("$top/examples/postgres_exporter/*.yaml"), glob("$top/examples/pgwatch/*.yaml");
ok(@queries >= 5, scalar(@queries) . ' monitoring queries');
for my $db (qw(shop crm))
{
	my $schema = $db eq 'shop' ? 'public' : 'pgc';
	for my $sql (@queries)
	{
		# The examples name the README's schema.
		(my $here = $sql) =~ s/\bcontention\.pg_contention_/$schema.pg_contention_/g;
		my ($ret, $out, $err) = $node->psql($db, $here, extra_params => [ '-U', 'monitor' ]);
		is($ret, 0, "$db: monitoring query as pg_monitor: " . substr($sql =~ s/\s+/ /gr, 0, 50)) or diag($err);
	}
}

# ---- The fixes: every incident closes, its resolution found by the worker.
my ($closed, $unresolved) = end_holders($node, $holder, 'public');
ok($closed, 'shop: every incident closed after its fix');
is($unresolved, '', 'shop: each with what ended it (the resolution functions ran)');
# (Whatever it finds now, the index's resolution from its state.)
($ret, $out, $err) = $node->psql('shop', q{
	SELECT public.pg_contention_incident_resolution('dead_tuple_index_scan'::text, details -> 'finding', now(),
			   pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('problem', 'dead_tuple_index_scan',
				   'database_oid', details -> 'finding' -> 'database_oid', 'indexrelid', details -> 'finding' -> 'indexrelid',
				   'state', 'clean')))
	  FROM public.pg_contention_incidents WHERE problem = 'dead_tuple_index_scan'});
is("$ret $err", '0 ', 'shop: the index\'s resolution, judged on the state it is given');
client_commands('shop');

# ---- What exact calls cannot prevent, and why the install warns: in a
# database a plain role owns (public is its to create in: on 15 and later
# through pg_database_owner), a function of the extension's name with one
# more argument that has a default makes the extension's own call
# ambiguous.  The call fails; it never runs the planted function.
$node->safe_psql('postgres', 'CREATE ROLE appowner LOGIN; CREATE DATABASE owned OWNER appowner');
($ret, $out, $err) = $node->psql('owned', 'CREATE EXTENSION pg_contention');
like($err, qr/WARNING:  pg_contention is installed in schema public, where other roles may create objects: (PUBLIC|appowner)\n/,
	'owned: CREATE EXTENSION warns that the database\'s owner (or every role) may create objects in public');
plant_overloads($node, 'owned', 'appowner', 'public', []);
$node->safe_psql('owned', q{
	CREATE FUNCTION public.pg_contention_findings(interval, integer DEFAULT 0) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.pgc_trap_log VALUES ('findings with a default', current_user, '', pg_catalog.current_query(), '');
		RETURN NULL;
	END $$}, extra_params => [ '-U', 'appowner' ]);
($ret, $out, $err) = $node->psql('owned', 'SELECT count(*) FROM public.pg_contention_findings_latest()');
like($err, qr/function public\.pg_contention_findings\(interval\) is not unique/,
	'owned: a planted overload with one more defaulted argument makes the extension\'s own call fail (the documented limit)');

# ---- Nothing ran mallory's code, nothing failed.
for my $db ('shop', 'crm', 'owned', map { 'up_' . s/\./_/gr } @released)
{
	is(trap_fired($node, $db), '', "$db: no trap ran");
}
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = 'mallory'"),
	'f', 'mallory is still a plain role');
ok(!$node->log_contains(qr/pg_contention incidents: the (evaluation|evidence|resolution)[^\n]* failed/),
	'the worker never failed');

$node->stop;
done_testing();
