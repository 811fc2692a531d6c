# A holder reached through TCP, as behind a pooler: the finding names its
# client address and port, advises the timeout on its role, and, when
# many sessions come from that address (a pooler's), how to find the
# client behind it and the pooler's own timeout.  Three sessions connect
# from 127.0.0.1; one writes and stays idle in its transaction.  Then a
# real PgBouncer over TCP in transaction mode, with
# application_name_add_host: a client that forgot to commit is named with
# its own address and port, as PgBouncer's SHOW CLIENTS gives them; and a
# session whose application is a pooler's is marked as one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(find_program);

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
like($f, qr/^pid $pid \(.*user web app, database shop, idle in transaction for [^,]+, client 127\.0\.0\.1:$port, a pooler's perhaps\)/,
	'the subject names the client address and port');
like($f, qr/To keep it from recurring: ALTER ROLE "web app" SET idle_in_transaction_session_timeout = '5min' \(that role's new sessions\)\. 3 sessions connect from 127\.0\.0\.1, a pooler's perhaps: there, find the client \(PgBouncer: SHOW SERVERS, the row whose remote_pid is $pid, then SHOW CLIENTS for its link\) and set the pooler's own timeout too \(PgBouncer: idle_transaction_timeout\)\.$/,
	'the advice names the role\'s timeout, and how to find the client behind a pooler');

$_->{h}->kill_kill for @sessions;
ok($node->poll_query_until('shop', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE client_addr = '127.0.0.1'}),
	'the three sessions ended');

# A session whose application names a pooler: marked, whatever its count.
{
	my ($in, $out, $err) = ("BEGIN; INSERT INTO t VALUES (2);\n", '', '');
	local $ENV{PGAPPNAME} = 'pgcat';
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-h', '127.0.0.1', '-p', $node->port, '-U', 'web app', 'shop' ],
		'<', \$in, '>', \$out, '2>', \$err);
	$h->pump_nb for 1 .. 10;
	ok($node->poll_query_until('shop', q{SELECT count(*) = 1 FROM pg_contention_findings
		WHERE problem = 'xmin_horizon_held' AND subject LIKE '%application pgcat%'}), 'the pgcat session holds');
	$f = $node->safe_psql('shop', q{SELECT subject || ' | ' || advice FROM pg_contention_findings
		WHERE problem = 'xmin_horizon_held' AND subject LIKE '%application pgcat%'});
	note($f);
	like($f, qr/, client 127\.0\.0\.1:\d+, a pooler's connection\).*Its application name, pgcat, is a pooler's: there, find the client/,
		'a pooler that names itself is marked as one, with the way to its client');
	$h->kill_kill;
}

