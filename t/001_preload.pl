# Loading rules: without shared_preload_libraries CREATE EXTENSION still
# works and every view explains what to add; once preloaded and restarted,
# the views work, and a session's overflow is visible from another.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;

# Not preloaded: the extension installs, the view fails with a clear error.
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
my ($ret, $out, $err) = $node->psql('postgres',
	'SELECT * FROM pg_contention_subxact',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'view fails without shared_preload_libraries');
like($err, qr/ERROR:  55000: pg_contention must be loaded via shared_preload_libraries/,
	'error has SQLSTATE 55000 (object_not_in_prerequisite_state)');
like($err, qr/HINT:  Add pg_contention to shared_preload_libraries in postgresql\.conf and restart the server\./,
	'hint says what to add to postgresql.conf');
unlike($err, qr/server closed the connection|PANIC|FATAL/, 'no backend was lost');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'server still answers');
for my $query ('SELECT * FROM pg_contention_findings', 'SELECT pg_contention_report()')
{
	($ret, $out, $err) = $node->psql('postgres', $query, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  55000: pg_contention must be loaded via shared_preload_libraries/,
		"$query: the same error, not an unknown setting");
}

# Every view and the functions a newcomer calls first answer with the
# error and its hint, and nothing more: no CONTEXT of the rules'
# internals (hundreds of lines).
my @views = split /\n/, $node->safe_psql('postgres', q{SELECT c.relname FROM pg_depend d
	JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass
	WHERE d.refclassid = 'pg_extension'::regclass AND c.relkind = 'v'
	  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_contention') ORDER BY 1});
ok(@views >= 10, scalar(@views) . ' views');
my $two_lines = qr/\Apsql:<stdin>:1: ERROR:  pg_contention must be loaded via shared_preload_libraries\nHINT:  Add pg_contention to shared_preload_libraries in postgresql\.conf and restart the server\.\n?\z/;
for my $query ((map { "SELECT * FROM $_" } @views),
	'SELECT pg_contention_report()', 'SELECT * FROM pg_contention_incidents_status()',
	'SELECT * FROM pg_contention_metrics()', 'SELECT * FROM pg_contention_findings_victims()')
{
	($ret, $out, $err) = $node->psql('postgres', $query);
	like($err, $two_lines, "$query: the error and its hint, nothing more");
}

# Preloaded: the same view works after a restart.
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'\npg_contention.overflow_ended_after = '1h'");
$node->restart;
is($node->safe_psql('postgres',
	'SELECT count(*) >= 1 FROM pg_contention_subxact WHERE pid = pg_backend_pid()'),
	't', 'view lists the querying backend once preloaded');

# The pg_contention.* prefix is reserved from PG15 on (MarkGUCPrefixReserved):
# a misspelt setting is refused.  PG13/14 can only warn at load time.
SKIP:
{
	skip 'GUC prefixes can be reserved from PostgreSQL 15 on', 2
	  if $node->safe_psql('postgres', 'SHOW server_version_num') < 150000;
	($ret, $out, $err) = $node->psql('postgres', "SET pg_contention.no_such_setting = 1");
	isnt($ret, 0, 'unknown pg_contention.* setting is rejected');
	like($err, qr/invalid configuration parameter name/, 'with a clear message');
}

# An overflowed transaction in one session is seen from another, with the
# statement it is running, and disappears when it ends.
$node->safe_psql('postgres', 'CREATE TABLE rows70 (id int)');
my $savepoints = join('',
	map { "SAVEPOINT s$_; INSERT INTO rows70 VALUES ($_);\n" } 1 .. 70);
my $bg = $node->background_psql('postgres');
$bg->query_safe("SET application_name = 'pgc_tap_a'");
$bg->query_safe("BEGIN;\n$savepoints");
is($node->safe_psql('postgres',
	"SELECT subxact_count || ' ' || subxact_overflowed || ' ' || state
	   FROM pg_contention_subxact WHERE application_name = 'pgc_tap_a'"),
	'64 true idle in transaction', 'overflowed session seen from another');
$bg->query_safe('COMMIT');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_subxact WHERE application_name = 'pgc_tap_a'"),
	'0', 'row gone after COMMIT');
$bg->quit;

$node->stop;
done_testing();
