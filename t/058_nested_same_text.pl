# A nested statement with the very text of the client's is not the
# client's statement.  A trigger runs the client's INSERT again (EXECUTE
# current_query(), once); sent by pgbench with each protocol (simple,
# extended, prepared), every execution counts 2 calls, 1 at top level:
# over the extended protocol the client's text reaches the hooks as an
# equal copy, which equality alone took for the client's for both.  The
# application is in shop.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nested_same_text');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE FUNCTION public.again() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF pg_catalog.pg_trigger_depth() < 2 THEN
			EXECUTE pg_catalog.current_query();
		END IF;
		RETURN NULL;
	END $$;
});

my $script = $node->basedir . '/insert.sql';
for my $mode (qw(simple extended prepared))
{
	$node->safe_psql('shop', qq{
		CREATE TABLE public.log_$mode (n integer);
		CREATE TRIGGER log_again AFTER INSERT ON public.log_$mode
		   FOR EACH STATEMENT EXECUTE FUNCTION public.again();});
	open my $fh, '>', $script or die "$script: $!";
	print $fh "INSERT INTO public.log_$mode VALUES (1);\n";
	close $fh;
	$node->command_ok([ 'pgbench', '-n', '-M', $mode, '-t', '3', '-f', $script,
		'-h', $node->host, '-p', $node->port, 'shop' ], "$mode: pgbench ran");
	is($node->safe_psql('shop', "SELECT count(*) FROM public.log_$mode"), '6',
		"$mode: each INSERT ran again in its trigger");
	is($node->safe_psql('shop', qq{
		SELECT sum(calls) || ' calls, ' || sum(top_level_calls) || ' at top level'
		  FROM pg_contention_recent(3600)
		 WHERE query LIKE 'INSERT INTO public.log_$mode %' AND indexrelid IS NULL}),
		'6 calls, 3 at top level', "$mode: 2 calls per execution, 1 at top level");
}

$node->stop;
done_testing();
