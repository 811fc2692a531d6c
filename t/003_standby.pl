# Hot standby: the views work there, and a query on the standby is counted
# as a standby call, on a suboverflowed snapshot while a transaction on the
# primary has overflowed its subtransaction cache (the standby learns it
# from the primary's XID-assignment records).  With hot_standby_feedback,
# a query on the standby holds the primary's horizon: both servers'
# findings say so.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'\npg_contention.overflow_ended_after = '1h'");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE TABLE r (id int)');
$primary->backup('b');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'standby is in recovery');
is($standby->safe_psql('postgres',
	'SELECT count(*) FROM pg_contention_subxact WHERE pid = pg_backend_pid()'),
	'1', 'live view works on the standby');
ok($standby->poll_query_until('postgres',
	'SELECT running AND ticks > 0 FROM pg_contention_sampler_status'),
	'the sampler runs on the standby');

my $probe = 'SELECT count(*) AS standby_probe FROM r';
$standby->safe_psql('postgres', $probe);
is($standby->safe_psql('postgres',
	"SELECT calls, standby_calls, suboverflowed_calls FROM pg_contention_statements WHERE query = '$probe'"),
	'1|1|0', 'a standby query is a standby call, not suboverflowed');

# The primary overflows and stays open; its XID assignments reach the standby.
my $bg = $primary->background_psql('postgres');
$bg->query_safe("BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO r VALUES ($_);\n" } 1 .. 70));
$primary->safe_psql('postgres', 'CREATE TABLE marker (id int)');
$primary->wait_for_catchup($standby);

$standby->safe_psql('postgres', $probe);
is($standby->safe_psql('postgres',
	"SELECT calls, standby_calls, suboverflowed_calls FROM pg_contention_statements WHERE query = '$probe'"),
	'2|2|1', 'while the primary is overflowed, the standby query runs on a suboverflowed snapshot');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'1', 'the primary recorded the overflow event');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'0', 'the standby records none of its own');

ok($standby->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_history WHERE ticks > 0"),
	'the standby keeps its history');

# The findings: the primary names its backend; the standby, which has no
# overflowed backend of its own, names the primary's overflow it sees.
my $bg_pid = $primary->safe_psql('postgres',
	"SELECT pid FROM pg_contention_subxact WHERE subxact_overflowed");
