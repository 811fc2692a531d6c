# PgContention::Traps: what a plain role can plant in a schema it may
# CREATE in (public, on PostgreSQL 13 and 14 by default) to have its code
# run by whoever resolves a name there: operators and functions with an
# exact match for argument types that pg_catalog matches only through an
# implicit cast (an exact match anywhere in the search_path beats a cast in
# an earlier schema).  pg_contention's worker, client and functions run as
# a superuser: none of them may ever call one.
#
#   trap_targets($node, $db, $top)
#                  the names to trap and the types to trap them over,
#                  derived from the SQL pg_contention runs, not listed by
#                  hand: the installed install script, the client's
#                  statements (the string literals of client/*.c) and the
#                  monitoring examples' queries; every operator and
#                  function name they use that pg_catalog has, over the
#                  argument and result types of the extension's functions
#                  and views, the types the SQL casts to, and the argument
#                  and result types of the catalog functions it names;
#                  returns { operators => [...], prefix => [...],
#                  functions => [[name, arity, kind], ...], types => [...] }
#   plant_traps($node, $db, $role, $targets)
#                  $role (a plain role) creates them in schema public of
#                  $db, with the log they write to when one runs:
#                  public.pgc_trap_log (what ran, as whom, the application
#                  and the statement); returns how many it planted
#   planted_cluster($name)
#                  a started node for a test of planted objects: the
#                  library preloaded, incidents evaluated every second in
#                  database shop and closed 2 s after their finding, a
#                  10 s window, thresholds low enough for a short workload
#   shop_tables($node, $db)
#                  contend (case 1's) and items (20,000 rows, k = id % 100,
#                  indexed), vacuumed, granted to role app
#   bench_script($node, $name, $text)
#                  a pgbench script file in the node's directory
#   end_holders($node, $holder, $schema)
#                  the fixes of the planted tests' incidents: $holder (a
#                  background session in shop) commits and quits, crm's
#                  prepared transaction 'forgotten' is rolled back; then
#                  whether every incident of shop closed (the worker's,
#                  its views in $schema), and the horizon's and overflow's
#                  incidents that closed without a resolution ('' if none)
#   trap_fired($node, $db)
#                  the log's rows, one line each ('' if none ran)
#   yaml_queries($text)
#                  the queries of a monitoring example's file
#   extension_functions($node, $db)
#                  the extension's functions as the catalog of $db has
#                  them (it is created there): [[name, [param, ...]], ...],
#                  each param "name|type" (name empty if it has none): an
#                  overload keeps the names, so that a call in named
#                  notation (incident => 3) can match it too
#   signature($function)
#                  "name(type,...)": what makes two functions one
#   overloads($functions)
#                  what a plain role plants to capture or break a call of
#                  the extension's own functions that does not bind
#                  exactly: for each function, the same name with each
#                  argument as text, with a narrower or another numeric
#                  type (integer for bigint, ...), with fewer arguments, with
#                  none, and with each parameter alone by its name (what a
#                  call in named notation matches); [[name, [param, ...]], ...]
#   plant_overloads($node, $db, $role, $schema, $overloads)
#                  $role creates them in $schema of $db (each a trap that
#                  writes to public.pgc_trap_log, which it creates if
#                  missing); one that cannot be created (the extension's
#                  own signature, of an older version) is skipped; returns
#                  how many it planted
#
# A trap returns NULL (any result fails the statement that called it, which
# the test sees too); it writes its row (with the call stack and the
# search_path it ran under, to say where it was reached) and nothing else.  Functions are
# trapped for one and two arguments: the extension pins every function's
# search_path and qualifies its views' operators (the tests check both in
# the catalog), so these traps are the proof that nothing is left over,
# not the only guard.
package PgContention::Traps;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

our @EXPORT_OK = qw(trap_targets plant_traps trap_fired yaml_queries extension_functions overloads plant_overloads signature
  planted_cluster shop_tables bench_script end_holders);

