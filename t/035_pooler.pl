# The client behind a transaction pooler (PgBouncer, pool_mode =
# transaction), as many DBAs reach their servers.  top and report prepare
# their queries once per connection (protocol-level named statements);
# behind a pooler, the server session that holds them is not always the
# client's:
#  - a server connection that another client already prepared them on
#    answers "already exists" (42P05): the pooler's default setup, one
#    server connection shared by successive clients;
#  - one reset after every transaction (server_reset_query_always = 1,
#    DISCARD ALL) answers "does not exist" (26000) at the second refresh.
# Either way every refresh must show its data, and the client must stop
# preparing on that connection after the first such answer: one error in
# the server's log per client run, not one per refresh.  A PgBouncer that
# keeps prepared statements (1.21 and later, max_prepared_statements)
# gives no such answer.  (A client built
# with libpq 13 has no pipeline mode and never prepares: no error at all.)
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(find_program);

my $pgbouncer = find_program('pgbouncer') // (-x '/usr/sbin/pgbouncer' ? '/usr/sbin/pgbouncer' : undef);
plan skip_all => 'PgBouncer is not installed (Debian: pgbouncer)' unless defined $pgbouncer;

my $node = PostgreSQL::Test::Cluster->new('pooled');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

# PgBouncer 1.21 and later can keep a client's prepared statements
# (max_prepared_statements, on by default from 1.22): the scenarios above
# turn that off, as older ones are; the last one turns it on.
my ($bouncer_version) = `$pgbouncer --version` =~ /PgBouncer (\d+\.\d+)/;
my $keeps_prepared = defined $bouncer_version && $bouncer_version >= 1.21;
note "PgBouncer $bouncer_version";

# The client prepares where its libpq has pipeline mode (14 and later);
# the chroots' clients are built with their server's libpq.
my $prepares = $node->safe_psql('postgres', 'SHOW server_version_num') >= 140000;
my $user = getpwuid($>);
my $dir = PostgreSQL::Test::Utils::tempdir;
my $port = PostgreSQL::Test::Cluster::get_free_port();

# A PgBouncer in front of the node, on a Unix socket of its own, with one
# server connection so that successive clients share it.
sub start_pooler
{
	my (%extra) = @_;
	$extra{max_prepared_statements} //= 0 if $keeps_prepared;
	my $settings = join('', map { "$_ = $extra{$_}\n" } sort keys %extra);
	open my $users, '>', "$dir/users.txt" or die $!;
	print $users qq{"$user" ""\n};
	close $users;
	open my $ini, '>', "$dir/pgbouncer.ini" or die $!;
	print $ini "[databases]\n",
	  'postgres = host=', $node->host, ' port=', $node->port, " dbname=postgres\n",
	  "[pgbouncer]\n",
	  "listen_addr =\n",
	  "listen_port = $port\n",
	  "unix_socket_dir = $dir\n",
	  "auth_type = trust\n",
	  "auth_file = $dir/users.txt\n",
	  "pool_mode = transaction\n",
	  "default_pool_size = 1\n",
	  "logfile = $dir/pgbouncer.log\n",
	  $settings;
	close $ini;
	my $h = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ], '<', \undef, '>', \my $o, '2>', \my $e);
	my $socket = "$dir/.s.PGSQL.$port";
	for (1 .. 300)
	{
		last if -S $socket;
		select(undef, undef, undef, 0.1);
	}
	die "PgBouncer did not start: " . slurp_file("$dir/pgbouncer.log") unless -S $socket;
	return $h;
}

sub through_pooler
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGHOST} = $dir;
	local $ENV{PGPORT} = $port;
	local $ENV{PGDATABASE} = 'postgres';
	IPC::Run::run([ 'pg_contention', @args ], '<', \undef, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

# Something for every refresh to show: an overflowed subtransaction cache
# held open by a session (the pooler is not in its way: it is the node's).
my $holder = $node->background_psql('postgres');
$holder->query_safe(join("\n", 'BEGIN;', 'CREATE TEMP TABLE held (i int);',
	(map { "SAVEPOINT s$_; INSERT INTO held VALUES ($_);" } 1 .. 70)));
$node->safe_psql('postgres', 'SELECT 1');

# The errors a client run left in the server's log about pgc_ statements.
sub lost_statements
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my $exists = () = $log =~ /ERROR:  prepared statement "pgc_[0-9a-f]{16}" already exists/g;
	my $missing = () = $log =~ /ERROR:  prepared statement "pgc_[0-9a-f]{16}" does not exist/g;
	return "$exists already exist, $missing do not";
}

