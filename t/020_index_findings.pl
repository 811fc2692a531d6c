# The index findings judge the worst executions as well as the average,
# describe now, and see HOT chains (issue 23, items 2, 3 and 7), with real
# sessions: pgbench clients, a REPEATABLE READ report holding the horizon.
#
# (a) 20 lookups of a key with 3,000 dead versions among 10,000 lookups of
#     clean keys: the average (6) is far below the threshold, the bad
#     executions are a warning that says "20 of 10,020 executions" and the
#     worst.
# (b) The fix: the report ends and the key is looked up twice (the first
#     lookup marks the entries dead, the second skips them), or VACUUM
#     runs: the finding becomes info "resolved at ...", without autovacuum
#     advice, and `pg_contention check` exits 0.
# (c) A row updated 10,000 times by HOT behind the report: its lookup reads
#     a chain of versions per index entry (about 170 buffers for one row,
#     under 1,000 dead entries): hot_chain_scan names the table and the
#     holder; a second table's hot row behind the same holder makes it
#     one finding of two indexes ("and 1 more index"); lookups of its
#     neighbours, and the same workload without a holder, give nothing.
# Counts and texts only: no timing is asserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client);

my $node = PostgreSQL::Test::Cluster->new('index_findings');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE items (id serial PRIMARY KEY, k integer NOT NULL, v integer NOT NULL);
	CREATE INDEX items_k ON items (k);
	CREATE INDEX items_v ON items (v);
	INSERT INTO items (k, v) SELECT g, 0 FROM generate_series(1, 10000) AS g;
	CREATE TABLE hot (k integer PRIMARY KEY, v integer NOT NULL, pad text);
	INSERT INTO hot SELECT g, 0, repeat('x', 100) FROM generate_series(1, 10000) AS g;
	CREATE TABLE hot2 (k integer PRIMARY KEY, v integer NOT NULL, pad text);
	INSERT INTO hot2 SELECT g, 0, repeat('x', 100) FROM generate_series(1, 10000) AS g;
});
$node->safe_psql('postgres', 'VACUUM (ANALYZE) items');
$node->safe_psql('postgres', 'VACUUM (ANALYZE) hot');
$node->safe_psql('postgres', 'VACUUM (ANALYZE) hot2');

sub finding
{
	my ($problem, $column) = @_;
	return $node->safe_psql('postgres',
		"SELECT $column FROM pg_contention_findings WHERE problem = '$problem'");
}

sub start_over
{
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
}

# pgbench with a script: each run's file gets a name of its own.
my $runs = 0;
sub bench
{
	my ($options, $processed, $name, $script) = @_;
	my ($file, $text) = %$script;
	$runs++;
	$node->pgbench($options, 0, [qr{processed: \Q$processed\E}], [qr{^$}], $name,
		{ "$file$runs" => $text });
}

sub check
{
	my ($rc, $out) = run_client($node, 'check', '--live');
	return ($rc, $out);
}

# A report that holds the xmin horizon: its snapshot is taken.
sub start_report
{
	my $s = $node->background_psql('postgres');
	$s->query_safe("SET application_name = 'report'; BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM items");
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$pid =~ s/\s+//g;
	return ($s, $pid);
}

# The lookups: one statement text ("SELECT v FROM items WHERE k = $1",
# prepared), clean keys or the bad one.
my $lookup = "SELECT v FROM items WHERE k = :key;\n";
my %clean = ('clean' => "\\set key random(100, 10000)\n$lookup");
my %bad = ('bad' => "\\set key 42\n$lookup");
my %update = ('update' => "UPDATE items SET v = v + 1 WHERE k = 42;\n");

# ---- (a) 20 bad executions among 10,000 clean ones.
my ($report, $report_pid) = start_report();
# 3,000 updates of key 42, each a new index entry (v is indexed: not HOT).
bench('-n -M prepared -t 3000', '3000/3000', 'update key 42 3,000 times', \%update);
start_over();
bench('-n -M prepared -c 2 -j 2 -t 5000', '10000/10000', '10,000 lookups of clean keys', \%clean);
bench('-n -M prepared -t 20', '20/20', '20 lookups of key 42', \%bad);