# SQL without comments and literals: what names it resolves.
sub sql_tokens
{
	my ($sql, $ops, $funcs, $casts) = @_;
	$sql =~ s{/\*.*?\*/}{ }gs;
	$sql =~ s{--[^\n]*}{ }g;
	$sql =~ s{[Ee]?'(?:[^']|'')*'}{ '' }g;
	$sql =~ s{\$\$}{ }g;
	$sql =~ s{"(?:[^"]|"")*"}{ x }g;
	while ($sql =~ m{::\s*(?:pg_catalog\.)?([a-z_][a-z0-9_]*(?:\s+precision|\s+with(?:out)?\s+time\s+zone)?(?:\[\])?)}gi)
	{
		$casts->{ lc $1 } = 1;
	}
	while ($sql =~ m{([-+*/<>=~!@#%^&|`?]+)}g)
	{
		my $op = $1;
		next if $op eq '=>';
		$op = '<>' if $op eq '!=';
		$ops->{$op} = 1;
		# A run of operator characters may be two operators ("=-1"): its
		# one-character heads and tails too.
		$ops->{ substr($op, 0, 1) } = 1;
		$ops->{ substr($op, -1) } = 1;
	}
	while ($sql =~ m{(?<![.\w"\$])([a-z_][a-z0-9_]*)\s*\(}gi)
	{
		$funcs->{ lc $1 } = 1;
	}
	return;
}

# The string literals of a C file, joined: the client's statements.
sub c_strings
{
	my ($c) = @_;
	my $sql = '';
	$c =~ s{/\*.*?\*/}{ }gs;
	while ($c =~ m{"((?:[^"\\\n]|\\.)*)"}g)
	{
		my $s = $1;
		$s =~ s/\\n/\n/g;
		$s =~ s/\\t/\t/g;
		$s =~ s/\\(["\\])/$1/g;
		$sql .= $s;
	}
	return $sql;
}

# The queries of a monitoring example (postgres_exporter's "query: |",
# pgwatch's "13: |" blocks), each without its indentation.
sub yaml_queries
{
	my ($yaml) = @_;
	my @queries;
	while ($yaml =~ /^( *)(?:query|\d+): \|\n((?:\1  .*\n|[ \t]*\n)+)/mg)
	{
		my ($indent, $sql) = ($1, $2);
		$sql =~ s/^$indent  //mg;
		$sql =~ s/\s+$//;
		push @queries, $sql;
	}
	return @queries;
}

sub sql_array
{
	return "ARRAY[" . join(', ', map { my $s = $_; $s =~ s/'/''/g; "'$s'" } @_) . "]::text[]";
}

sub trap_targets
{
	my ($node, $db, $top) = @_;
	my (%ops, %funcs, %casts);
	# The server's own share directory (the test library of 13 has no
	# config_data): where the installed script is.
	my $share = $node->safe_psql($db, "SELECT setting FROM pg_catalog.pg_config WHERE name = 'SHAREDIR'")
	  . '/extension';
	my ($version) = slurp_file("$share/pg_contention.control") =~ /^default_version\s*=\s*'([^']+)'/m;
	sql_tokens(slurp_file("$share/pg_contention--$version.sql"), \%ops, \%funcs, \%casts);
	sql_tokens(c_strings(slurp_file($_)), \%ops, \%funcs, \%casts) for glob("$top/client/*.c");
	sql_tokens(join("\n", yaml_queries(slurp_file($_))), \%ops, \%funcs, \%casts)
	  for glob("$top/examples/postgres_exporter/*.yaml"), glob("$top/examples/pgwatch/*.yaml");

	my $ops = sql_array(sort keys %ops);
	my $funcs = sql_array(sort keys %funcs);
	my $casts = sql_array(sort keys %casts);
	# The types: plain base and array types only (what a role can name
	# in CREATE FUNCTION; polymorphic and pseudo-types are left out).
	my $types = $node->safe_psql($db, qq{
		WITH ext AS (
			SELECT d.objid, d.classid FROM pg_catalog.pg_depend AS d
			  JOIN pg_catalog.pg_extension AS e ON e.oid = d.refobjid
			 WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
			   AND e.extname = 'pg_contention' AND d.deptype = 'e'),
		named AS (
			SELECT p.* FROM pg_catalog.pg_proc AS p
			 WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
			   AND p.proname = ANY ($funcs) AND p.pronargs <= 3),
		t AS (
			SELECT pg_catalog.unnest(pg_catalog.string_to_array(pg_catalog.array_to_string(
					   coalesce(p.proallargtypes, p.proargtypes::pg_catalog.oid[]), ','), ','))::pg_catalog.oid AS t
			  FROM pg_catalog.pg_proc AS p JOIN ext ON ext.objid = p.oid
			 WHERE ext.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			UNION SELECT p.prorettype FROM pg_catalog.pg_proc AS p JOIN ext ON ext.objid = p.oid
			 WHERE ext.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			UNION SELECT a.atttypid FROM pg_catalog.pg_attribute AS a JOIN ext ON ext.objid = a.attrelid
			 WHERE ext.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND a.attnum > 0
			UNION SELECT pg_catalog.to_regtype(c) FROM pg_catalog.unnest($casts) AS c
			UNION SELECT pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) FROM named AS p
			UNION SELECT p.prorettype FROM named AS p)
		SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format_type(y.oid, NULL), ',')
		  FROM t JOIN pg_catalog.pg_type AS y ON y.oid = t.t
		 WHERE y.typtype = 'b' AND y.typisdefined
		   AND y.typnamespace = 'pg_catalog'::pg_catalog.regnamespace
		   AND y.typname NOT IN ('cstring', 'internal', 'unknown')
		   AND y.oid NOT IN ('pg_catalog.anyarray'::pg_catalog.regtype, 'pg_catalog.anyelement'::pg_catalog.regtype)});
	my $operators = $node->safe_psql($db, qq{
		SELECT pg_catalog.string_agg(DISTINCT o.oprname, ' ') FROM pg_catalog.pg_operator AS o
		 WHERE o.oprname = ANY ($ops) AND o.oprkind = 'b'});
	my $prefix = $node->safe_psql($db, qq{
		SELECT pg_catalog.string_agg(DISTINCT o.oprname, ' ') FROM pg_catalog.pg_operator AS o
		 WHERE o.oprname = ANY ($ops) AND o.oprkind = 'l'});
	my $functions = $node->safe_psql($db, qq{
		SELECT pg_catalog.string_agg(DISTINCT pg_catalog.concat_ws(' ', p.proname, p.pronargs, p.prokind), ',')
		  FROM pg_catalog.pg_proc AS p
		 WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
		   AND p.proname = ANY ($funcs) AND p.pronargs BETWEEN 1 AND 2
		   AND p.prokind IN ('f', 'a') AND NOT p.proretset});
	return {
		types => [ split /,/, $types ],
		operators => [ split / /, $operators ],
		prefix => [ split / /, $prefix ],
		functions => [ map { [ split / / ] } split /,/, $functions ],
	};
}

# What every trap runs (a PL/pgSQL body, as a dollar-quoted literal for a
# DO block; %L is the trap's name): it writes its row, with the call stack
# and the search_path it ran under, and returns NULL.
my $trap_body = q{$b$ DECLARE ctx text; BEGIN
	GET DIAGNOSTICS ctx = PG_CONTEXT;
	INSERT INTO public.pgc_trap_log VALUES (%L, current_user,
		pg_catalog.current_setting('application_name'), pg_catalog.current_query(),
		ctx || ' [search_path ' || pg_catalog.current_setting('search_path') || ']');
	RETURN NULL; END $b$};

# The table every trap writes to, created by $role in $db if missing.
sub trap_log
{
	my ($node, $db, $role) = @_;
	$node->safe_psql($db, q{
		SET client_min_messages = warning;
		CREATE TABLE IF NOT EXISTS public.pgc_trap_log (trap text, by_role name, application text, query text,
			context text);
		GRANT INSERT ON public.pgc_trap_log TO PUBLIC;},
		extra_params => [ '-U', $role ]);
	return;
}

sub extension_functions
{
	my ($node, $db) = @_;
	my $rows = $node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		SELECT p.proname || ':' || coalesce((
				   SELECT string_agg(coalesce(quote_ident(nullif(p.proargnames[n], '')), '') || '|'
									 || format_type(t, NULL), ',' ORDER BY n)
					 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, n)), '')
		  FROM pg_depend AS d JOIN pg_proc AS p ON p.oid = d.objid
		  JOIN pg_extension AS e ON e.oid = d.refobjid
		 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
		   AND e.extname = 'pg_contention' AND d.deptype = 'e'
		 ORDER BY 1});
	return [ map { my ($name, $args) = split /:/, $_, 2; [ $name, [ split /,/, $args ] ] } split /\n/, $rows ];
}

# The types a caller's argument may have where the parameter's is
# another: a literal's (integer, numeric), a narrower integer's.
my %other_numeric = (
	'bigint' => [ 'integer', 'smallint', 'numeric' ],
	'integer' => [ 'smallint', 'bigint', 'numeric' ],
	'smallint' => ['integer'],
	'numeric' => [ 'integer', 'bigint' ],
	'double precision' => [ 'integer', 'numeric', 'real' ],
	'real' => [ 'integer', 'numeric' ]);

sub overloads
{
	my ($functions) = @_;
	my (@planted, %seen);
	my $add = sub {
		my ($name, @types) = @_;
		# One per signature: the types make a function, not the names.
		push @planted, [ $name, [@types] ] unless $seen{ signature([ $name, \@types ]) }++;
	};
	for my $f (@$functions)
	{
		my ($name, $types) = @$f;
		my $n = @$types;
		for my $i (0 .. $n - 1)
		{
			my @t = @$types;
			my ($param, $type) = split /\|/, $types->[$i], 2;
			for my $other ('text', @{ $other_numeric{$type} // [] })
			{
				next if $other eq $type;
				$t[$i] = "$param|$other";
				$add->($name, @t);
			}
		}
		$add->($name, @$types[ 0 .. $_ - 1 ]) for 0 .. $n - 1;
		# The first parameters, the last of them of another type: what a
		# call that leaves the others to their defaults matches.
		for my $k (1 .. $n - 1)
		{
			my @t = @$types[ 0 .. $k - 1 ];
			my ($param, $type) = split /\|/, $t[-1], 2;
			for my $other ('text', @{ $other_numeric{$type} // [] })
			{
				next if $other eq $type;
				$t[-1] = "$param|$other";
				$add->($name, @t);
			}
		}
		# Each parameter alone, by its name: what a call in named notation
		# that leaves the others to their defaults matches.
		for my $i (1 .. $n - 1)
		{
			my ($param, $type) = split /\|/, $types->[$i], 2;
			next if $param eq '';
			$add->($name, "$param|$_") for ($type, 'text', @{ $other_numeric{$type} // [] });
		}
	}
	return \@planted;
}

sub signature
{
	my ($f) = @_;
	return $f->[0] . '(' . join(',', map { (split /\|/, $_, 2)[1] } @{ $f->[1] }) . ')';
}

sub plant_overloads
{
	my ($node, $db, $role, $schema, $overloads) = @_;
	trap_log($node, $db, $role);
	my $list = sql_array(map { join(':', $_->[0], join(',', map { s/\|/ /r } @{ $_->[1] })) } @$overloads);
	return $node->safe_psql($db, qq{
		SET search_path = pg_catalog, pg_temp;
		DO \$do\$
		DECLARE
			f text;
			n integer := 0;
			body text := $trap_body;
		BEGIN
			FOREACH f IN ARRAY $list LOOP
				BEGIN
					EXECUTE pg_catalog.format('CREATE FUNCTION %I.%I(%s) RETURNS text LANGUAGE plpgsql AS %L',
						'$schema', pg_catalog.split_part(f, ':', 1), pg_catalog.split_part(f, ':', 2),
						pg_catalog.format(body, pg_catalog.format('%s.%s', '$schema', f)));
					n := n + 1;
				EXCEPTION WHEN duplicate_function THEN
					NULL;
				END;
			END LOOP;
			RAISE NOTICE 'planted %', n;
		END
		\$do\$;
		SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc AS p
		 WHERE p.pronamespace = '$schema'::pg_catalog.regnamespace AND p.proowner = current_user::pg_catalog.regrole},
		extra_params => [ '-U', $role ]);
}

sub plant_traps
{
	my ($node, $db, $role, $targets) = @_;
	my $types = sql_array(@{ $targets->{types} });
	my $operators = sql_array(@{ $targets->{operators} });
	my $prefix = sql_array(@{ $targets->{prefix} });
	my $functions = sql_array(map { join(' ', @$_) } @{ $targets->{functions} });
	trap_log($node, $db, $role);
	# One DO block (a statement of its own: it commits after each name,
	# or the locks it holds on what it created would fill the lock table),
	# each operator and function name over every type (pair).
	$node->safe_psql($db, qq{
		SET search_path = pg_catalog, pg_temp;
		DO \$do\$
		DECLARE
			types text[] := $types;
			n integer := 0;
			body text := $trap_body;
			op text;
			fn text;
			t1 text;
			t2 text;
			ret text;
			f text[];
		BEGIN
			FOREACH op IN ARRAY $operators LOOP
				FOREACH t1 IN ARRAY types LOOP
					FOREACH t2 IN ARRAY types LOOP
						-- A comparison returns boolean, the rest the left type.
						ret := CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_operator AS o
								  WHERE o.oprname = op AND o.oprresult = 'pg_catalog.bool'::pg_catalog.regtype)
								THEN 'boolean' ELSE t1 END;
						n := n + 1;
						fn := 'public.pgc_trap_' || n;
						EXECUTE pg_catalog.format('CREATE FUNCTION %s(%s, %s) RETURNS %s LANGUAGE plpgsql AS %L',
							fn, t1, t2, ret, pg_catalog.format(body, pg_catalog.format('operator %s(%s, %s)', op, t1, t2)));
						EXECUTE pg_catalog.format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)',
							op, t1, t2, fn);
					END LOOP;
				END LOOP;
				COMMIT;
			END LOOP;
			FOREACH op IN ARRAY $prefix LOOP
				FOREACH t1 IN ARRAY types LOOP
					n := n + 1;
					fn := 'public.pgc_trap_' || n;
					EXECUTE pg_catalog.format('CREATE FUNCTION %s(%s) RETURNS %s LANGUAGE plpgsql AS %L',
						fn, t1, t1, pg_catalog.format(body, pg_catalog.format('prefix operator %s(%s)', op, t1)));
					EXECUTE pg_catalog.format('CREATE OPERATOR public.%s (RIGHTARG = %s, FUNCTION = %s)', op, t1, fn);
				END LOOP;
				COMMIT;
			END LOOP;
			FOREACH fn IN ARRAY $functions LOOP
				f := pg_catalog.string_to_array(fn, ' ');
				FOREACH t1 IN ARRAY types LOOP
					IF f[3] = 'a' THEN
						-- An aggregate: its transition function is the trap.
						n := n + 1;
						EXECUTE pg_catalog.format('CREATE FUNCTION public.pgc_trap_%s(%s, %s) RETURNS %s LANGUAGE plpgsql AS %L',
							n, t1, t1, t1, pg_catalog.format(body, pg_catalog.format('aggregate %s(%s)', f[1], t1)));
						IF f[2] = '1' THEN
							EXECUTE pg_catalog.format('CREATE AGGREGATE public.%I(%s) (SFUNC = public.pgc_trap_%s, STYPE = %s)',
								f[1], t1, n, t1);
						END IF;
					ELSIF f[2] = '1' THEN
						EXECUTE pg_catalog.format('CREATE FUNCTION public.%I(%s) RETURNS text LANGUAGE plpgsql AS %L',
							f[1], t1, pg_catalog.format(body, pg_catalog.format('function %s(%s)', f[1], t1)));
					ELSE
						FOREACH t2 IN ARRAY types LOOP
							EXECUTE pg_catalog.format('CREATE FUNCTION public.%I(%s, %s) RETURNS text LANGUAGE plpgsql AS %L',
								f[1], t1, t2, pg_catalog.format(body, pg_catalog.format('function %s(%s, %s)', f[1], t1, t2)));
						END LOOP;
					END IF;
				END LOOP;
				COMMIT;
			END LOOP;
		END
		\$do\$},
		extra_params => [ '-U', $role ]);
	return $node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_operator WHERE oprnamespace = 'public'::pg_catalog.regnamespace)
			 + (SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc WHERE pronamespace = 'public'::pg_catalog.regnamespace
				   AND proname NOT LIKE 'pgc\\_trap\\_%')},
		extra_params => [ '-U', $role ]);
}

sub planted_cluster
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
pg_contention.incident_interval = 1s
pg_contention.incident_close_after = 2s
pg_contention.incident_database = 'shop'
pg_contention.findings_window = 10s
pg_contention.subtrans_lookups_warning = 1
pg_contention.horizon_min_age = 1s
pg_contention.dead_visits_warning = 50
max_prepared_transactions = 2
autovacuum = off
});
	$node->start;
	return $node;
}

