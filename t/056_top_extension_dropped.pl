# top while the extension is dropped, created again, and updated under it:
# it says once that the extension is gone and waits (a catalog read that
# raises no error: no ERROR in the server's log while it waits), resumes
# when it is created again, and reads an updated extension's new version
# on a new connection, whether or not a read failed.
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
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION pg_contention');

# top refreshing every 0.2 s, its frames written as text (not a terminal).
my ($in, $out, $err) = ('', '', '');
my $top = IPC::Run::start([ 'pg_contention', 'top', '-i', '0.2' ],
	'<', \$in, '>', \$out, '2>', \$err,
	init => sub { $ENV{PGHOST} = $node->host; $ENV{PGPORT} = $node->port; $ENV{PGDATABASE} = 'shop' });
sub frames_until
{
	my ($re) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		$top->pump_nb;
		return 1 if $out =~ $re;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}
ok(frames_until(qr/^Findings over the last/m), 'top shows its frame') or diag($err);

# DROP EXTENSION locks the extension's objects one after the other, and
# a refresh reading several of them can deadlock with it: the DDL waits
# longer before it checks (deadlock_timeout), so that if a cycle forms,
# top's read is the one cancelled (it says so on its error line, once)
# and the DROP goes through, as a DBA would want.
$out = '';
$node->safe_psql('shop', "SET deadlock_timeout = '1min'; DROP EXTENSION pg_contention");
ok(frames_until(qr/^Waiting: extension pg_contention was dropped from database "shop" \(seen at \d\d:\d\d:\d\d\): top resumes when it is created again/m),
	'top says the extension was dropped and that it waits');
# Two seconds of waiting: about ten refreshes.
my $offset = -s $node->logfile;
$out = '';
select(undef, undef, undef, 2);
$top->pump_nb;
my $frames = () = $out =~ /^Waiting: extension pg_contention was dropped/mg;
ok($frames >= 3, "it went on drawing ($frames frames), waiting");
unlike($out, qr/^Error: /m, 'no error line while it waits');
my $log = slurp_file($node->logfile, $offset);
my $errors = () = $log =~ /ERROR: /g;
is($errors, 0, "no ERROR in the server's log while it waits") or diag($log);

$out = '';
$node->safe_psql('shop', "CREATE EXTENSION pg_contention VERSION '1.3'");
ok(frames_until(qr/^Findings over the last(?!.*^Waiting: )/ms), 'created again (1.3): top resumes, no longer waiting');

# Updated under it: a read need not fail (a view read again by name
# answers as before), so top looks at the version every few seconds and
# reads the new one on a new connection; no error at each refresh.
$out = '';
$node->safe_psql('shop', "SET deadlock_timeout = '1min'; ALTER EXTENSION pg_contention UPDATE");
ok(frames_until(qr/^Who pays/m), 'updated: top reads the 1.4 sections (who pays)');
# The frames drawn since the new version was read carry no error line.
select(undef, undef, undef, 1);
$top->pump_nb;
my $at = index($out, "\nWho pays");
my $since = $at < 0 ? '' : substr($out, rindex($out, "\n pg_contention top", $at) + 1);
unlike($since, qr/^Error: /m, 'no error line once the new version is read');

$top->kill_kill;
done_testing();