is($node->safe_psql('postgres', q{
	SELECT bad_scans || ' ' || scans || ' ' || worst_dead_visits || ' ' || worst_entries_read || ' ' || (worst_rows = 1)
	  FROM pg_contention_recent(300) WHERE indexrelid = 'items_k'::regclass}),
	'20 10020 3000 3001 true', 'pg_contention_recent: 20 bad executions, the worst with its entries and row');
# statement_rows and index_rows: each kind alone, and the two make the whole.
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FILTER (WHERE indexrelid IS NULL) || ' statement rows, '
				   || count(*) FILTER (WHERE indexrelid = 'items_k'::regclass) || ' of items_k, '
				   || count(*) FILTER (WHERE query = 'SELECT v FROM items WHERE k = $1') || ' of the lookup'
			  FROM pg_contention_recent(300, false, false, false, true)) || '; '
		   || (SELECT count(*) FILTER (WHERE indexrelid IS NOT NULL) || ' index rows, '
					  || count(*) FILTER (WHERE query = 'SELECT v FROM items WHERE k = $1') || ' of the lookup'
				 FROM pg_contention_recent(300, false, false, true, false)) || '; '
		   || ((SELECT count(*) FROM pg_contention_recent(300, false, false, true, true))
			   = (SELECT count(*) FROM pg_contention_recent(300, false, false, true, false))
				 + (SELECT count(*) FROM pg_contention_recent(300, false, false, false, true)))
		   || '; ' || (SELECT count(*) FROM pg_contention_recent(300, false, false, false, false))}),
	'0 statement rows, 1 of items_k, 1 of the lookup; 0 index rows, 1 of the lookup; true; 0',
	'pg_contention_recent: index_rows alone, statement_rows alone, both the whole, neither nothing');
is(finding('dead_tuple_index_scan', 'count(*)'), '1', 'the bad executions make a finding although the average is 6');
is(finding('dead_tuple_index_scan', 'severity'), 'warning', 'a warning');
like(finding('dead_tuple_index_scan', 'subject'),
	qr/^index public\.items_k scanned by SELECT v FROM items WHERE k = \$1 \(query id -?\d+\)$/,
	'the subject names the index and the statement');
like(finding('dead_tuple_index_scan', 'evidence'),
	qr/^20 of 10,020 executions from \d\d:\d\d:\d\d to \d\d:\d\d:\d\d visited 3,000 dead index entries each, the worst 3,000 at \d\d:\d\d:\d\d reading 3,001 entries and [1-9][0-9,]* buffers \(the worst execution ran with \$1 = '42'\); the average is 6 over 10,020 measured executions; vacuum cannot remove them while pid $report_pid \(application report\) holds the xmin horizon/,
	'the evidence: how many of all executions were bad, the worst, the average, the holder');
is(finding('dead_tuple_index_scan', "(details ->> 'bad_executions') || ' ' || (details ->> 'calls')"), '20 10020',
	'details: bad executions and calls');
like(finding('dead_tuple_index_scan', 'advice'),
	qr/^End what holds the horizon \(pid $report_pid \(application report\)\), then VACUUM public\.items;/,
	'the advice names the holder');
my ($rc) = check();
is($rc, 1, 'check exits 1 (warning)');
# A near miss: the clean lookups alone are no finding.
is($node->safe_psql('postgres', q{
	SET pg_contention.dead_visits_warning = 3001;
	SELECT count(*) FROM pg_contention_rule_dead_tuple_index_scan()}), '0',
	'below the per-execution threshold: no finding');
is($node->safe_psql('postgres', q{SELECT worst_literals FROM pg_contention_index_scans
	WHERE indexrelname = 'items_k'}), q{$1 = '42'},
	'pg_contention_index_scans: the worst execution\'s bound parameter (not the first one seen)');