like($primary->safe_psql('postgres',
	"SELECT severity || ' ' || subject FROM pg_contention_findings WHERE problem = 'subxact_overflow'"),
	qr/^info statement INSERT INTO r VALUES \(\$1\).* in pid $bg_pid \(/,
	'primary: the overflow finding names the statement and the backend (info: it costs nothing)');
like($standby->safe_psql('postgres',
	"SELECT subject || ' | ' || evidence FROM pg_contention_findings WHERE problem = 'subxact_overflow'"),
	qr/^a transaction on the primary .*\| From \d\d:\d\d:\d\d to \d\d:\d\d:\d\d on this standby: [0-9,]+ executions? of \d+ statements? ran on suboverflowed snapshots/,
	'standby: the finding names the primary\'s overflow and counts the suboverflowed executions here');
is($standby->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_findings WHERE problem = 'subtrans_slru_contention'"),
	'0', 'standby: one query on a suboverflowed snapshot is no pg_subtrans contention');

$bg->query_safe('COMMIT');
$bg->quit;

# hot_standby_feedback: a long REPEATABLE READ transaction on the standby
# holds back the primary's horizon, and the primary keeps the dead tuples
# of the updates that follow.  The standby's own counts show none: its
# finding says what the primary keeps instead, and the primary's finding
# names the standby whose feedback holds it.
$standby->append_conf('postgresql.conf', "hot_standby_feedback = on\nwal_receiver_status_interval = 1\n");
$standby->reload;
my $report = $standby->background_psql('postgres');
my $report_pid = $report->query_safe('SELECT pg_backend_pid()');
$report->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM r;');
my $report_xmin = $standby->safe_psql('postgres',
	"SELECT backend_xmin FROM pg_stat_activity WHERE pid = $report_pid");
ok($primary->poll_query_until('postgres',
	"SELECT backend_xmin::text::bigint <= $report_xmin FROM pg_stat_replication"),
	'the standby\'s feedback holds the primary\'s horizon at the report\'s xmin or before');
$primary->safe_psql('postgres', "INSERT INTO r SELECT generate_series(1, 1000);\n"
	  . join('', map { "UPDATE r SET id = id + 1;\n" } 1 .. 20));
$primary->wait_for_catchup($standby);
$primary->safe_psql('postgres', 'VACUUM r');
ok($primary->poll_query_until('postgres',
	"SELECT n_dead_tup >= 20000 FROM pg_stat_user_tables WHERE relname = 'r'"),
	'the primary keeps the updates\' dead tuples');

my $all = 'SET pg_contention.horizon_min_age = 0; SET pg_contention.horizon_min_xid_age = 0;';
my $on_standby = $standby->safe_psql('postgres',
	"$all SELECT evidence || ' | ' || coalesce(details ->> 'dead_tuples', 'null') FROM pg_contention_findings
	  WHERE problem = 'xmin_horizon_held' AND details ->> 'holder' = '$report_pid'");
like($on_standby,
	qr/^Its xmin is [0-9,]+ transactions? old, held for .*; this is a standby with hot_standby_feedback on: the feedback carries this xmin to the primary, which cannot remove the row versions deleted or updated by the [0-9,]+ transactions since \(on the primary: n_dead_tup in pg_stat_user_tables, and backend_xmin of this standby's walsender in pg_stat_replication/,
	'standby: the finding says the feedback holds the primary\'s horizon and where to see what the primary keeps');
note("standby: $on_standby");
unlike($on_standby, qr/tables of database \w+ hold/, 'standby: its own dead tuple count is not quoted');
like($on_standby, qr/What it costs is measured on the primary, not here: pg_contention_findings there names this standby's feedback/,
	'standby: it says where its cost is measured, not that nothing pays');
like($on_standby, qr/\| null$/, 'standby: details carry no dead tuple count');

my $app = $primary->safe_psql('postgres', 'SELECT application_name FROM pg_stat_replication');
my $on_primary = $primary->safe_psql('postgres',
	"$all SELECT subject || ' | ' || evidence || ' | ' || advice FROM pg_contention_findings
	  WHERE problem = 'xmin_horizon_held' AND details ->> 'kind' = 'standby feedback'");
note("primary: $on_primary");
like($on_primary,
	qr/^hot_standby_feedback of a standby \(application \Q$app\E, (client [^,]+, )?walsender pid \d+\) \| Its xmin is [0-9,]+ transactions? old, held for [^;]+; queries on that standby hold it through hot_standby_feedback .*; the tables of database postgres hold [0-9,]+ dead tuples, [0-9,]+ of them in \d+ tables? due for autovacuum\. \| A query on the standby \(application \Q$app\E\) holds it/,
	'primary: the finding names the standby whose queries hold the horizon through its feedback');

# Without feedback the standby's query holds nothing on the primary.
$standby->append_conf('postgresql.conf', "hot_standby_feedback = off\n");
$standby->reload;
ok($standby->poll_query_until('postgres', "SELECT current_setting('hot_standby_feedback') = 'off'"),
	'hot_standby_feedback is off on the standby');
like($standby->safe_psql('postgres',
	"$all SELECT evidence FROM pg_contention_findings
	  WHERE problem = 'xmin_horizon_held' AND details ->> 'holder' = '$report_pid'"),
	qr/; this is a standby with hot_standby_feedback off: it does not hold back the primary's horizon/,
	'standby without feedback: the finding says the primary\'s horizon is not held');

$report->query_safe('COMMIT');
$report->quit;
done_testing();
