# Blame per database: a holder of the xmin horizon holds back cleanup in
# the databases the server computes its horizon for (a snapshot without an
# XID: on PostgreSQL 13 every database, 14 and later its own; a transaction
# with an XID: every database where snapshots are taken, checked against
# VACUUM VERBOSE's removable cutoff), and its finding counts the dead tuples
# of those databases, whichever database reads the findings (the incidents
# worker and `check` read from postgres; the application is in shop).
# Before PostgreSQL 15 another database's counts cannot be read: the
# finding says so instead of quoting the reader's own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('databases');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.horizon_min_age = 1s
autovacuum = off
});
$node->start;
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('postgres', 'CREATE DATABASE analytics');
$node->safe_psql($_, 'CREATE EXTENSION pg_contention') for qw(postgres shop);

# Dead tuples in shop only: 3,000 deleted rows, counted once the deleting
# transaction's statistics are flushed.
$node->safe_psql('shop', q{
	CREATE TABLE items (id int PRIMARY KEY, v int);
	INSERT INTO items SELECT i, i FROM generate_series(1, 5000) AS i;
	DELETE FROM items WHERE id <= 3000;
});
ok($node->poll_query_until('shop',
	"SELECT n_dead_tup >= 3000 FROM pg_stat_user_tables WHERE relname = 'items'"),
	'shop holds 3,000 dead tuples');

# A report in analytics and one in shop, each holding its snapshot.
my %holder;
for my $db (qw(analytics shop))
{
	my $s = $node->background_psql($db);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class');
	$holder{$db} = [ $s, $pid ];
}
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 2 FROM pg_contention_findings
	 WHERE problem = 'xmin_horizon_held'
	   AND details ->> 'pid' IN ('$holder{analytics}[1]', '$holder{shop}[1]')}),
	'both reports are xmin_horizon_held findings');

sub finding
{
	my ($reader, $db) = @_;
	return $node->safe_psql($reader, qq{
		SELECT evidence || ' | ' || coalesce(details ->> 'dead_tuples', 'null')
		  FROM pg_contention_findings
		 WHERE problem = 'xmin_horizon_held' AND details ->> 'pid' = '$holder{$db}[1]'});
}