# ---- (b) The fix: the report ends, the key is looked up twice.
$report->query_safe('COMMIT');
$report->quit;
bench('-n -M prepared -t 1', '1/1', 'a lookup of key 42 after the fix', \%bad);
is(finding('dead_tuple_index_scan', 'severity'), 'warning',
	'the first lookup after the fix still visited them: still a warning');
like(finding('dead_tuple_index_scan', 'evidence'),
	qr/; nothing holds the xmin horizon back: vacuum has not removed them yet \(public\.items: [0-9,]+ dead tuples, last vacuumed [^)]+\), and the most recent execution, at \d\d:\d\d:\d\d, still visited 3,000\.$/,
	'it says vacuum has not removed them yet');
bench('-n -M prepared -t 1', '1/1', 'another lookup of key 42', \%bad);
is(finding('dead_tuple_index_scan', 'severity'), 'info', 'the next lookup skipped them: info');
like(finding('dead_tuple_index_scan', 'evidence'),
	qr/^resolved at \d\d:\d\d:\d\d: nothing that was holding the xmin horizon at the last bad execution holds it now, and the executions since \d\d:\d\d:\d\d visited fewer than 1,000 dead entries \(the most recent, at \d\d:\d\d:\d\d, \d+\); 21 of 10,022 executions /,
	'resolved: what happened, and the figures');
unlike(finding('dead_tuple_index_scan', 'advice'), qr/autovacuum/, 'no autovacuum advice');
($rc) = check();
is($rc, 0, 'check exits 0 once resolved');

# The same incident again, fixed by VACUUM instead.
($report, $report_pid) = start_report();
bench('-n -M prepared -t 3000', '3000/3000', 'update key 42 3,000 times again', \%update);
start_over();
bench('-n -M prepared -t 200', '200/200', 'lookups of clean keys', \%clean);
bench('-n -M prepared -t 5', '5/5', 'lookups of key 42', \%bad);
is(finding('dead_tuple_index_scan', 'severity'), 'warning', 'again: a warning');
$report->query_safe('COMMIT');
$report->quit;
$node->safe_psql('postgres', 'VACUUM items');
# The statistics reach other sessions at once from 15 on, a moment later before.
ok($node->poll_query_until('postgres',
	"SELECT severity FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'", 'info'),
	'after VACUUM: info');
like(finding('dead_tuple_index_scan', 'evidence'),
	qr/^resolved at (\d\d:\d\d:\d\d): vacuum removed them at \1, after the last bad execution, and nothing that was holding the xmin horizon then holds it now; 5 of 205 executions /,
	'resolved by vacuum, and when');
unlike(finding('dead_tuple_index_scan', 'advice'), qr/autovacuum/, 'no autovacuum advice after VACUUM');
($rc) = check();
is($rc, 0, 'check exits 0 after VACUUM');

# ---- (c) HOT chains behind a held horizon.
my %hot_update = ('hot_update' => "UPDATE hot SET v = v + 1 WHERE k = 1;\n");
my $hot_lookup = "SELECT v FROM hot WHERE k = :key;\n";
my %hot_key = ('hot_key' => "\\set key 1\n$hot_lookup");
my %neighbours = ('neighbours' => "\\set key random(2, 10000)\n$hot_lookup");
($report, $report_pid) = start_report();
bench('-n -M prepared -t 10000', '10000/10000', 'update one row 10,000 times', \%hot_update);
start_over();
bench('-n -M prepared -t 500', '500/500', 'lookups of its neighbours', \%neighbours);
is(finding('hot_chain_scan', 'count(*)'), '0', 'its neighbours: no hot_chain_scan finding');
bench('-n -M prepared -t 3', '3/3', 'lookups of the hot row', \%hot_key);
ok($node->safe_psql('postgres', q{
	SELECT worst_buffers >= 100 AND worst_rows = 1 AND worst_dead_visits < 1000
	  FROM pg_contention_recent(300) WHERE indexrelid = 'hot_pkey'::regclass}) eq 't',
	'the worst lookup read 100 buffers or more for one row, with fewer than 1,000 dead entries');
