# The incidents worker's silence is never taken for a calm server.  With
# the extension created only in the application's database, the worker
# (in postgres, pg_contention.incident_database) keeps no incidents: check
# run against the application's database says so as a WARNING with the
# remedy, and incidents says so and exits 1; once the extension is created
# in postgres the worker finds it at its next evaluation and check is OK.
# With incidents off by the setting, nothing is missing: check stays OK
# and incidents says they are off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client);

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.incident_interval = '1s'
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION pg_contention');

ok($node->poll_query_until('shop', "SELECT state = 'waiting' FROM pg_contention_incidents_status()"),
	'the worker waits for the extension in postgres');
my ($rc, $out, $err) = run_client($node, 'check', '-d', 'shop');
is($rc, 1, 'check -d shop: WARNING, not OK');
like($out, qr/^PG_CONTENTION WARNING - the incidents are not kept: the incidents worker waits for the extension in database "postgres": CREATE EXTENSION pg_contention there, or set pg_contention\.incident_database to a database that has it; no findings on /,
	'check -d shop: it says the incidents are not kept, where and what to do');
($rc, $out, $err) = run_client($node, 'check', '--json', '-d', 'shop');
like($out, qr/"incidents_not_kept": "the incidents worker waits for the extension in database \\"postgres\\"/,
	'check --json: the same, in incidents_not_kept');
($rc, $out, $err) = run_client($node, 'incidents', '-d', 'shop');
is($rc, 1, 'incidents -d shop: exit 1');
like($out, qr/^PG_CONTENTION INCIDENTS - 0 open, 0 closed on .*\nWARNING: the incidents are not kept: the incidents worker waits for the extension in database "postgres"/,
	'incidents -d shop: the empty list says why it is empty');
like($err, qr/warning: the incidents are not kept/, 'incidents -d shop: and on stderr');

# The remedy: the worker finds the extension at its next evaluation.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
ok($node->poll_query_until('shop', "SELECT state = 'kept' AND waiting_since IS NULL FROM pg_contention_incidents_status()"),
	'created in postgres: the incidents are kept');
ok($node->log_contains(qr/pg_contention incidents: found the extension in schema public/, $offset),
	'the worker says it found the extension');
my $evaluated = $node->safe_psql('shop', 'SELECT last_evaluation FROM pg_contention_incidents_status()');
ok($node->poll_query_until('shop', "SELECT last_evaluation > '$evaluated' FROM pg_contention_incidents_status()"),
	'each evaluation is published (the worker is never taken for stalled while it evaluates)');
($rc, $out, $err) = run_client($node, 'check', '-d', 'shop');
is($rc, 0, 'check -d shop: OK') or diag($out . $err);
unlike($out, qr/not kept/, 'check -d shop: no warning left');
($rc, $out, $err) = run_client($node, 'incidents', '-d', 'shop');
is($rc, 0, 'incidents -d shop: exit 0');

# Off by the setting: said, no warning.
$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.incident_interval = 0");
$node->reload;
ok($node->poll_query_until('shop', "SELECT state = 'off' FROM pg_contention_incidents_status()"),
	'incident_interval 0: off');
($rc, $out, $err) = run_client($node, 'check', '-d', 'shop');
is($rc, 0, 'incidents off: check is OK (nothing is missing that was asked for)');
($rc, $out, $err) = run_client($node, 'incidents', '-d', 'shop');
like($out, qr/pg_contention\.incident_interval is 0: the server opens none/, 'incidents off: incidents says so');
is($rc, 0, 'incidents off: exit 0');
done_testing();