# The plain top of one refresh names the overflowed backend's statement.
sub refreshes_shown
{
	my ($out) = @_;
	return scalar(() = $out =~ /^Statements by pg_subtrans waits/mg);
}

# ---- The pooler's default: no reset in transaction mode.
my $pooler = start_pooler();
my $offset = -s $node->logfile;
my ($rc, $out, $err) = through_pooler('top', '-n', '4', '-i', '0.2');
is($rc, 0, 'top -n 4 through the pooler exits 0 (first client)');
is(refreshes_shown($out), 4, 'the first client shows its 4 refreshes');
is(lost_statements($offset), '0 already exist, 0 do not',
	'the first client keeps its server connection: its statements stay prepared');

$offset = -s $node->logfile;
($rc, $out, $err) = through_pooler('top', '-n', '4', '-i', '0.2');
is($rc, 0, 'top -n 4 through the pooler exits 0 (second client, same server connection)');
is($err, '', 'the second client prints no error');
is(refreshes_shown($out), 4, 'the second client shows its 4 refreshes');
like($out, qr/overflowed/, 'and the overflowed cache on them');
is(lost_statements($offset), $prepares ? '1 already exist, 0 do not' : '0 already exist, 0 do not',
	'the second client met the first one\'s statements once, then stopped preparing');

# report (text): the server's own report, one statement.
$offset = -s $node->logfile;
($rc, $out, $err) = through_pooler('report');
is($rc, 0, 'report through the pooler exits 0');
like($out, qr/overflowed/i, 'the report shows the overflowed cache');
is(lost_statements($offset), '0 already exist, 0 do not', 'report prepares nothing');

# report --html reads one look, prepared like top's.  Some of its queries
# are top's (the clock, the findings): the server connection has them
# already, and the second HTML report has all of its own.  Either way
# one answer, then no more preparing.
for my $run (1, 2)
{
	$offset = -s $node->logfile;
	($rc, $out, $err) = through_pooler('report', '--html=-');
	is($rc, 0, "report --html through the pooler exits 0 (run $run)");
	like($out, qr/<\/html>\s*\z/, "a whole page (run $run)");
	like($out, qr/INSERT INTO held/, "naming the overflowed backend's statement (run $run)");
	is(lost_statements($offset), $prepares ? '1 already exist, 0 do not' : '0 already exist, 0 do not',
		"report --html met its statements once (run $run)");
}
$pooler->kill_kill;

# ---- A pooler that resets every server connection after each transaction.
$pooler = start_pooler(server_reset_query => 'DISCARD ALL', server_reset_query_always => 1);
$offset = -s $node->logfile;
($rc, $out, $err) = through_pooler('top', '-n', '4', '-i', '0.2');
is($rc, 0, 'top -n 4 through a resetting pooler exits 0');
is($err, '', 'no error printed');
is(refreshes_shown($out), 4, 'all 4 refreshes shown');
is(lost_statements($offset), $prepares ? '0 already exist, 1 do not' : '0 already exist, 0 do not',
	'the statements were lost once (second refresh), and not prepared again');

($rc, $out, $err) = through_pooler('check');
is($rc, 0, 'check through the pooler exits 0: nobody pays for the overflowed cache yet')
  or diag("$out\n$err");
like($out, qr/^info subxact_overflow: statement INSERT INTO held/m, 'and names it, as info');
# The server's version comes from the connection's parameters, which the
# pooler passes on from the server.
($rc, $out, $err) = through_pooler('check', '--json');
my ($server_version) = split / /, $node->safe_psql('postgres', 'SHOW server_version');
like($out, qr/"server_version": "\Q$server_version\E"/,
	"check --json through the pooler: the server's version ($server_version)");
$pooler->kill_kill;

# ---- A pooler that keeps them (PgBouncer 1.21 and later): the client
# keeps preparing, and the server says nothing.
SKIP:
{
	skip 'this PgBouncer cannot keep prepared statements (1.21 and later can)', 3
	  unless $keeps_prepared;
	$pooler = start_pooler(
		server_reset_query => 'DISCARD ALL',
		server_reset_query_always => 1,
		max_prepared_statements => 100);
	$offset = -s $node->logfile;
	($rc, $out, $err) = through_pooler('top', '-n', '4', '-i', '0.2');
	is($rc, 0, 'top -n 4 through a pooler that keeps prepared statements exits 0');
	is(refreshes_shown($out), 4, 'all 4 refreshes shown');
	is(lost_statements($offset), '0 already exist, 0 do not', 'no statement lost');
	$pooler->kill_kill;
}

$holder->quit;
$node->stop;
done_testing();