sub shop_tables
{
	my ($node, $db) = @_;
	$node->safe_psql($db, q{
		CREATE UNLOGGED TABLE public.contend (id integer PRIMARY KEY, val integer NOT NULL);
		INSERT INTO public.contend SELECT i, 0 FROM pg_catalog.generate_series(1, 10000) AS i;
		CREATE TABLE public.items (id integer PRIMARY KEY, k integer NOT NULL);
		CREATE INDEX items_k ON public.items (k);
		INSERT INTO public.items SELECT i, i OPERATOR(pg_catalog.%) 100 FROM pg_catalog.generate_series(1, 20000) AS i;
		GRANT ALL ON public.contend, public.items TO app;
	});
	$node->safe_psql($db, 'VACUUM (ANALYZE) public.contend, public.items');
	return;
}

sub bench_script
{
	my ($node, $name, $text) = @_;
	my $file = $node->basedir . "/$name";
	open my $fh, '>', $file or die "$file: $!";
	print $fh $text;
	close $fh;
	return $file;
}

sub end_holders
{
	my ($node, $holder, $schema) = @_;
	$holder->query_safe('COMMIT');
	$holder->quit;
	$node->safe_psql('crm', "ROLLBACK PREPARED 'forgotten'");
	my $closed = $node->poll_query_until('shop',
		"SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 0 FROM $schema.pg_contention_incidents WHERE closed IS NULL");
	my $unresolved = $node->safe_psql('shop', qq{
		SELECT pg_catalog.string_agg(problem, ', ') FROM $schema.pg_contention_incidents
		 WHERE problem OPERATOR(pg_catalog.=) ANY ('{xmin_horizon_held,subxact_overflow}') AND resolution IS NULL});
	return ($closed, $unresolved);
}

sub trap_fired
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		SELECT pg_catalog.string_agg(pg_catalog.format('%s, run as %s by %s: %s (where: %s)', trap, by_role, application,
				   pg_catalog.left(query, 200), pg_catalog.left(context, 600)), E'\n')
		  FROM public.pgc_trap_log});
}

1;
