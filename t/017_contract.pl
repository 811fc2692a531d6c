# The contract between the SQL declarations and the library: with the
# current library, every view and row-returning function of every version
# (the released 1.0 to 1.3, and 1.4) answers, with rows, before ALTER EXTENSION UPDATE;
# a function declared by hand with a shape no version declared (a wrong
# column count or a wrong type) fails with SQLSTATE 55000 and a message
# naming both shapes, before any row is built, and the server stays up.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my @versions = ('1.0', '1.1', '1.2', '1.3', '1.4');

my $node = PostgreSQL::Test::Cluster->new('contract');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'\npg_contention.overflow_ended_after = '1h'");
$node->start;

# One database per released version, each with statements, an overflow
# event and index scans of its own.
sub savepoints
{
	my ($table) = @_;
	return join('', map { "SAVEPOINT s$_; INSERT INTO $table VALUES ($_);\n" } 1 .. 70);
}
for my $v (@versions)
{
	(my $db = "v$v") =~ s/\.//;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION pg_contention VERSION '$v'");
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'pg_contention'"),
		$v, "version $v installs");
	$node->safe_psql($db, 'CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE open (id int)');
	$node->safe_psql($db, 'BEGIN; ' . savepoints('t') . 'COMMIT;');
	$node->safe_psql($db,
		'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT * FROM t WHERE id = 1');
}

# A transaction left open with subtransactions: a row of
# pg_contention_subxact and of pg_contention_horizon_holders everywhere.
my $open = $node->background_psql('v13');
$open->query_safe('BEGIN; SELECT pg_catalog.txid_current(); ' . savepoints('open'));
$node->poll_query_until('v13', 'SELECT count(*) > 0 FROM pg_contention_history')
  or die 'the sampler wrote no history';

# The extension's views, and its functions that return rows (with their
# arguments without default filled in), in one database.
my $members = q{
	WITH members AS (
		SELECT d.classid, d.objid
		  FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		   AND e.extname = 'pg_contention')
	SELECT 'view', c.relname, ''
	  FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
	 WHERE c.relkind = 'v'
	UNION ALL
	SELECT 'function', p.proname,
		   coalesce((SELECT string_agg(format_type(p.proargtypes[i], NULL), ',' ORDER BY i)
					   FROM generate_series(0, p.pronargs - p.pronargdefaults - 1) AS i), '')
	  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
	 WHERE p.proretset OR p.prorettype = 'record'::regtype
	 ORDER BY 1, 2
};
my %argument = (integer => '60', bigint => '2', interval => "'60 seconds'", boolean => 'false',
	text => "'xmin_horizon_held'", 'text[]' => "'{}'", jsonb => "'{}'");

# The C functions that surely have rows by now, in every version that has
# them: each of these builds rows for the version's own declaration.
my %has_rows = map { $_ => 1 } qw(pg_contention_subxact pg_contention_overflow_events
	pg_contention_statements pg_contention_index_scans pg_contention_recent
	pg_contention_horizon_holders pg_contention_history pg_contention_info
	pg_contention_sampler_status pg_contention_old_snapshot);

