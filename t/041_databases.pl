# Blame per database: a holder of the xmin horizon holds back cleanup in
# the databases the server computes its horizon for (PostgreSQL 13: every
# database; 14 and later: its own), and its finding counts the dead tuples
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
done_testing();
