# A holder reached through TCP, as behind a pooler: the finding names its
# client address and port, advises the timeout on its role, and, when
# many sessions come from that address (a pooler's), how to find the
# client behind it and the pooler's own timeout.  Three sessions connect
# from 127.0.0.1; one writes and stays idle in its transaction.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
listen_addresses = '127.0.0.1'
pg_contention.horizon_min_age = '1s'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION pg_contention; CREATE ROLE "web app" LOGIN; CREATE TABLE t (i int); GRANT INSERT ON t TO "web app"');
my $hba = $node->data_dir . '/pg_hba.conf';
PostgreSQL::Test::Utils::append_to_file($hba, "host all all 127.0.0.1/32 trust\n");
$node->reload;

# Three sessions over TCP, as a pooler's server connections.
my @sessions;
for my $i (1 .. 3)
{
	my ($in, $out, $err) = ('', '', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-h', '127.0.0.1', '-p', $node->port, '-U', 'web app', 'shop' ],
		'<', \$in, '>', \$out, '2>', \$err);
	push @sessions, { h => $h, in => \$in };
}
${ $sessions[0]{in} } .= "BEGIN; INSERT INTO t VALUES (1);\n";
$sessions[0]{h}->pump_nb for 1 .. 10;
ok($node->poll_query_until('shop', q{SELECT count(*) = 3 FROM pg_stat_activity WHERE client_addr = '127.0.0.1'}),
	'three sessions from 127.0.0.1');
ok($node->poll_query_until('shop', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE client_addr = '127.0.0.1' AND state = 'idle in transaction' AND backend_xid IS NOT NULL}),
	'one of them idle in its transaction');
my ($pid, $port) = split /\|/, $node->safe_psql('shop', q{SELECT pid, client_port FROM pg_stat_activity
	WHERE client_addr = '127.0.0.1' AND state = 'idle in transaction'});

ok($node->poll_query_until('shop', q{SELECT count(*) = 1 FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'pid' = '} . $pid . q{'}), 'the holder is a finding');
my $f = $node->safe_psql('shop', q{SELECT subject || ' | ' || advice FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'pid' = '} . $pid . q{'});
note($f);
like($f, qr/^pid $pid \(.*user web app, database shop, idle in transaction for [^,]+, client 127\.0\.0\.1:$port\)/,
	'the subject names the client address and port');
like($f, qr/To keep it from recurring: ALTER ROLE "web app" SET idle_in_transaction_session_timeout = '5min' \(that role's new sessions\)\. 3 sessions connect from 127\.0\.0\.1, a pooler's perhaps: there, find the client \(PgBouncer: SHOW SERVERS, the row whose remote_pid is $pid, then SHOW CLIENTS for its link\) and set the pooler's own timeout too \(PgBouncer: idle_transaction_timeout\)\.$/,
	'the advice names the role\'s timeout, and how to find the client behind a pooler');

$_->{h}->kill_kill for @sessions;
done_testing();
