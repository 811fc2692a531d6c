# A cluster shared with a role it does not trust (issue 45, item 1).
# mallory, a plain role that may CREATE in schema public (every role on
# PostgreSQL 13 and 14 by default; granted here on 15 and later, as on a
# cluster upgraded from them), plants a trap for every operator and
# function name pg_contention's SQL uses, over the types they meet
# (PgContention::Traps derives both from the installed script, the
# client's statements and the monitoring examples, not from a hand list).
# Then, with incidents of three problems open in two databases, the
# incidents worker evaluates, freezes and resolves; every client command
# runs; every view and function of the extension is read by a superuser
# with the default search_path, by a member of pg_read_all_stats and by a
# plain role; the monitoring examples' queries run: no trap runs, and
# mallory stays a plain role.
#
# Two databases: shop, with the extension in a schema of its own and the
# traps planted after it (the incidents worker's database); crm, with the
# traps planted first and the extension created in public beside them,
# so that its views are bound with the traps in place.  The catalog says
# why no trap can run: every function of the extension that is not C
# pins its search_path, and every view is bound to pg_catalog's and the
# extension's objects only.
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
use PgContention::Traps qw(planted_cluster shop_tables bench_script end_holders trap_targets plant_traps trap_fired yaml_queries);

my $top = dirname(__FILE__) . '/..';
$top = $ENV{PWD} unless -d "$top/client";

my $node = planted_cluster('planted');
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');

$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE ROLE app LOGIN;
	CREATE ROLE plain LOGIN;
	CREATE ROLE stats LOGIN IN ROLE pg_read_all_stats;
	CREATE DATABASE shop;
	CREATE DATABASE crm;
});
for my $db (qw(shop crm))
{
	shop_tables($node, $db);
	# On 15 and later only the database owner may CREATE in public; 13
	# and 14 let every role.
	$node->safe_psql($db, 'GRANT CREATE ON SCHEMA public TO mallory') if $version >= 150000;
}
$node->safe_psql('shop',
	'CREATE SCHEMA pgc; GRANT USAGE ON SCHEMA pgc TO PUBLIC; CREATE EXTENSION pg_contention SCHEMA pgc');

# ---- The traps: shop's after the extension, crm's before it.
my $targets = trap_targets($node, 'shop', $top);
ok(@{ $targets->{operators} } >= 10 && @{ $targets->{types} } >= 10,
	'the traps\' targets, from the SQL: ' . scalar(@{ $targets->{operators} }) . ' operator names over '
	  . scalar(@{ $targets->{types} }) . ' types, ' . scalar(@{ $targets->{functions} }) . ' function names');
ok((grep { $_ eq '/' } @{ $targets->{operators} }) && (grep { $_ eq '||' } @{ $targets->{operators} })
	  && (grep { $_ eq 'numeric' } @{ $targets->{types} }) && (grep { $_ eq 'regnamespace' } @{ $targets->{types} }),
	'among them the two the issue named: / (numeric, integer) and || (regnamespace, text)');
for my $db (qw(shop crm))
{
	my $planted = plant_traps($node, $db, 'mallory', $targets);
	ok($planted > 10000, "mallory planted $planted operators and functions in $db\'s schema public");
	# They are armed: the issue's own example runs mallory's code from a
	# superuser's plain query.
	is($node->safe_psql($db, q{
		BEGIN;
		SELECT 1.5::numeric / 2;
		SELECT pg_catalog.count(*) FROM public.pgc_trap_log;
		ROLLBACK;}), "\n1", "$db: a superuser's 1.5::numeric / 2 runs mallory's trap (rolled back)");
}
$node->safe_psql('crm', 'CREATE EXTENSION pg_contention');

