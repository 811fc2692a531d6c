# pg_contention_horizon: every kind of xmin-horizon holder appears with the
# right kind and holder, root holders past the threshold are marked as
# blocking cleanup, sessions whose snapshot follows another's transaction
# and young holders are not, and they disappear once they end.  Primary plus a streaming
# standby with hot_standby_feedback, first through a physical slot, then
# without one (its walsender then carries the xmin).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 'logical');
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
max_prepared_transactions = 5
autovacuum = off
});
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE h (id int);
	SELECT pg_create_physical_replication_slot('phys');
});
$primary->backup('b');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', qq{
hot_standby_feedback = on
primary_slot_name = 'phys'
wal_receiver_status_interval = 1
});
$standby->start;

sub burn_xids
{
	my ($n) = @_;
	$primary->safe_psql('postgres',
		join('', map { "SELECT txid_current();\n" } 1 .. $n));
}

# A logical slot holds the catalog horizon.
$primary->safe_psql('postgres',
	"SELECT pg_create_logical_replication_slot('logi', 'test_decoding')");
burn_xids(50);

# An idle-in-transaction session that wrote (holds its xid).
my $idle = $primary->background_psql('postgres');
my $idle_pid = $idle->query_safe('SELECT pg_backend_pid()');
$idle->query_safe('BEGIN; INSERT INTO h VALUES (1);');
burn_xids(50);

# A REPEATABLE READ transaction that only read (holds its snapshot's xmin).
my $rr = $primary->background_psql('postgres');
my $rr_pid = $rr->query_safe('SELECT pg_backend_pid()');
$rr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM h;');
burn_xids(300);

# A prepared transaction, much younger.
$primary->safe_psql('postgres', "BEGIN; INSERT INTO h VALUES (2); PREPARE TRANSACTION 'gx1';");

ok($primary->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_horizon WHERE kind = 'replication slot' AND holder = 'phys' AND NOT catalog_only"),
	'the physical slot fed by the standby holds the horizon');

# Every root holder marked, whatever its age: both thresholds at zero.
my $all = "SET pg_contention.horizon_min_age = 0; SET pg_contention.horizon_min_xid_age = 0;";

