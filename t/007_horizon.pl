# pg_contention_horizon: every kind of xmin-horizon holder appears with the
# right kind and holder, the oldest is marked as blocking cleanup, a young
# one is not, and they disappear once they end.  Primary plus a streaming
# standby with hot_standby_feedback, first through a physical slot, then
# without one (its walsender then carries the xmin).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

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

is($primary->safe_psql('postgres',
	"SELECT kind, holder, catalog_only, state FROM pg_contention_horizon
	  WHERE holder IN ('logi', '$idle_pid', '$rr_pid', 'gx1')
	  ORDER BY xmin_age DESC"),
	join("\n",
		'replication slot|logi|t|inactive',
		"backend|$idle_pid|f|idle in transaction",
		"backend|$rr_pid|f|idle in transaction",
		'prepared transaction|gx1|f|prepared'),
	'logical slot (catalog), idle writer, reader snapshot, prepared transaction, oldest first');
is($primary->safe_psql('postgres',
	"SELECT blocks_cleanup FROM pg_contention_horizon WHERE NOT catalog_only ORDER BY xmin_age DESC LIMIT 1"),
	't', 'the oldest holder blocks cleanup');
is($primary->safe_psql('postgres',
	"SELECT blocks_cleanup FROM pg_contention_horizon WHERE holder = 'logi'"),
	't', 'the logical slot, older than every data holder, blocks catalog cleanup');
# The reader's snapshot xmin is the idle writer's xid (the writer was
# running when it took its snapshot), so it shares the writer's place in
# the horizon, whatever the standby's feedback says meanwhile; the
# prepared transaction, hundreds of XIDs younger, does not block.
is($primary->safe_psql('postgres',
	"SELECT r.xmin = w.xmin AND r.blocks_cleanup = w.blocks_cleanup
	   FROM pg_contention_horizon r, pg_contention_horizon w
	  WHERE r.holder = '$rr_pid' AND w.holder = '$idle_pid'"),
	't', 'the reader\'s xmin is the writer\'s xid, and it is marked like the writer');
is($primary->safe_psql('postgres',
	"SELECT blocks_cleanup FROM pg_contention_horizon WHERE holder = 'gx1'"),
	'f', 'a younger holder, hundreds of XIDs later, does not block');
is($primary->safe_psql('postgres',
	"SELECT bool_and(xmin_age > 0) AND bool_and(held_for IS NOT NULL OR kind = 'replication slot')
	   FROM pg_contention_horizon"),
	't', 'ages and durations are filled in');
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
	  WHERE h.kind = 'standby feedback'"),
	'the walsender of a standby without a slot carries its xmin');

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

# VACUUM and logical decoding do not hold the horizon: a long VACUUM is
# not listed (the server skips PROC_IN_VACUUM backends too).
is($primary->safe_psql('postgres', 'VACUUM h; SELECT count(*) FROM pg_contention_horizon'),
	'0', 'nothing left after VACUUM either');

done_testing();