# ---- What the catalog promises, in both databases.
for my $db (qw(shop crm))
{
	my $members = q{
		SELECT d.objid, d.classid FROM pg_catalog.pg_depend AS d
		  JOIN pg_catalog.pg_extension AS e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
		 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND e.extname OPERATOR(pg_catalog.=) 'pg_contention' AND d.deptype OPERATOR(pg_catalog.=) 'e'};
	is($node->safe_psql($db, qq{
		SET search_path = pg_catalog, pg_temp;
		WITH m AS ($members)
		SELECT string_agg(p.oid::regprocedure::text, ', ' ORDER BY 1)
		  FROM m JOIN pg_proc AS p ON p.oid = m.objid AND m.classid = 'pg_proc'::regclass
		  JOIN pg_language AS l ON l.oid = p.prolang
		 WHERE l.lanname <> 'c'
		   AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false)}),
		'', "$db: every function of the extension but C ones runs with search_path pg_catalog, pg_temp");
	is($node->safe_psql($db, qq{
		SET search_path = pg_catalog, pg_temp;
		WITH m AS ($members),
		bound AS (
			SELECT v.oid::regclass AS view, d.refclassid, d.refobjid
			  FROM m JOIN pg_rewrite AS r ON r.ev_class = m.objid AND m.classid = 'pg_class'::regclass
			  JOIN pg_class AS v ON v.oid = r.ev_class
			  JOIN pg_depend AS d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid),
		named AS (
			SELECT b.view, o.oprnamespace AS nsp, b.refclassid, o.oid, o.oid::regoperator::text AS what FROM bound AS b
			  JOIN pg_operator AS o ON b.refclassid = 'pg_operator'::regclass AND o.oid = b.refobjid
			UNION ALL
			SELECT b.view, p.pronamespace, b.refclassid, p.oid, p.oid::regprocedure::text FROM bound AS b
			  JOIN pg_proc AS p ON b.refclassid = 'pg_proc'::regclass AND p.oid = b.refobjid
			UNION ALL
			SELECT b.view, t.typnamespace, b.refclassid, t.oid, t.oid::regtype::text FROM bound AS b
			  JOIN pg_type AS t ON b.refclassid = 'pg_type'::regclass AND t.oid = b.refobjid)
		-- The extension's own objects are its members, wherever its schema
		-- is: in crm it is public, where mallory's traps are too.
		SELECT string_agg(DISTINCT view || ': ' || what, ', ')
		  FROM named AS x
		 WHERE x.nsp <> 'pg_catalog'::regnamespace
		   AND NOT EXISTS (SELECT FROM ($members) AS m WHERE m.classid = x.refclassid AND m.objid = x.oid)
		   AND NOT (x.refclassid = 'pg_type'::regclass
					AND x.nsp = (SELECT extnamespace FROM pg_extension WHERE extname = 'pg_contention'))}),
		'', "$db: every view of the extension is bound to pg_catalog's and the extension's objects only");
}

# ---- Incidents of three problems: a subtransaction overflow and an idle
# transaction in front of dead index entries in shop, a forgotten prepared
# transaction in crm.
my $holder = $node->background_psql('shop', extra_params => [ '-U', 'app' ]);
$holder->query_safe("SET application_name = 'nightly'; BEGIN; SELECT pg_catalog.txid_current()");
$node->safe_psql('shop', 'DELETE FROM public.items WHERE k OPERATOR(pg_catalog.=) 7',
	extra_params => [ '-U', 'app' ]);
$node->safe_psql('crm', "BEGIN; INSERT INTO public.items VALUES (100001, 1); PREPARE TRANSACTION 'forgotten'",
	extra_params => [ '-U', 'app' ]);
for my $db (qw(shop crm))
{
	$node->safe_psql($db, 'SET enable_seqscan = off; SET enable_bitmapscan = off;'
		  . ' SELECT pg_catalog.sum(id) FROM public.items WHERE k OPERATOR(pg_catalog.=) 7;' x 5,
		extra_params => [ '-U', 'app' ]);
}
# What the idle transaction costs besides: a job queue's 1,000 dead rows
# (due for autovacuum), written without an operator or an unqualified
# function.
$node->safe_psql('shop', q{
	CREATE TABLE public.queue (id integer);
	INSERT INTO public.queue SELECT g FROM pg_catalog.generate_series(1, 1000) AS g;
	DELETE FROM public.queue;});
