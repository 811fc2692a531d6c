# What a pager needs: pg_contention check exits 0 on every healthy
# workload, idle connected clients are not active backends, and every
# severity boundary of the findings holds exactly where it is documented.
#
# The healthy server runs, at once and beside pg_stat_statements: TPC-B
# through a PL/pgSQL function with an EXCEPTION block per call (a
# subtransaction per call, never an overflow), a SKIP LOCKED job queue
# (producers and consumers, no long transaction: autovacuum and the
# consumers' own scans keep the dead entries away), monitoring queries
# (pg_stat_activity, pg_stat_statements, the findings themselves), six
# idle connected clients, and pg_contention top and check while it runs.
#
# The boundaries: each threshold set to exactly the measured figure turns
# the finding on (every comparison is >=), one step above turns it off.
# The figures are integers or exact fractions (a dead-entry count, an xid
# age, subtransaction counts), so no rounding decides.  Nothing is timed.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('paging');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_stat_statements, pg_contention'
max_prepared_transactions = 2
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE EXTENSION pg_stat_statements;
	CREATE TABLE jobs (id bigserial PRIMARY KEY, payload text NOT NULL);
});
$node->command_ok([ 'pgbench', '-i', '-s', '2', '-q', $node->connstr('postgres') ], 'pgbench tables');
$node->safe_psql('postgres', q{
CREATE FUNCTION tpcb(p_aid integer, p_bid integer, p_tid integer, p_delta integer)
RETURNS integer LANGUAGE plpgsql AS $f$
DECLARE
	balance integer;
BEGIN
	BEGIN
		UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
		SELECT abalance INTO balance FROM pgbench_accounts WHERE aid = p_aid;
		UPDATE pgbench_tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
		UPDATE pgbench_branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
		INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
			VALUES (p_tid, p_bid, p_aid, p_delta, CURRENT_TIMESTAMP);
	EXCEPTION WHEN serialization_failure OR deadlock_detected THEN
		RETURN NULL;
	END;
	RETURN balance;
END
$f$;
});

sub client
{
	my @args = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_contention', @args, '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
		'<', \undef, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

sub above_info
{
	my ($settings) = @_;
	$settings //= '';
	return $node->safe_psql('postgres', "$settings SELECT coalesce(string_agg(problem || ' ' || severity
		|| ': ' || subject || ' / ' || evidence, E'\\n'), '') FROM pg_contention_findings WHERE severity <> 'info'");
}

# ---- The healthy server.
my @idle;
for my $i (1 .. 6)
{
	my $session = $node->background_psql('postgres');
	$session->query_safe("SET application_name = 'idle$i'; SELECT 1");
	push @idle, $session;
}

my %scripts = (
	'tpcb_exception@6' => "\\set aid random(1, 100000 * :scale)\n\\set bid random(1, :scale)\n"
	  . "\\set tid random(1, 10 * :scale)\n\\set delta random(-5000, 5000)\n"
	  . "SELECT tpcb(:aid, :bid, :tid, :delta);\n",
	'queue_producer@2' => "INSERT INTO jobs (payload) SELECT 'job ' || g FROM generate_series(1, 3) AS g;\n",
	'queue_consumer@5' => "DELETE FROM jobs WHERE id = (SELECT id FROM jobs ORDER BY id "
	  . "FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, payload;\n",
	'monitoring@1' => "SELECT count(*) FROM pg_stat_activity WHERE state <> 'idle';\n"
	  . "SELECT queryid, calls FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 5;\n"
	  . "SELECT problem, severity FROM pg_contention_findings;\n");
my $tmp = PostgreSQL::Test::Utils::tempdir;
my @script_args;
for my $name (sort keys %scripts)
{
	my ($file, $weight) = split /@/, $name;
	PostgreSQL::Test::Utils::append_to_file("$tmp/$file.sql", $scripts{$name});
	push @script_args, '-f', "$tmp/$file.sql\@$weight";
}
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-t', '1500', @script_args, $node->connstr('postgres') ],
	'<', \undef, '>', \$bench_out, '2>', \$bench_err);