for my $v (@versions)
{
	(my $db = "v$v") =~ s/\.//;
	my @objects = map { [ split /\|/, $_, -1 ] } split /\n/, $node->safe_psql($db, $members);
	my $functions = grep { $_->[0] eq 'function' } @objects;
	cmp_ok($functions, '>=', 10, "version $v: its row-returning functions are found ($functions)");
	for my $object (@objects)
	{
		my ($kind, $name, $types) = @$object;
		my $from = $name;
		if ($kind eq 'function')
		{
			my @args = map { $argument{$_} // die "no argument for type $_" } grep { $_ ne '' }
			  split /,/, $types;
			$from = "$name(" . join(', ', @args) . ')';
		}
		my ($ret, $out, $err) = $node->psql($db, "SELECT count(*) FROM (SELECT * FROM $from) AS r",
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		is($ret, 0, "version $v: $kind $from answers with the current library") or diag($err);
		cmp_ok($out, '>', 0, "version $v: function $from gives rows")
		  if $kind eq 'function' && $has_rows{$name};
	}
}
$open->query_safe('COMMIT');
$open->quit;

# Hand-made declarations of the library's functions, in a database with the
# current version.  Each must fail with 55000 and the message, and leave the
# server up.
sub columns
{
	my ($type_of, $n) = @_;
	return join(', ', map { "OUT c$_ " . ($type_of->{$_} // 'bigint') } 1 .. $n);
}
my $history_types = { 1 => 'timestamptz', 3 => 'float8', 20 => 'integer' };
my $history_22 = columns($history_types, 22);
my $history_23 = columns($history_types, 23);
my $history_24 = columns($history_types, 24);
my $history_25 = columns($history_types, 25);
(my $history_23_int = $history_23) =~ s/OUT c23 bigint/OUT c23 integer/;
my $info_types = { 1 => 'timestamptz', 2 => 'integer', 3 => 'integer', 5 => 'integer',
	8 => 'timestamptz', 9 => 'timestamptz', 10 => 'timestamptz' };
my $info_7 = columns($info_types, 7);
(my $info_7_wrong = $info_7) =~ s/OUT c2 integer/OUT c2 bigint/;
my $info_8 = columns($info_types, 8);
$node->safe_psql('v13', qq{
	CREATE FUNCTION good_history_12($history_22) RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION good_history_13($history_23) RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION good_history_14($history_25) RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE TYPE one_column AS (a int);
	CREATE FUNCTION wrong_history() RETURNS SETOF one_column
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION scalar_history() RETURNS SETOF bigint
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION scalar_info() RETURNS bigint
		AS 'pg_contention', 'pg_contention_info' LANGUAGE C;
	CREATE FUNCTION wrong_history_type($history_23_int) RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION wrong_history_24($history_24) RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION wrong_history_26(${history_25}, OUT c26 bigint) RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION any_history() RETURNS SETOF record
		AS 'pg_contention', 'pg_contention_history' LANGUAGE C;
	CREATE FUNCTION good_info_11($info_7) RETURNS record
		AS 'pg_contention', 'pg_contention_info' LANGUAGE C;
	CREATE FUNCTION wrong_info($info_8) RETURNS record
		AS 'pg_contention', 'pg_contention_info' LANGUAGE C;
	CREATE FUNCTION wrong_info_type($info_7_wrong) RETURNS record
		AS 'pg_contention', 'pg_contention_info' LANGUAGE C;
	CREATE FUNCTION wrong_statements(OUT userid oid, OUT dbid oid, OUT query_id bigint)
		RETURNS SETOF record AS 'pg_contention', 'pg_contention_statements' LANGUAGE C;
	CREATE FUNCTION wrong_subxact_type(OUT pid text, OUT datid oid, OUT usesysid oid,
		OUT application_name text, OUT backend_type text, OUT state text,
		OUT xact_start timestamptz, OUT top_xid xid, OUT backend_xmin xid,
		OUT subxact_count integer, OUT subxact_overflowed boolean, OUT query_id bigint,
		OUT query text)
		RETURNS SETOF record AS 'pg_contention', 'pg_contention_subxact' LANGUAGE C;
});

# The declarations of released versions, made by hand, are filled.
cmp_ok($node->safe_psql('v13', 'SELECT count(*) FROM good_history_12()'), '>', 0,
	'a hand-made declaration of the 1.2 history (22 columns) is filled');
cmp_ok($node->safe_psql('v13', 'SELECT count(*) FROM good_history_13()'), '>', 0,
	'a hand-made declaration of the 1.3 history (23 columns) is filled');
ok($node->poll_query_until('v13', 'SELECT count(*) > 0 FROM good_history_14() WHERE c24 IS NOT NULL AND c25 IS NOT NULL'),
	'a hand-made declaration of the 1.4 history (25 columns) is filled, the XIDs and the readers\' lookups too');
is($node->safe_psql('v13', 'SELECT c2 = current_setting($$pg_contention.max_statements$$)::int FROM good_info_11()'),
	't', 'a hand-made declaration of the 1.1 info (7 columns) is filled');

my @wrong = (
	[ 'SELECT * FROM wrong_history()',
	  qr/pg_contention_history\(\) is declared with 1 column, this library fills 22, 23 or 25/,
	  qr/HINT:  Run ALTER EXTENSION pg_contention UPDATE\./ ],
	[ 'SELECT * FROM scalar_history()',
	  qr/pg_contention_history\(\) is declared without result columns, this library fills 22, 23 or 25/,
	  qr/HINT:  Run ALTER EXTENSION pg_contention UPDATE\./ ],
	[ 'SELECT scalar_info()',
	  qr/pg_contention_info\(\) is declared without result columns, this library fills 7, 10 or 21/,
	  qr/HINT:  Run ALTER EXTENSION pg_contention UPDATE\./ ],
	[ 'SELECT * FROM wrong_history_type()',
	  qr/pg_contention_history\(\) declares column 23 as integer, this library fills bigint/,
	  qr/DETAIL:  Column 23 is horizon_xid_age in the declarations of pg_contention 1\.3(?: to 1\.\d+)?\./ ],
	[ 'SELECT * FROM wrong_history_24()',
	  qr/pg_contention_history\(\) is declared with 24 columns, this library fills 22, 23 or 25/,
	  qr/HINT:  Run ALTER EXTENSION pg_contention UPDATE\./ ],
	[ 'SELECT * FROM wrong_history_26()',
	  qr/pg_contention_history\(\) is declared with 26 columns, this library fills 22, 23 or 25/,
	  qr/HINT:  Install the pg_contention library of the extension's installed version/ ],
	[ 'SELECT * FROM any_history() AS h(bucket_start timestamptz, ticks bigint)',
	  qr/pg_contention_history\(\) is declared with 2 columns, this library fills 22, 23 or 25/,
	  qr/HINT:  Run ALTER EXTENSION pg_contention UPDATE\./ ],
	[ 'SELECT * FROM wrong_info()',
	  qr/pg_contention_info\(\) is declared with 8 columns, this library fills 7, 10 or 21/,
	  qr/DETAIL:  Its SQL declaration is none of those of pg_contention 1\.0 to 1\.\d+\./ ],
	[ 'SELECT * FROM wrong_info_type()',
	  qr/pg_contention_info\(\) declares column 2 as bigint, this library fills integer/,
	  qr/DETAIL:  Column 2 is statements_max in / ],
	[ 'SELECT * FROM wrong_statements()',
	  qr/pg_contention_statements\(\) is declared with 3 columns, this library fills 10, 15 or 16/,
	  qr/HINT:  Run ALTER EXTENSION pg_contention UPDATE\./ ],
	[ 'SELECT * FROM wrong_subxact_type()',
	  qr/pg_contention_subxact\(\) declares column 1 as text, this library fills integer/,
	  qr/DETAIL:  Column 1 is pid in / ]);
for my $case (@wrong)
{
	my ($query, $message, $more) = @$case;
	my ($ret, $out, $err) = $node->psql('v13', $query, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($ret, 0, "$query fails");
	like($err, qr/ERROR:  55000: $message/, "$query: SQLSTATE 55000 and the shapes in the message");
	like($err, $more, "$query: detail or hint");
	unlike($err, qr/server closed the connection|PANIC|FATAL/, "$query: no backend was lost");
}

# The same, caught in PL/pgSQL by its SQLSTATE.
for my $function ('wrong_history', 'wrong_info_type')
{
	my ($ret, $out, $err) = $node->psql('v13', qq{
		DO \$\$
		BEGIN
			PERFORM * FROM $function();
			RAISE NOTICE 'no error';
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			RAISE NOTICE 'caught %', SQLSTATE;
		END \$\$});
	is($ret, 0, "$function() in a DO block: the block ends");
	like($err, qr/NOTICE:  caught 55000/, "$function() in a DO block: caught as object_not_in_prerequisite_state");
}

is($node->safe_psql('v13', 'SELECT 1'), '1', 'the server still answers');
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no backend crashed');

$node->stop;
done_testing();