# The overflow and the lookups go on until the worker has seen what they
# cost (with a 10 s window, a short run's figures can age out before an
# evaluation on a loaded machine), then stop.
my ($bench_out, $bench_err) = ('', '');
# (At 40 transactions a second: enough for all three, and the machine is
# left to the worker.)
my $bench = IPC::Run::start([ 'pgbench', '-n', '-c', '2', '-j', '2', '-R', '40', '-T', '600', '-U', 'app',
		'-h', $node->host, '-p', $node->port, '-f', bench_script($node, 'savepoints.sql', savepoint_script(70)),
		'-f', bench_script($node, 'lookup.sql', "SET enable_seqscan = off;\nSET enable_bitmapscan = off;\n"
			  . "SELECT pg_catalog.sum(id) FROM public.items WHERE k OPERATOR(pg_catalog.=) 7;\n"), 'shop' ],
	'>', \$bench_out, '2>', \$bench_err);
ok($node->poll_query_until('shop', q{
	SELECT pg_catalog.count(DISTINCT problem) OPERATOR(pg_catalog.>=) 3 FROM pgc.pg_contention_incidents
	 WHERE problem OPERATOR(pg_catalog.=) ANY ('{subxact_overflow,xmin_horizon_held,dead_tuple_index_scan}')}),
	'the worker opened incidents of the three problems, with their evidence frozen')
  or diag($node->safe_psql('shop', 'SELECT problem, severity, subject FROM pgc.pg_contention_findings'));
$bench->kill_kill;
isnt($node->safe_psql('shop', 'SELECT pg_catalog.count(*) FROM pgc.pg_contention_overflow_events'), '0',
	'pgbench: 70 savepoints per transaction in shop, overflowed');


# ---- Every client command, as the DBA runs them: a superuser.
sub client_commands
{
	my ($db) = @_;
	local $ENV{PGDATABASE} = $db;
	local $ENV{PGUSER} = $superuser;
	my $html = $node->basedir . "/report-$db.html";
	my @ids = split /\n/, $node->safe_psql('shop', 'SELECT id FROM pgc.pg_contention_incidents');
	for my $args ([ 'check' ], [ 'check', '--json' ], [ 'check', '--live' ], [ 'report' ],
		[ 'report', "--html=$html" ], [ 'incidents' ], [ 'incidents', '--json' ], [ 'top', '-n', '2', '-i', '0.2' ],
		map { ([ 'report', "--incident=$_" ], [ 'report', "--incident=$_", "--html=$html" ]) } @ids)
	{
		my ($rc, $out, $err) = run_client($node, @$args);
		ok($rc <= 2 && $err eq '', "$db: pg_contention @$args runs") or diag("exit $rc: $err");
	}
}

# ---- Every view and every function of the extension, read as the DBA
# reads them (default search_path), and as other roles.
# Statements run one by one in one session of $role (each on a line of its
# own, an error not stopping the next): psql's exit code, then each
# statement's error message, or undef.
sub each_statement
{
	my ($db, $role, @statements) = @_;
	my $script = join('', map { ($_ =~ s/\s+/ /gr) . ";\n" } @statements);
	my ($ret, $out, $err) = $node->psql($db, $script, on_error_stop => 0,
		extra_params => [ '-U', $role ]);
	my @errors = (undef) x @statements;
	while ($err =~ /^psql:<stdin>:(\d+): (?:ERROR|FATAL|PANIC):  (.*)$/mg)
	{
		$errors[ $1 - 1 ] //= $2;
	}
	return ($ret, @errors);
}

