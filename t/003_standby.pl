# Hot standby: the views work there, and a query on the standby is counted
# as a standby call, on a suboverflowed snapshot while a transaction on the
# primary has overflowed its subtransaction cache (the standby learns it
# from the primary's XID-assignment records).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_contention'");
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
	qr/^a transaction on the primary .*\| In the last 5 min on this standby: [0-9,]+ executions? of \d+ statements? ran on suboverflowed snapshots/,
	'standby: the finding names the primary\'s overflow and counts the suboverflowed executions here');
is($standby->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_findings WHERE problem = 'subtrans_slru_contention'"),
	'0', 'standby: one query on a suboverflowed snapshot is no pg_subtrans contention');

$bg->query_safe('COMMIT');
$bg->quit;
done_testing();