is(finding('dead_tuple_index_scan', 'count(*)'), '0', 'too few dead entries for dead_tuple_index_scan');
# The HOT counts reach other sessions at once from 15 on, a moment later before.
ok($node->poll_query_until('postgres',
	"SELECT count(*) FROM pg_contention_findings WHERE problem = 'hot_chain_scan'", '1'),
	'the hot row\'s lookups: a hot_chain_scan finding');
is(finding('hot_chain_scan', 'severity'), 'warning', 'a warning');
like(finding('hot_chain_scan', 'subject'),
	qr/^table public\.hot: lookups by index public\.hot_pkey of SELECT v FROM hot WHERE k = \$1 \(query id -?\d+\)$/,
	'the subject names the table, the index and the statement');
like(finding('hot_chain_scan', 'evidence'),
	qr/^the worst of 503 executions from .*, read [0-9,]+ buffers for 1 row \([0-9,]+ index entries, [0-9,]+ of them to no visible version; .*\); [0-9,]+ of 10,000 updates of public\.hot were HOT \(\d+%\): each entry leads to a chain of versions that pruning cannot remove while pid $report_pid \(application report\) holds the xmin horizon/,
	'the evidence: buffers for one row, the HOT share, the holder');
like(finding('hot_chain_scan', 'advice'), qr/^End what holds the horizon \(pid $report_pid \(application report\)\)/,
	'the advice names the holder');
is(finding('hot_chain_scan', "details -> 'holder' ->> 'pid'"), $report_pid, 'details: the holder');

# A second table's hot row behind the same holder: one finding of the
# cause, the costlier index's, which names the other.
bench('-n -M prepared -t 10000', '10000/10000', 'update a row of hot2 10,000 times',
	{ 'hot2_update' => "UPDATE hot2 SET v = v + 1 WHERE k = 1;\n" });
bench('-n -M prepared -t 3', '3/3', 'lookups of hot2\'s hot row',
	{ 'hot2_key' => "\\set key 1\nSELECT v FROM hot2 WHERE k = :key;\n" });
# (the UPDATEs walk hot2's chain too: a row of their own on its index)
ok($node->poll_query_until('postgres',
	"SELECT count(DISTINCT details ->> 'indexrelid') FROM pg_contention_index_findings WHERE problem = 'hot_chain_scan'", '2'),
	'hot_chain_scan rows of two indexes in pg_contention_index_findings');
is(finding('hot_chain_scan', 'count(*)'), '1', 'one hot_chain_scan finding for their one holder');
like(finding('hot_chain_scan', 'subject'), qr/^table public\.hot2?: lookups by index .* \(and 1 more index\)$/,
	'its subject says there is one more index');
like(finding('hot_chain_scan', 'evidence'),
	qr/ The same cause touches 2 indexes; the next costliest: public\.hot2?_pkey \([0-9,]+ buffers per row\); every one in pg_contention_index_findings\.$/,
	'its evidence names the other index and its cost');
is(finding('hot_chain_scan', "details ->> 'touched_count'"), '2', 'details: touched_count 2');

# The holder ends: no finding (the next access prunes the chains).
$report->query_safe('COMMIT');
$report->quit;
is(finding('hot_chain_scan', 'count(*)'), '0', 'holder gone: no hot_chain_scan finding');

# The same workload without a holder: pruning keeps the chains short.
start_over();
bench('-n -M prepared -t 2000', '2000/2000', 'updates without a holder', \%hot_update);
bench('-n -M prepared -t 3', '3/3', 'lookups of the hot row', \%hot_key);
bench('-n -M prepared -t 3', '3/3', 'lookups of the hot row', \%hot_key);
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_findings WHERE severity <> 'info'"), '0',
	'no holder: no finding above info');
($rc) = check();
is($rc, 0, 'check exits 0 on the healthy workload');

$node->stop;
done_testing();