for my $reader (qw(postgres shop))
{
	my $shop = finding($reader, 'shop');
	my $analytics = finding($reader, 'analytics');
	note("read from $reader:\n  shop: $shop\n  analytics: $analytics");
	if ($version >= 150000)
	{
		like($shop, qr/the tables of database shop hold 3,[0-9]{3} dead tuples.* \| 3[0-9]{3}$/,
			"from $reader: the shop report's finding counts shop's dead tuples");
		like($analytics, qr/the tables of database analytics hold [0-9,]+ dead tuples.* \| ([0-9]+)$/,
			"from $reader: the analytics report's finding counts analytics' own");
		my ($count) = $analytics =~ / \| ([0-9]+)$/;
		cmp_ok($count // 0, '<', 3000, "from $reader: and not shop's");
	}
	elsif ($version >= 140000)
	{
		# 14: each holds back its own database, readable only from it.
		if ($reader eq 'shop')
		{
			like($shop, qr/the tables of database shop hold 3,[0-9]{3} dead tuples/,
				'from shop: the shop report counts shop\'s dead tuples');
		}
		else
		{
			like($shop, qr/the dead tuples of database shop cannot be read from database postgres before PostgreSQL 15 .* \| null$/,
				'from postgres: shop\'s dead tuples are said to be unreadable, not postgres\'s quoted');
		}
	}
	else
	{
		# 13: every snapshot holds back every database; the reader's own
		# counts are given, the others said to be unreadable.
		like($shop, qr/the tables of database $reader hold [0-9,]+ dead tuples, [^(]* \(those of .* cannot be read from here before PostgreSQL 15\)/,
			"from $reader: 13 names the databases it could not read");
	}
	unlike($shop, qr/database postgres hold/, "from $reader: shop's report is never blamed with postgres's counts")
	  if $version >= 140000;
}

# Index entries left dead in shop while only analytics holds a snapshot:
# rows moved to new keys (no HOT) after the reports began, then shop's
# report ends.  From 14 nothing holds shop: the first lookup marks the
# entries dead and the next ones are clean.  On 13 analytics' snapshot
# keeps every lookup from marking them (RecentGlobalXmin is the whole
# cluster's), though vacuum could remove them: the finding names it.
$node->safe_psql('shop', 'UPDATE items SET id = id + 10000 WHERE id > 3000');
$holder{shop}[0]->quit;
delete $holder{shop};
$node->safe_psql('shop', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT sum(v) FROM items WHERE id BETWEEN 3001 AND 5000;
	SELECT sum(v) FROM items WHERE id BETWEEN 3001 AND 5000;
	SELECT sum(v) FROM items WHERE id BETWEEN 3001 AND 5000;
});
my $index = $node->safe_psql('postgres', q{
	SELECT severity || ' | ' || evidence || ' | ' || advice || ' | '
		   || coalesce(details -> 'marking_held_by' ->> 'pid', 'none')
	  FROM pg_contention_findings
	 WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%items%BETWEEN%'});
note("index finding read from postgres: $index");
if ($version < 140000)
{
	like($index, qr/^warning \| .*nothing in database shop holds the xmin horizon back: vacuum has not removed them yet.*the scans cannot mark them dead while pid $holder{analytics}[1] .*in database analytics holds its snapshot .*on PostgreSQL 13 a snapshot in any database stops that/,
		'13: the index finding names the snapshot in analytics that keeps the lookups from marking the entries dead');
	like($index, qr/\| VACUUM public\.items in database shop now: vacuum removes them although pid $holder{analytics}[1] .* \| $holder{analytics}[1]$/,
		'13: and advises vacuuming shop\'s table, which that snapshot does not stop');
}
else
{
	like($index, qr/^info \| resolved at .* \| none$/,
		'14 and later: the snapshot in analytics holds nothing in shop; the lookups marked the entries dead themselves');
	unlike($index, qr/analytics/, '14 and later: analytics is not named');
}

$_->[0]->quit for values %holder;

# ---- A transaction with an XID in analytics holds back shop (issue 59,
# item 1): every snapshot taken in shop has an xmin at or before that XID,
# so shop's lookups cannot mark the entries dead and shop's vacuum stops
# at it whenever a session of shop has a snapshot.  Only a snapshot
# without an XID is confined to its own database (above).
$node->safe_psql('shop', q{
	CREATE TABLE orders (id int PRIMARY KEY, v int);
	INSERT INTO orders SELECT i, i FROM generate_series(1, 5000) AS i;
	VACUUM (ANALYZE) orders;
});
my $writer = $node->background_psql('analytics');
my $writer_pid = $writer->query_safe('SELECT pg_backend_pid()');
my $writer_xid = $writer->query_safe('BEGIN; SELECT txid_current()');
$writer_xid =~ s/\s+//g;
$node->safe_psql('shop', 'UPDATE orders SET id = id + 10000 WHERE id > 3000');
my $lookups = q{SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT sum(v) FROM orders WHERE id BETWEEN 3001 AND 5000;} x 3;
$node->safe_psql('shop', $lookups);
# Ground truth: VACUUM in shop beside a reader of shop (a web session's
# snapshot) removes none, its cutoff at analytics' XID.
my $reader = $node->background_psql('shop');
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class');
my ($ret, $out, $err) = $node->psql('shop', 'VACUUM (VERBOSE) orders');
like($err, qr/(?:removable cutoff|oldest xmin): $writer_xid\b/,
	"VACUUM VERBOSE in shop: its removable cutoff is analytics' XID $writer_xid");
like($err, qr/2000 (?:are dead but not yet removable|dead row versions cannot be removed yet)/,
	'VACUUM VERBOSE in shop: the 2,000 dead versions are not yet removable');
$node->safe_psql('shop', $lookups);
for my $reader_db (qw(postgres shop))
{
	my $found = $node->safe_psql($reader_db, q{
		SELECT severity || ' | ' || evidence || ' | ' || advice || ' | ' || coalesce(details -> 'holder' ->> 'pid', 'none')
		  FROM pg_contention_findings
		 WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%orders%BETWEEN%'});
	note("read from $reader_db: $found");
	like($found, qr/^(warning|critical) \| .* \| $writer_pid$/,
		"read from $reader_db: the index finding is held by analytics' writer, pid $writer_pid");
	like($found, qr/while pid $writer_pid \(application [^)]*\) in database analytics holds the xmin horizon/,
		"read from $reader_db: it names the writer's database");
	unlike($found, qr/vacuum has not removed them yet|VACUUM public\.orders[^;]* now/,
		"read from $reader_db: it never says vacuum has not removed them, nor advises a VACUUM now that removes nothing");
	ok($node->poll_query_until($reader_db, qq{
		SELECT severity IN ('warning', 'critical') FROM pg_contention_findings
		 WHERE problem = 'xmin_horizon_held' AND details ->> 'pid' = '$writer_pid'}),
		"read from $reader_db: the writer's xmin_horizon_held finding pays for shop's lookups (warning or above)");
}
# The fix: the writer commits; shop's next lookup marks the entries dead.
$writer->query_safe('COMMIT');
$writer->quit;
$reader->quit;
$node->safe_psql('shop', $lookups);
($ret, $out, $err) = $node->psql('shop', 'VACUUM (VERBOSE) orders');
like($err, qr/\b0 (?:are dead but not yet removable|dead row versions cannot be removed yet)/,
	'after the COMMIT, VACUUM VERBOSE in shop: none is dead but not yet removable');
unlike($node->safe_psql('postgres', q{
	SELECT severity || ' ' || coalesce(details -> 'holder' ->> 'pid', '') FROM pg_contention_findings
	 WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%orders%BETWEEN%'}), qr/^(warning|critical)/,
	'and the index finding is no longer at warning');

# ---- One answer whichever database reads it (issue 59, item 2): dead
# entries that nothing holds, visited by bitmap scans (which never mark
# them), then VACUUM in shop and no lookup since.  Read from postgres, as
# from shop, the finding is resolved by that vacuum (PostgreSQL 15 on,
# where another database's statistics can be read).
$node->safe_psql('shop', q{
	CREATE TABLE stock (id int PRIMARY KEY, v int);
	INSERT INTO stock SELECT i, i FROM generate_series(1, 5000) AS i;
	VACUUM (ANALYZE) stock;
	UPDATE stock SET id = id + 10000 WHERE id > 3000;
});
$node->safe_psql('shop', q{SET enable_seqscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off;
	SELECT sum(v) FROM stock WHERE id BETWEEN 3001 AND 5000;} x 3);
my $stock = q{SELECT severity || ' | ' || advice FROM pg_contention_findings
	 WHERE problem = 'dead_tuple_index_scan' AND subject LIKE '%stock%BETWEEN%'};
like($node->safe_psql('postgres', $stock), qr/^warning \| VACUUM public\.stock in database shop now/,
	'read from postgres: nothing holds the dead entries of shop\'s stock: VACUUM it now');
$node->safe_psql('shop', 'VACUUM stock');
SKIP:
{
	skip 'another database\'s statistics are read from PostgreSQL 15 on', 2 if $version < 150000;
	for my $reader_db (qw(shop postgres))
	{
		like($node->safe_psql($reader_db, $stock), qr/^info \|/,
			"read from $reader_db after shop's VACUUM (no lookup since): info, as vacuum removed them");
	}
}
done_testing();