# ---- A real PgBouncer over TCP, transaction mode.
my $pgbouncer = find_program('pgbouncer') // (-x '/usr/sbin/pgbouncer' ? '/usr/sbin/pgbouncer' : undef);
SKIP:
{
	skip 'PgBouncer is not installed (Debian: pgbouncer)', 6 unless defined $pgbouncer;
	my $dir = PostgreSQL::Test::Utils::tempdir;
	my $bport = PostgreSQL::Test::Cluster::get_free_port();
	my $admin = getpwuid($>);
	open my $users, '>', "$dir/users.txt" or die $!;
	print $users qq{"web app" ""\n"$admin" ""\n};
	close $users;
	open my $ini, '>', "$dir/pgbouncer.ini" or die $!;
	print $ini "[databases]\n",
	  'shop = host=127.0.0.1 port=', $node->port, " dbname=shop\n",
	  "[pgbouncer]\n",
	  "listen_addr = 127.0.0.1\n",
	  "listen_port = $bport\n",
	  "unix_socket_dir =\n",
	  "auth_type = trust\n",
	  "auth_file = $dir/users.txt\n",
	  "admin_users = $admin\n",
	  "pool_mode = transaction\n",
	  "application_name_add_host = 1\n",
	  "logfile = $dir/pgbouncer.log\n";
	close $ini;
	my $bouncer = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ], '<', \undef, '>', \my $o, '2>', \my $e);

	# The client that forgot to commit, through the pooler.
	my ($in, $out, $err) = ('', '', '');
	my $client;
	for (1 .. 100)
	{
		last if system('psql', '-X', '-q', '-h', '127.0.0.1', '-p', $bport, '-U', 'web app', '-c', 'SELECT 1', 'shop') == 0;
		select(undef, undef, undef, 0.1);
	}
	{
		local $ENV{PGAPPNAME} = 'shop-web';
		$client = IPC::Run::start([ 'psql', '-X', '-q', '-h', '127.0.0.1', '-p', $bport, '-U', 'web app', 'shop' ],
			'<', \$in, '>', \$out, '2>', \$err);
	}
	$in .= "BEGIN; INSERT INTO t VALUES (3);\n";
	$client->pump_nb for 1 .. 10;
	ok($node->poll_query_until('shop', q{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name LIKE 'shop-web - %' AND state = 'idle in transaction'}),
		'the pooled client is idle in its transaction on the server');

	# Where PgBouncer says the client is: SHOW CLIENTS, the row of its user.
	# (Columns found by name: PgBouncer's versions add some.)
	my $clients = '';
	IPC::Run::run([ 'psql', '-X', '-A', '-F', '|', '-h', '127.0.0.1', '-p', $bport, '-U', $admin, '-c', 'SHOW CLIENTS', 'pgbouncer' ],
		'<', \undef, '>', \$clients, '2>', \my $cerr);
	my ($header, @rows) = split /\n/, $clients;
	my @names = split /\|/, $header // '';
	my ($client_at) = map {
		my %c;
		@c{@names} = split /\|/, $_, -1;
		($c{user} // '') eq 'web app' ? ("$c{addr}:$c{port}") : ()
	} grep { /\|/ } @rows;
	note("SHOW CLIENTS: $clients");
	ok(defined $client_at, "SHOW CLIENTS lists the client ($client_at)");
	my ($bpid, $bclient_port) = split /\|/, $node->safe_psql('shop', q{SELECT pid, client_port FROM pg_stat_activity
		WHERE application_name LIKE 'shop-web - %'});
	ok($node->poll_query_until('shop', qq{SELECT count(*) = 1 FROM pg_contention_findings
		WHERE problem = 'xmin_horizon_held' AND details ->> 'pid' = '$bpid'}), 'the pooled holder is a finding');
	$f = $node->safe_psql('shop', qq{SELECT subject || ' | ' || advice FROM pg_contention_findings
		WHERE problem = 'xmin_horizon_held' AND details ->> 'pid' = '$bpid'});
	note($f);
	like($f, qr/^pid $bpid \(application shop-web - \Q$client_at\E, user web app, database shop, idle in transaction for [^,]+, client 127\.0\.0\.1:$bclient_port, a pooler's connection\)/,
		'the subject marks the pooler\'s connection, with the server side\'s address and port');
	like($f, qr/ALTER ROLE "web app" SET idle_in_transaction_session_timeout = '5min' \(that role's new sessions\)\. Its application name ends with its client's address and port, \Q$client_at\E \(PgBouncer's application_name_add_host\), a pooler's connection: there, find the client \(PgBouncer: SHOW SERVERS, the row whose remote_pid is $bpid, then SHOW CLIENTS for its link\) and set the pooler's own timeout too \(PgBouncer: idle_transaction_timeout\)\.$/,
		'the advice names the client PgBouncer gives, the role\'s timeout and the pooler\'s');
	# The advice's way in: SHOW SERVERS has the holder's pid as remote_pid.
	my $servers = '';
	IPC::Run::run([ 'psql', '-X', '-A', '-t', '-F', '|', '-h', '127.0.0.1', '-p', $bport, '-U', $admin, '-c', 'SHOW SERVERS', 'pgbouncer' ],
		'<', \undef, '>', \$servers, '2>', \my $serr);
	like($servers, qr/\|$bpid\|/, 'SHOW SERVERS has a row whose remote_pid is the holder\'s');
	$client->kill_kill;
	$bouncer->kill_kill;
}
done_testing();