is($primary->safe_psql('postgres',
	"SELECT kind, holder, catalog_only, state
	   FROM (SELECT h.*, row_number() OVER () AS position FROM pg_contention_horizon h) AS v
	  WHERE holder IN ('logi', '$idle_pid', '$rr_pid', 'gx1')
	  ORDER BY position"),
	join("\n",
		'replication slot|logi|t|inactive',
		"backend|$idle_pid|f|idle in transaction",
		"backend|$rr_pid|f|idle in transaction",
		'prepared transaction|gx1|f|prepared'),
	'logical slot (catalog), idle writer, the reader that follows it, prepared transaction: oldest first, then longest held');
# The history records the horizon's age each second: the oldest holder's
# (the logical slot's catalog xmin, 400 XIDs old), not less.
my $latest_age = "SELECT horizon_xid_age FROM pg_contention_history ORDER BY bucket_start DESC LIMIT 1";
ok($primary->poll_query_until('postgres',
	"SELECT ($latest_age) >= (SELECT max(xmin_age) FROM pg_contention_horizon) - 1
			AND ($latest_age) >= 400"),
	'the history\'s horizon age is the oldest holder\'s');

# The reader's snapshot xmin is the idle writer's xid (the writer was
# running when it took its snapshot): it follows the writer, it does not
# hold the horizon by itself.
is($primary->safe_psql('postgres',
	"$all SELECT r.xmin = w.xmin, r.follows, r.blocks_cleanup, w.follows IS NULL, w.blocks_cleanup
	   FROM pg_contention_horizon r, pg_contention_horizon w
	  WHERE r.holder = '$rr_pid' AND w.holder = '$idle_pid'"),
	"t|$idle_pid|f|t|t",
	'the reader\'s xmin is the writer\'s xid: the writer is the root holder, the reader follows it');
is($primary->safe_psql('postgres',
	"$all SELECT blocks_cleanup, follows IS NULL FROM pg_contention_horizon WHERE holder = 'gx1'"),
	't|t', 'the prepared transaction holds by its own xid: a root holder too');
is($primary->safe_psql('postgres',
	"$all SELECT blocks_cleanup FROM pg_contention_horizon WHERE holder = 'logi'"),
	't', 'the logical slot holds the catalog horizon by itself');
is($primary->safe_psql('postgres',
	"SELECT count(*) FILTER (WHERE blocks_cleanup) FROM pg_contention_horizon"),
	'0', 'with the default thresholds (a minute, 10,000 XIDs) none of these young holders is material');
is($primary->safe_psql('postgres',
	"SELECT bool_and(xmin_age > 0) AND bool_and(held_for >= interval '0')
			AND bool_and(held_for IS NOT NULL OR kind = 'replication slot')
	   FROM pg_contention_horizon"),
	't', 'ages and durations are filled in, never negative');
is($primary->safe_psql('postgres',
	"SELECT application_name, client_addr IS NULL FROM pg_contention_horizon WHERE pid = $idle_pid"),
	'007_horizon.pl|t', 'the backend\'s application_name, and no client_addr over a Unix socket');
is($primary->safe_psql('postgres',
	"SELECT query IS NOT NULL AND query <> '<insufficient privilege>' FROM pg_contention_horizon WHERE pid = $idle_pid"),
	't', 'the backend\'s last statement is shown to a superuser');

# Masking for a role without pg_read_all_stats.
$primary->safe_psql('postgres', 'CREATE ROLE reader LOGIN');
is($primary->safe_psql('postgres',
	"SELECT query, state IS NULL FROM pg_contention_horizon WHERE pid = $idle_pid",
	extra_params => [ '-U', 'reader' ]),
	'<insufficient privilege>|t', 'other roles\' statements are masked');

# The standby without a slot: its walsender carries the feedback xmin.
$standby->stop;
$standby->append_conf('postgresql.conf', "primary_slot_name = ''");
$primary->safe_psql('postgres', "SELECT pg_drop_replication_slot('phys')");
$standby->start;
ok($primary->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_contention_horizon h JOIN pg_stat_replication r ON r.pid = h.pid
	  WHERE h.kind = 'standby feedback' AND h.application_name = r.application_name
		AND h.held_for IS NOT NULL"),
	'the walsender of a standby without a slot carries its xmin, with its application_name and how long it has stood still');

# Everything ends: nothing holds the horizon any more.
$idle->query_safe('COMMIT');
$idle->quit;
$rr->query_safe('COMMIT');
$rr->quit;
$primary->safe_psql('postgres', "COMMIT PREPARED 'gx1'");
$primary->safe_psql('postgres', "SELECT pg_drop_replication_slot('logi')");
$standby->stop;
ok($primary->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_contention_horizon'),
	'no holder is left once they end');
burn_xids(5);
ok($primary->poll_query_until('postgres', "SELECT ($latest_age) < 10"),
	'the history\'s horizon age falls back once they end');

# A long holder among short transactions: pgbench clients run 0.1-second
# transactions that take an xid; a reader follows the long writer.  Only
# the writer, held past the threshold, is marked.
my $long = $primary->background_psql('postgres');
my $long_pid = $long->query_safe('SELECT pg_backend_pid()');
$long->query_safe('BEGIN; INSERT INTO h VALUES (3);');
my $follower = $primary->background_psql('postgres');
my $follower_pid = $follower->query_safe('SELECT pg_backend_pid()');
$follower->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM h;');
my $script = $primary->basedir . '/short.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"BEGIN;\nSELECT txid_current();\nSELECT pg_sleep(0.1);\nCOMMIT;\n");
my $bench_out = '';
my $bench;
{
	local $ENV{PGAPPNAME} = 'pgbench';
	$bench = IPC::Run::start(
		# Until killed below: no step may outlast it on a slow machine.
		[ 'pgbench', '-n', '-c', '3', '-T', '600', '-f', $script, $primary->connstr('postgres') ],
		'>', \$bench_out, '2>', \$bench_out);
}
ok($primary->poll_query_until('postgres',
	"SELECT count(*) >= 2 FROM pg_contention_horizon WHERE application_name = 'pgbench'"),
	'the short transactions show in the view');
ok($primary->poll_query_until('postgres',
	"SELECT held_for > interval '2 seconds' FROM pg_contention_horizon WHERE holder = '$long_pid'"),
	'the writer has held for two seconds');
is($primary->safe_psql('postgres',
	"SET pg_contention.horizon_min_age = '2s';
	 SELECT string_agg(holder, ',') FILTER (WHERE blocks_cleanup),
			bool_and(follows = '$long_pid') FILTER (WHERE holder = '$follower_pid'),
			bool_and(NOT blocks_cleanup) FILTER (WHERE application_name = 'pgbench')
	   FROM pg_contention_horizon"),
	"$long_pid|t|t",
	'only the long writer is marked: not the reader that follows it, not the 0.1-second transactions');
is($primary->safe_psql('postgres',
	"SELECT holder FROM pg_contention_horizon WHERE kind = 'backend' LIMIT 1"),
	$long_pid, 'the writer comes first: same xmin as its followers, held longest');
$bench->kill_kill;
$long->query_safe('COMMIT');
$long->quit;
$follower->query_safe('COMMIT');
$follower->quit;
ok($primary->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_contention_horizon'),
	'nothing holds once they end');

# VACUUM and logical decoding do not hold the horizon: a long VACUUM is
# not listed (the server skips PROC_IN_VACUUM backends too).
is($primary->safe_psql('postgres', 'VACUUM h; SELECT count(*) FROM pg_contention_horizon'),
	'0', 'nothing left after VACUUM either');

done_testing();