# The client beside it, as a DBA would watch.
my ($rc_top) = client('top', '-n', '1');
is($rc_top, 0, 'top runs beside the workload');
my ($rc_during, $out_during) = client('check', '--live');
$bench->finish;
is($? >> 8, 0, 'the healthy mixed workload ran') or diag($bench_err);
like($bench_out, qr/number of transactions actually processed: 6000\/6000/, 'every transaction ran');
is($rc_during, 0, 'check during the workload exits 0') or diag($out_during);

my ($rc, $out) = client('check', '--live');
is($rc, 0, 'check after the workload exits 0') or diag($out);
is(above_info(), '', 'healthy: no finding above info') or diag(above_info());
# The silence is not blindness: each part of the workload was measured.
ok($node->safe_psql('postgres',
	"SELECT sum(calls) FROM pg_contention_statements WHERE query LIKE 'UPDATE pgbench_accounts%'") > 0,
	'the function\'s statements were counted');
ok($node->safe_psql('postgres',
	"SELECT sum(scans) FROM pg_contention_index_scans WHERE indexrelname = 'jobs_pkey'") > 0,
	'the queue\'s index scans were measured');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '0',
	'one subtransaction per call never overflows');

# Idle connected clients wait in ClientRead: not active.  One backend
# sleeps while the six sit idle; the seconds wholly inside its sleep count
# one active backend per tick (the bug counted seven).  It sleeps until two
# such seconds are recorded (a fixed sleep could end first on a busy
# machine), then is cancelled: every completed second after its start is
# inside the sleep.
my $sleeper = $node->background_psql('postgres');
$sleeper->query_safe("SET application_name = 'sleeper'");
my $sleeper_pid = $sleeper->query_safe('SELECT pg_backend_pid()');
$sleeper->query_until(qr/sleeping/, "\\echo sleeping\nSELECT pg_sleep(600);\n");
$node->poll_query_until('postgres',
	"SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $sleeper_pid")
  or die 'the sleeper does not sleep';
my $from = $node->safe_psql('postgres', "SELECT query_start FROM pg_stat_activity WHERE pid = $sleeper_pid");
my $seconds = "FROM pg_contention_history WHERE bucket_start >= '$from'::timestamptz + interval '1 second'"
  . " AND ticks > 0";
ok($node->poll_query_until('postgres', "SELECT count(*) >= 2 $seconds"), 'seconds inside the sleep were sampled');
my $active = $node->safe_psql('postgres', "SELECT round((sum(avg_active_backends * ticks) / sum(ticks))::numeric, 2) $seconds");
ok($active >= 0.9 && $active < 2, "one active backend, six idle connected clients: $active active per tick");
# Its psql stops at the cancelled statement (ON_ERROR_STOP): ended, not quit.
$node->safe_psql('postgres', "SELECT pg_terminate_backend($sleeper_pid)");
$sleeper->{run}->kill_kill;
$_->quit for @idle;

# ---- Boundaries.  Autovacuum would assign XIDs (ANALYZE) and vacuum the
# table under test: off from here.
$node->safe_psql('postgres', 'ALTER SYSTEM SET autovacuum = off; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', "SELECT current_setting('autovacuum') = 'off'");
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');

# The index finding: one execution that visits exactly 500 dead entries
# among 1,000 (a ratio of exactly one half), behind a holder.
my $holder = $node->background_psql('postgres');
$holder->query_safe("SET application_name = 'holder'; BEGIN; SELECT txid_current()");
$node->safe_psql('postgres', q{
	CREATE TABLE bounds (id bigserial PRIMARY KEY, k integer NOT NULL, note text);
	CREATE INDEX bounds_k ON bounds (k);
	INSERT INTO bounds (k, note) SELECT g % 100, 'filler' FROM generate_series(1, 5000) AS g;
	ANALYZE bounds;
	INSERT INTO bounds (k, note) SELECT 1000, 'live' FROM generate_series(1, 500);
	INSERT INTO bounds (k, note) SELECT 1000, 'gone' FROM generate_series(1, 500);
	DELETE FROM bounds WHERE note = 'gone';
});
$node->safe_psql('postgres', 'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT note FROM bounds WHERE k = 1000');
is($node->safe_psql('postgres',
	"SELECT scans || ' ' || entries_read || ' ' || dead_visits FROM pg_contention_index_scans WHERE indexrelname = 'bounds_k'"),
	'1 1000 500', 'the lookup: one execution, 1,000 entries read, 500 dead');

