# The context a DBA needs (issue 23, case 8), on one server:
# - `follows` names only an older holder: a slot created while nothing
#   ran, and a REPEATABLE READ snapshot taken then, hold the next XID,
#   which a writer that starts later gets as its own; neither follows that
#   writer (a snapshot taken while the writer runs does);
# - a logical slot holds by its catalog_xmin, and the finding calls it so;
# - after a restart, the overflow finding marks the pids of the previous
#   server run instead of looking them up among today's processes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('context');
$node->init(allows_streaming => 'logical');
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE TABLE t (id int); CREATE TABLE u (id int)');

# Every root holder is material, whatever its age.
my $all = 'SET pg_contention.horizon_min_age = 0; SET pg_contention.horizon_min_xid_age = 0;';

# Nothing runs: the slot's catalog_xmin is the next XID.
$node->safe_psql('postgres', "SELECT pg_create_logical_replication_slot('early', 'test_decoding')");
my $slot_xmin = $node->safe_psql('postgres',
	"SELECT catalog_xmin FROM pg_replication_slots WHERE slot_name = 'early'");

# Then a reader takes a snapshot while still nothing runs, then a writer
# starts and gets that XID as its own.
my $reader = $node->background_psql('postgres');
my $reader_pid = $reader->query_safe('SELECT pg_backend_pid()');
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM t;');
my $writer = $node->background_psql('postgres');
my $writer_pid = $writer->query_safe('SELECT pg_backend_pid()');
$writer->query_safe('BEGIN; INSERT INTO t VALUES (1);');
my $writer_xid = $writer->query_safe('SELECT txid_current()');
is($writer_xid, $slot_xmin,
	'the writer that started after the slot got the XID the slot holds (the case reproduced)');
is($node->safe_psql('postgres', "SELECT xmin FROM pg_contention_horizon WHERE holder = '$reader_pid'"),
	$writer_xid, 'so did the reader\'s snapshot, taken before the writer started');

# A follower: a snapshot taken while the writer runs.
my $follower = $node->background_psql('postgres');
my $follower_pid = $follower->query_safe('SELECT pg_backend_pid()');
$follower->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM t;');

is($node->safe_psql('postgres',
	"$all SELECT holder, coalesce(follows, '-'), blocks_cleanup FROM pg_contention_horizon
	  WHERE holder IN ('early', '$reader_pid', '$writer_pid', '$follower_pid')
	  ORDER BY holder = 'early' DESC, holder = '$reader_pid' DESC, holder = '$writer_pid' DESC"),
	join("\n", 'early|-|t', "$reader_pid|-|t", "$writer_pid|-|t", "$follower_pid|$writer_pid|f"),
	'neither the slot nor the earlier reader follows the writer that began after them; the later snapshot does');

# The slot's finding: its catalog_xmin, named as such.
my $slot_finding = $node->safe_psql('postgres',
	"$all SELECT subject || ' | ' || evidence FROM pg_contention_findings
	  WHERE problem = 'xmin_horizon_held' AND details ->> 'holder' = 'early'");
note("slot: $slot_finding");
like($slot_finding,
	qr/^replication slot early \(inactive, by its catalog_xmin: catalog rows only\) \| Its catalog_xmin is [0-9,]+ transactions? old/,
	'the logical slot\'s finding says catalog_xmin');
unlike($slot_finding, qr/\bxmin is\b/, 'and never "its xmin"');
like($node->safe_psql('postgres',
	"$all SELECT evidence FROM pg_contention_findings
	  WHERE problem = 'xmin_horizon_held' AND details ->> 'holder' = '$writer_pid'"),
	qr/^Its xmin is [0-9,]+ transactions? old, held for /,
	'a backend\'s finding says xmin');

$writer->query_safe('COMMIT');
$writer->quit;
$reader->query_safe('COMMIT');
$reader->quit;
$follower->query_safe('COMMIT');
$follower->quit;
$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('early')");

# Overflows before a restart: statement one in one backend, statement two
# in two backends.
sub overflow
{
	my ($table) = @_;
	$node->safe_psql('postgres', "BEGIN;\n"
		  . join('', map { "SAVEPOINT s$_; INSERT INTO $table VALUES ($_);\n" } 1 .. 70)
		  . "COMMIT;");
}
overflow('t');
overflow('u');
overflow('u');
my $old_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_contention_overflow_events WHERE query LIKE 'INSERT INTO t%'");
my $subjects = "SELECT string_agg(subject, E'\\n' ORDER BY subject) FROM pg_contention_findings
				 WHERE problem = 'subxact_overflow'";
like($node->safe_psql('postgres', $subjects), qr/INSERT INTO t .* in pid $old_pid \([^)]*session ended\)/,
	'before the restart: the ended session is "session ended"');

$node->restart;
my $start = $node->safe_psql('postgres',
	"SELECT to_char(greatest(pg_postmaster_start_time(), last_loaded), 'HH24:MI:SS') FROM pg_contention_info");
my $after = $node->safe_psql('postgres', $subjects);
note("after the restart:\n$after");
like($after, qr/INSERT INTO t .* in pid $old_pid \([^)]*before the restart at \Q$start\E\)/,
	'after the restart: the one backend\'s pid is marked as one of the previous server run');
like($after, qr/INSERT INTO u .* in 2 backends \([^)]*before the restart at \Q$start\E\)/,
	'so are the two backends');
unlike($after, qr/session ended|idle for|active for/,
	'no pid of the previous run is looked up among today\'s sessions');

# One more overflow of statement two, in this run: partly before.
overflow('u');
like($node->safe_psql('postgres', $subjects),
	qr/INSERT INTO u .* in [23] backends \([^)]*partly before the restart at \Q$start\E\)/,
	'a statement that overflowed in both runs is marked as partly before the restart');

# The pids to act on are this run's only; the earlier run's are apart.
my $details = "SELECT details FROM pg_contention_findings
				WHERE problem = 'subxact_overflow' AND subject LIKE '%INSERT INTO %s %%'";
my $new_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_contention_overflow_events WHERE query LIKE 'INSERT INTO u%'
	  ORDER BY event_time DESC LIMIT 1");
is($node->safe_psql('postgres', "SELECT (d -> 'pids')::text || ' ' || (d -> 'earlier_run_pids')::text
	FROM (" . sprintf($details, 't') . ") AS f(d)"),
	"[] [$old_pid]", 'a culprit of the previous run only: no pid to act on, its pid among the earlier run\'s');
my ($pids, $earlier) = split / /, $node->safe_psql('postgres',
	"SELECT (d -> 'pids')::text || ' ' || jsonb_array_length(d -> 'earlier_run_pids')
	   FROM (" . sprintf($details, 'u') . ") AS f(d)");
is("$pids $earlier", "[$new_pid] 2", 'a culprit of both runs: this run\'s pid to act on, the two earlier ones apart');
like($node->safe_psql('postgres', "SELECT pg_contention_incident_resolution('subxact_overflow',
	  (" . sprintf($details, 't') . "), now() - interval '1 hour', '[]')"),
	qr/^the overflowing sessions, of the previous server run, ended with its restart$/,
	'an incident whose culprits were all of the previous run: resolved by the restart');

done_testing();
