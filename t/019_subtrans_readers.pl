# pg_subtrans: the readers' cost, not the writers' parent records.
#
# Every subtransaction that gets an XID records its parent in pg_subtrans
# (SubTransSetParent), and pg_stat_slru counts that as a Subtrans hit; the
# history keeps those raw accesses (subtrans_lookups) and, beside them, the
# XIDs assigned and what they cannot account for (subtrans_reader_lookups),
# and the findings judge the cost by the readers' figure.
#
# The false alarm of issue 23: a PL/pgSQL function with 60 EXCEPTION blocks
# per call, each writing (so each subtransaction gets an XID), run by two
# pgbench clients: never 65 subtransactions at once, no suboverflowed
# snapshot.  Before 1.4 the writers' parent records were counted as
# lookups, and the lookups bar made it a warning, with advice pointing at a
# subxact_overflow finding that did not exist.  The lookups bar is lowered
# to 1,000/s here, as in t/012, so that the old count would cross it on any
# machine; nothing is timed.
#
# Also: waits past their bar without any overflow (the wait bar set to 0%)
# give a subtrans_slru_contention warning whose advice does not send the
# DBA to subxact_overflow.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client history_settled);

my $node = PostgreSQL::Test::Cluster->new('readers');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
});
$node->start;

# Sixty blocks, each a subtransaction that writes; one in twenty fails
# after writing (its XID was assigned, its parent recorded) and is caught.
my $blocks = join('', map {
	"\tBEGIN\n\t\tINSERT INTO audit VALUES (client, $_);\n"
	  . ($_ % 20 == 0 ? "\t\tRAISE EXCEPTION 'block $_ fails';\n" : '')
	  . "\tEXCEPTION WHEN others THEN\n\t\tfailed := failed + 1;\n\tEND;\n"
} 1 .. 60);
$node->safe_psql('postgres', qq{
CREATE EXTENSION pg_contention;
CREATE TABLE audit (client integer, block integer);
CREATE FUNCTION sixty_blocks(client integer) RETURNS integer
LANGUAGE plpgsql AS \$f\$
DECLARE
	failed integer := 0;
BEGIN
$blocks	RETURN failed;
END
\$f\$;
});
is($node->safe_psql('postgres', 'SELECT sixty_blocks(0)'), '3', 'the function: 60 blocks, 3 of them fail');
is($node->safe_psql('postgres', 'SELECT count(*) FROM audit'), '57', 'the 57 others wrote');

sub findings
{
	my ($settings) = @_;
	return $node->safe_psql('postgres',
		"$settings SELECT coalesce(string_agg(problem || ' ' || severity, E'\\n' ORDER BY problem, severity), '')
		   FROM pg_contention_findings");
}

# The client, with the node's connection in the environment.
sub client
{
	return run_client($node, @_);
}

# ---- The false alarm: two clients, 60 writing blocks per call.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
my $start = $node->safe_psql('postgres', 'SELECT now()');
# A bucket after the reset, so the history covers the whole run.
$node->poll_query_until('postgres',
	"SELECT count(*) >= 1 FROM pg_contention_history WHERE bucket_start > '$start'")
  or die 'the history did not start';
my ($bench_out, $bench_err) = ('', '');
IPC::Run::run([ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', '5', '-f', '-',
		$node->connstr('postgres') ],
	'<', \"SELECT sixty_blocks(:client_id);\n", '>', \$bench_out, '2>', \$bench_err);
is($? >> 8, 0, 'pgbench with 60 EXCEPTION blocks per call, two clients') or diag($bench_err);
my ($calls) = $bench_out =~ /number of transactions actually processed: (\d+)/;
ok($calls && $calls > 0, 'pgbench ran the function (' . ($calls // 0) . ' calls)');
$calls //= 0;
history_settled($node);

is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'),
	'0', 'no overflow event: never 65 subtransactions at once');

my $low = 'SET pg_contention.subtrans_lookups_warning = 1000;';
my $found = findings($low);
unlike($found, qr/^subxact_overflow/m, 'no subxact_overflow finding');
unlike($found, qr/^subtrans_slru_contention (warning|critical)/m,
	'no subtrans_slru_contention above info');
is($node->safe_psql('postgres',
	"$low SELECT count(*) FROM pg_contention_findings WHERE severity <> 'info'"),
	'0', 'nothing above info') or diag($found);
{
	local $ENV{PGOPTIONS} = '-c pg_contention.subtrans_lookups_warning=1000';
	my ($rc, $out, $err) = client('check', '--live');
	is($rc, 0, 'pg_contention check exits 0') or diag($out . $err);
	unlike($out, qr/see subxact_overflow/, 'check points at no subxact_overflow finding');
}
my ($raw, $xids, $readers) = split /\|/, $node->safe_psql('postgres',
	"SELECT sum(subtrans_lookups), sum(xids_assigned), sum(subtrans_reader_lookups)
	   FROM pg_contention_history WHERE bucket_start >= '$start'");
# Each call's 60 subtransactions record their parents: 60 Subtrans hits.
cmp_ok($raw, '>=', 30 * $calls,
	"the raw Subtrans accesses count the writers' parent records ($raw for $calls calls)");
cmp_ok($xids, '>=', 60 * $calls, "the XIDs assigned: 61 per call ($xids for $calls calls)");
cmp_ok($readers * 10, '<', $raw,
	"the readers' lookups stay far below the raw accesses ($readers of $raw)");
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_history
	  WHERE subtrans_reader_lookups > subtrans_lookups OR subtrans_reader_lookups < 0"),
	'0', "every second: the readers' lookups are between 0 and the raw accesses");

like($node->safe_psql('postgres',
	"SELECT string_agg(value::text, ',' ORDER BY metric) FROM pg_contention_metrics('{sampler}')
	  WHERE metric IN ('subtrans_lookups_per_second', 'subtrans_reader_lookups_per_second')"),
	qr/^[0-9.e+-]+,[0-9.e+-]+$/, "the metrics: the raw accesses and the readers' lookups per second");

# ---- Waits past their bar without any overflow: a warning, whose advice
# names no subxact_overflow finding (there is none).
my $waits = 'SET pg_contention.subtrans_wait_warning = 0;';
my ($severity, $subject, $advice) = split /\|/, $node->safe_psql('postgres',
	"$waits SELECT severity, subject, advice FROM pg_contention_findings
	  WHERE problem = 'subtrans_slru_contention'");
is($severity, 'warning', 'the wait bar at 0%: subtrans_slru_contention is a warning');
like($subject, qr/^pg_subtrans, with no subtransaction overflow seen in the window$/,
	'its subject: no overflow seen');
unlike($advice, qr/subxact_overflow/, 'its advice points at no subxact_overflow finding');
like($advice, qr/^No subtransaction overflow was seen in the window/, 'its advice says why');
is($node->safe_psql('postgres',
	"$waits SELECT count(*) FROM pg_contention_findings WHERE problem = 'subxact_overflow'"),
	'0', 'and there is indeed no subxact_overflow finding');

$node->stop;
done_testing();