sub index_severity
{
	my ($warning, $critical, $ratio) = @_;
	return $node->safe_psql('postgres',
		"SET pg_contention.dead_visits_warning = $warning; SET pg_contention.dead_visits_critical = $critical;"
		  . " SET pg_contention.dead_ratio_warning = $ratio;"
		  . " SELECT coalesce(string_agg(severity, ','), 'none') FROM pg_contention_findings"
		  . " WHERE problem = 'dead_tuple_index_scan' AND subject LIKE 'index public.bounds_k %'");
}
is(index_severity(500, 100000, 0.5), 'warning', 'dead entries at the warning bar: warning');
is(index_severity(501, 100000, 0.5), 'none', 'one below the warning bar: no finding');
is(index_severity(100, 500, 0.5), 'critical', 'at the critical bar: critical');
is(index_severity(100, 501, 0.5), 'warning', 'one below the critical bar: warning');
is(index_severity(100, 100000, 0.501), 'none', 'a ratio (exactly one half) below the ratio bar: no finding');

# The horizon finding: a prepared transaction's xid age against the
# critical xid age.  Nothing assigns XIDs meanwhile (autovacuum is off and
# reading the findings assigns none), so the age stays put.
$holder->query_safe('COMMIT');
$holder->quit;
$node->safe_psql('postgres', "BEGIN; INSERT INTO bounds (k) VALUES (-1); PREPARE TRANSACTION 'bound'");
$node->safe_psql('postgres', 'SELECT txid_current()') for 1 .. 20;
my $age = $node->safe_psql('postgres', "SELECT age(transaction) FROM pg_prepared_xacts WHERE gid = 'bound'");
ok($age >= 20, "the prepared transaction's xmin is $age transactions old");

sub horizon_severity
{
	my ($xid_age) = @_;
	return $node->safe_psql('postgres',
		"SET pg_contention.horizon_min_age = 0; SET pg_contention.horizon_critical_age = '500h';"
		  . " SET pg_contention.horizon_critical_xid_age = $xid_age;"
		  . " SELECT coalesce(string_agg(severity, ','), 'none') FROM pg_contention_findings"
		  . " WHERE problem = 'xmin_horizon_held'");
}
is(horizon_severity($age), 'critical', 'xid age at the critical bar: critical');
is(horizon_severity($age + 1), 'warning', 'one transaction younger than the bar: warning');
is($node->safe_psql('postgres', "SELECT age(transaction) FROM pg_prepared_xacts WHERE gid = 'bound'"),
	$age, 'the age did not move while the findings were read');
is($node->safe_psql('postgres',
	"SET pg_contention.horizon_min_age = '500h'; SELECT count(*) FROM pg_contention_findings WHERE problem = 'xmin_horizon_held'"),
	'0', 'held for less than the minimum age: no horizon finding');
$node->safe_psql('postgres', "ROLLBACK PREPARED 'bound'");

# Near overflow: more than subxact_warn_level subtransaction XIDs cached.
# With 48 (the level) the execution is not near; with 49 it is.
sub savepoints
{
	my ($n) = @_;
	my $sql = "BEGIN;\n";
	$sql .= "SAVEPOINT s$_; INSERT INTO bounds (k) VALUES ($_);\n" for 1 .. $n;
	# Two statement shapes, two query ids.
	my $probe = $n == 48 ? 'SELECT 1 AS near48' : 'SELECT 1, 2 AS near49';
	return $sql . "$probe;\nROLLBACK;\n";
}
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
$node->safe_psql('postgres', savepoints(48));
$node->safe_psql('postgres', savepoints(49));
is($node->safe_psql('postgres',
	"SELECT string_agg(substring(query FROM 'near4.') || ': ' || max_subxacts || ' ' || near_overflow_calls, ', '"
	  . " ORDER BY query) FROM pg_contention_statements WHERE query LIKE '%near4_'"),
	'near48: 48 0, near49: 49 1',
	'at the warn level an execution is not near overflow; one more and it is');
like($node->safe_psql('postgres',
	"SELECT evidence FROM pg_contention_findings WHERE problem = 'subxact_near_overflow'"),
	qr/\(at most 49 of 64\)/, 'the near-overflow finding reports the one above the level');

$node->stop;
done_testing();
