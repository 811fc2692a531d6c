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
#   trap_fired($node, $db)
#                  the log's rows, one line each ('' if none ran)
#   yaml_queries($text)
#                  the queries of a monitoring example's file
#
# A trap returns NULL (any result fails the statement that called it, which
# the test sees too); it writes its row and nothing else.  Functions are
# trapped for one and two arguments: the extension pins every function's
# search_path and qualifies its views' operators (the tests check both in
# the catalog), so these traps are the proof that nothing is left over,
# not the only guard.
package PgContention::Traps;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Utils;

our @EXPORT_OK = qw(trap_targets plant_traps trap_fired yaml_queries);

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

sub plant_traps
{
	my ($node, $db, $role, $targets) = @_;
	my $types = sql_array(@{ $targets->{types} });
	my $operators = sql_array(@{ $targets->{operators} });
	my $prefix = sql_array(@{ $targets->{prefix} });
	my $functions = sql_array(map { join(' ', @$_) } @{ $targets->{functions} });
	$node->safe_psql($db, q{
		CREATE TABLE public.pgc_trap_log (trap text, by_role name, application text, query text);
		GRANT INSERT ON public.pgc_trap_log TO PUBLIC;},
		extra_params => [ '-U', $role ]);
	# One DO block (a statement of its own: it commits after each name,
	# or the locks it holds on what it created would fill the lock table),
	# each operator and function name over every type (pair).
	$node->safe_psql($db, qq{
		SET search_path = pg_catalog, pg_temp;
		DO \$do\$
		DECLARE
			types text[] := $types;
			n integer := 0;
			body text := \$b\$ BEGIN
				INSERT INTO public.pgc_trap_log VALUES (%L, current_user,
					pg_catalog.current_setting('application_name'), pg_catalog.current_query());
				RETURN NULL; END \$b\$;
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

sub trap_fired
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, q{
		SET search_path = pg_catalog, pg_temp;
		SELECT pg_catalog.string_agg(pg_catalog.format('%s, run as %s by %s: %s', trap, by_role, application,
				   pg_catalog.left(query, 200)), E'\n')
		  FROM public.pgc_trap_log});
}

1;
