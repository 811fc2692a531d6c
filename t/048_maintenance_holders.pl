# Maintenance commands that hold the xmin horizon get advice that breaks
# nothing, and their age is their snapshot's.  An index build, VACUUM
# FULL or CLUSTER holds the horizon for as long as it runs; cancelling a
# concurrent build leaves an INVALID index behind, any other loses its
# work.  CREATE INDEX CONCURRENTLY takes a new snapshot in each phase
# while its transaction start stays the statement's: the hold is counted
# from the phase's snapshot.  Each case is a real command made slow by an
# expression index whose function sleeps, in the application's database.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(churn);

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.horizon_min_age = '2s'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE DATABASE shop');
$node->safe_psql('shop', q{
CREATE EXTENSION pg_contention;
CREATE FUNCTION slow(integer) RETURNS integer IMMUTABLE LANGUAGE plpgsql
	AS 'BEGIN PERFORM pg_sleep(0.02); RETURN $1; END';
CREATE TABLE stock (id integer PRIMARY KEY, n integer NOT NULL);
INSERT INTO stock SELECT g, 0 FROM generate_series(1, 900) AS g;
CREATE TABLE ledger (id integer, n integer);
INSERT INTO ledger SELECT g, 0 FROM generate_series(1, 300) AS g;});

# A command in its own psql, in the background.
sub start_command
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('shop'), '-c', $sql ],
		'>', \$out, '2>', \$err);
	return { handle => $h, out => \$out, err => \$err };
}

# The finding about the backend running $command, once it holds.
my $finding = q{SELECT evidence || ' | ' || advice || ' | ' || since
	FROM pg_contention_findings
	WHERE problem = 'xmin_horizon_held' AND details ->> 'command' = '%s'};

sub finding_of
{
	my ($command) = @_;
	my $q = sprintf($finding, $command);
	$node->poll_query_until('shop', "SELECT count(*) = 1 FROM ($q) AS f")
	  or return '';
	return $node->safe_psql('shop', $q);
}

# ---- CREATE INDEX: its work lost if cancelled; let it finish.
my $build = start_command('CREATE INDEX stock_slow ON stock (slow(id))');
churn($node, 'shop');
my $f = finding_of('CREATE INDEX');
note("CREATE INDEX: $f");
like($f, qr/^Its xmin is [0-9,]+ transactions? old, held for \d+ s by CREATE INDEX of table public\.stock \(phase building index: scanning table(, [0-9,]+ of [0-9,]+ blocks)?\);/,
	'CREATE INDEX: the evidence says which command holds it, on what, in which phase');
like($f, qr/\| Let CREATE INDEX finish: cancelling it \(SELECT pg_cancel_backend\(\d+\)\) rolls it back cleanly but loses its work/,
	'CREATE INDEX: the advice is to let it finish, and what a cancel costs');
$build->{handle}->finish;
is(${ $build->{err} }, '', 'CREATE INDEX: it finished');

# ---- VACUUM FULL: the same; its lock blocks the table.  Cancelled: the
# table is as it was.
my $full = start_command('VACUUM FULL stock');
churn($node, 'shop');
$f = finding_of('VACUUM FULL');
note("VACUUM FULL: $f");
like($f, qr/held for \d+ s by VACUUM FULL of table public\.stock \(phase [a-z ]+(, [0-9,]+ of [0-9,]+ blocks)?\);.*\| Let VACUUM FULL finish: cancelling it \(SELECT pg_cancel_backend\(\d+\)\) rolls it back cleanly but loses its work and leaves the table as it was; its ACCESS EXCLUSIVE lock blocks every use of the table meanwhile\./,
	'VACUUM FULL: the evidence names it, the advice lets it finish');
$node->safe_psql('shop', q{SELECT pg_cancel_backend(pid) FROM pg_stat_progress_cluster});
$full->{handle}->finish;
like(${ $full->{err} }, qr/canceling statement due to user request/, 'VACUUM FULL: cancelled');
is($node->safe_psql('shop', 'SELECT count(*) FROM stock'), '900', 'VACUUM FULL: the table is as it was');

# ---- CREATE INDEX CONCURRENTLY: rows added while it builds are checked
# in its validation phase, under a newer snapshot than the build's.  The
# hold is counted from that phase, not from the statement's start; a
# cancel leaves the INVALID index the advice says how to find.
my $cic = start_command('CREATE INDEX CONCURRENTLY ledger_slow ON ledger (slow(id))');
ok($node->poll_query_until('shop',
	"SELECT phase = 'building index: scanning table' FROM pg_stat_progress_create_index"),
	'CREATE INDEX CONCURRENTLY: building');
my $building_seen = $node->safe_psql('shop', 'SELECT clock_timestamp()');
$node->safe_psql('shop', 'INSERT INTO ledger SELECT g, 0 FROM generate_series(301, 900) AS g');
ok($node->poll_query_until('shop',
	"SELECT phase LIKE 'index validation%' FROM pg_stat_progress_create_index"),
	'CREATE INDEX CONCURRENTLY: validating');
churn($node, 'shop');
$f = finding_of('CREATE INDEX CONCURRENTLY');
note("CREATE INDEX CONCURRENTLY: $f");
like($f, qr/held for \d+ s by CREATE INDEX CONCURRENTLY of index public\.ledger_slow on table public\.ledger \(phase index validation: [a-z ]+(, [0-9,]+ of [0-9,]+ (blocks|tuples))?\);/,
	'CREATE INDEX CONCURRENTLY: the evidence names the index and the phase');
like($f, qr/\| Let CREATE INDEX CONCURRENTLY finish: each of its phases takes a new snapshot, and this hold ends with the phase\. Cancelling it frees the horizon now but leaves an INVALID index behind .*SELECT indexrelid::regclass FROM pg_index WHERE NOT indisvalid/,
	'CREATE INDEX CONCURRENTLY: the advice is to let it finish, and says a cancel leaves an INVALID index');
unlike($f, qr/\| If the statement can go/, 'CREATE INDEX CONCURRENTLY: not the advice for a report');
my ($since) = $f =~ /\| ([^|]+)$/;
is($node->safe_psql('shop', "SELECT '$since'::timestamptz > '$building_seen'::timestamptz"), 't',
	'CREATE INDEX CONCURRENTLY: held since the validation\'s snapshot, after the build was seen (the statement began before)');
cmp_ok($node->safe_psql('shop', q{SELECT count(*) FROM pg_stat_activity
	WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND query_start < '} . $building_seen . q{'}), '==', 1,
	'CREATE INDEX CONCURRENTLY: its statement (and transaction) start is before the build');
$node->safe_psql('shop', q{SELECT pg_cancel_backend(pid) FROM pg_stat_progress_create_index});
$cic->{handle}->finish;
like(${ $cic->{err} }, qr/canceling statement due to user request/, 'CREATE INDEX CONCURRENTLY: cancelled');
is($node->safe_psql('shop', 'SELECT indexrelid::regclass FROM pg_index WHERE NOT indisvalid'), 'ledger_slow',
	'CREATE INDEX CONCURRENTLY: cancelled, it left the INVALID index the advice finds');
$node->safe_psql('shop', 'DROP INDEX CONCURRENTLY ledger_slow');
ok($node->poll_query_until('shop', "SELECT count(*) = 0 FROM pg_contention_findings WHERE problem = 'xmin_horizon_held'"),
	'no holder left');

done_testing();