sub read_everything
{
	my ($db, $role) = @_;
	my $schema = $node->safe_psql($db,
		"SELECT pg_catalog.quote_ident(extnamespace::pg_catalog.regnamespace::pg_catalog.text)
		   FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'pg_contention'");
	my @views = split /\n/, $node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		SELECT c.relname FROM pg_depend AS d JOIN pg_class AS c ON c.oid = d.objid
		  JOIN pg_extension AS e ON e.oid = d.refobjid
		 WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
		   AND e.extname = 'pg_contention' AND c.relkind = 'v' ORDER BY 1});
	# A function's arguments by type: the findings' problem and details,
	# each finding's (what the worker passes), else their defaults.
	my @calls = split /\n/, $node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		SELECT p.proname || '(' || coalesce((
				SELECT string_agg(CASE
					WHEN p.proargnames[t.n] = 'kind' THEN '''dead_index_entries'''
					WHEN p.proargnames[t.n] = 'query' THEN 'f.subject'
					ELSE CASE t.typ
					WHEN 'text'::regtype THEN 'f.problem'
					WHEN 'jsonb'::regtype THEN 'f.details'
					WHEN 'interval'::regtype THEN '''10 s''::interval'
					WHEN 'integer'::regtype THEN '10000'
					WHEN 'bigint'::regtype THEN '(SELECT max(id) FROM %1$s.pg_contention_incidents)'
					WHEN 'timestamp with time zone'::regtype THEN 'f.since'
					WHEN 'boolean'::regtype THEN 'true'
					ELSE 'NULL' END END, ', ' ORDER BY t.n)
				  FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS t(typ, n)
				 WHERE t.n <= p.pronargs - p.pronargdefaults), '') || ')'
		  FROM pg_depend AS d JOIN pg_proc AS p ON p.oid = d.objid
		  JOIN pg_extension AS e ON e.oid = d.refobjid
		 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
		   AND e.extname = 'pg_contention' AND p.proname <> 'pg_contention_reset'
		 ORDER BY 1});
	ok(@views >= 10 && @calls >= 30, "$db: " . scalar(@views) . ' views and ' . scalar(@calls) . ' functions to read');
	my @statements = map { "SELECT * FROM $schema.$_" } @views;
	for my $call (@calls)
	{
		(my $sql = $call) =~ s/%1\$s/$schema/g;
		my $from = $call =~ /\bf\.\w/ ? " FROM $schema.pg_contention_findings() AS f" : '';
		push @statements, "SELECT $schema.$sql$from";
	}
	my ($ret, @errors) = each_statement($db, $role, @statements);
	is($ret, 0, "$db: $role's session read every view and called every function");
	for my $i (0 .. $#views)
	{
		ok(!defined $errors[$i], "$db: $role reads $views[$i]") or diag($errors[$i]);
	}
	for my $i (0 .. $#calls)
	{
		my $err = $errors[ @views + $i ];
		# Refused to roles that may not run it is fine; running it is the point.
		ok(!defined $err || $err =~ /permission denied for function/, "$db: $role calls $calls[$i]")
		  or diag($err);
	}
	return;
}

client_commands($_) for qw(shop crm);
for my $db (qw(shop crm))
{
	read_everything($db, $_) for ($superuser, 'stats', 'plain');
}

# ---- The monitoring examples' queries (in crm, which has the extension
# in public).
my @queries = map { yaml_queries(slurp_file($_)) }
  glob("$top/examples/postgres_exporter/*.yaml"), glob("$top/examples/pgwatch/*.yaml");
ok(@queries >= 5, scalar(@queries) . ' monitoring queries');
for my $sql (@queries)
{
	# (They name the README's schema.)
	my ($ret, $out, $err) = $node->psql('crm', $sql =~ s/\bcontention\.pg_contention_/public.pg_contention_/gr);
	is($ret, 0, 'crm: a monitoring query runs: ' . substr($sql =~ s/\s+/ /gr, 0, 60)) or diag($err);
}

# ---- The fixes: every incident closes, its resolution found by the worker.
my ($closed, $unresolved) = end_holders($node, $holder, 'pgc');
ok($closed, 'every incident closed after its fix');
is($unresolved, '', 'the holders\' and the overflow\'s with what ended them');
client_commands('shop');

# ---- Nothing ran mallory's code, in either database.
for my $db (qw(shop crm))
{
	is(trap_fired($node, $db), '', "$db: no trap ran");
}
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'mallory'"),
	'f', 'mallory is still a plain role');
ok(!$node->log_contains(qr/pg_contention incidents: the (evaluation|evidence|resolution)[^\n]* failed/),
	'the worker never failed');

$node->stop;
done_testing();
