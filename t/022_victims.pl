# Who pays: the victims of a problem in words, per application, user and
# statement; never the culprit's own statements, pg_contention's sampler
# or its client.  Real sessions: two importer sessions (psql, application
# 'importer') that overflow their subtransaction caches and hold them,
# readers through pgbench with application_name 'api', and the client's
# top, check and report run meanwhile (their queries exist, on the same
# suboverflowed snapshots).  Then an idle transaction of application
# 'reporter' holds the horizon while the api readers visit dead entries.
# Counts and texts only: no timing is asserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client finding);

my $node = PostgreSQL::Test::Cluster->new('victims');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL);
	INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	CREATE TABLE side (id integer);
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 1000, 'live' FROM generate_series(1, 20000) AS g;
});
$node->safe_psql('postgres', 'VACUUM (ANALYZE) contend');
$node->safe_psql('postgres', 'VACUUM (ANALYZE) orders');

my $tmp = PostgreSQL::Test::Utils::tempdir;

# The client, with the node's connection in the environment.
sub client
{
	delete local $ENV{PGAPPNAME};
	return run_client($node, @_);
}

# The readers: application api.
sub api_readers
{
	my ($name, $script, $transactions) = @_;
	local $ENV{PGAPPNAME} = 'api';
	$node->pgbench("-n -c 2 -j 2 -t $transactions", 0, [qr{processed}], [qr{^$}], $name,
		{ $name => $script });
}

# ---- Who pays for an overflow.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
my @importers;
for my $i (1 .. 2)
{
	my $s = $node->background_psql('postgres');
	$s->query_safe("SET application_name = 'importer'; BEGIN;\n"
		  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));
	push @importers, $s;
}
# One commit after the overflows: a snapshot skips XIDs newer than the
# latest completed one, and would not be suboverflowed without it.
$node->safe_psql('postgres', 'INSERT INTO side VALUES (0)');
# The importers go on: each sees the other overflowed, so their own
# statements run on suboverflowed snapshots too.  They are the culprit's.
$_->query_safe('SELECT count(*) FROM side WHERE id > 10') for @importers;
api_readers('readers', "SELECT count(*) FROM contend WHERE id < 500;\n", 200);

# The client's queries, on the same snapshots.
my ($rc, $out, $err) = client('check', '--live');
ok($rc <= 2, "check during the overflow runs (exit $rc)");
($rc, my $top) = client('top', '-n', '1');
is($rc, 0, 'top -n 1 runs');
my $html = "$tmp/report.html";
($rc, $out, $err) = client('report', '--html', $html);
is($rc, 0, 'report --html runs') or diag($err);
# Once more: the first reads ran before the store had the client's rows.
($rc, $top) = client('top', '-n', '1');
($rc, $out, $err) = client('report', '--html', $html);

# The statement store: a row per application.
ok($node->safe_psql('postgres',
	"SELECT suboverflowed_calls FROM pg_contention_statements
	  WHERE application_name = 'api' AND query LIKE 'SELECT count(*) FROM contend%'") > 0,
	'pg_contention_statements: the api readers\' statement, with its suboverflowed executions');
ok($node->safe_psql('postgres',
	"SELECT coalesce(sum(suboverflowed_calls), 0) FROM pg_contention_statements
	  WHERE application_name = 'importer' AND query LIKE '%FROM side%'") > 0,
	'the importers\' own statements ran on suboverflowed snapshots too (their exclusion is tested)');
ok($node->safe_psql('postgres',
	"SELECT coalesce(sum(suboverflowed_calls), 0) FROM pg_contention_statements
	  WHERE application_name = 'pg_contention'") > 0,
	'so did the client\'s (application pg_contention): their exclusion is tested');
is($node->safe_psql('postgres',
	"SELECT count(DISTINCT application_name) FROM pg_contention_statements
	  WHERE query LIKE 'SELECT count(*) FROM contend%'"), '1',
	'one application ran the readers\' statement');

# pg_contention_victims: the api readers, nobody else.
my $victims = $node->safe_psql('postgres',
	"SELECT string_agg(DISTINCT application_name, ',') FROM pg_contention_victims()
	  WHERE kind = 'suboverflowed_snapshots'");
like($victims, qr/(^|,)api(,|$)/, 'pg_contention_victims: application api paid');
unlike($victims, qr/importer|pg_contention/, 'pg_contention_victims: not the culprits, not pg_contention');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_victims()
	  WHERE query LIKE '%pg_contention%' OR query LIKE '%FROM side%' OR query LIKE '%CASE WHEN%'
		 OR query LIKE '%regexp_replace%'"),
	'0', 'pg_contention_victims: no statement of the client, of pg_contention\'s functions, or of the importers');
# pg_contention's text helpers are PL/pgSQL: their expressions run no
# statement of their own (as SQL functions, each ran one, counted).
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_contention_statements
	  WHERE query LIKE '%CASE%WHEN s < \$1 THEN round(s)%'
		 OR query LIKE '%regexp_replace(query, \$1, \$2, \$3)%'"),
	'0', 'pg_contention_duration and pg_contention_shorten run no statement of their own');

# The finding says it in words.
my $evidence = finding($node, 'subxact_overflow', 'evidence');
note("subxact_overflow evidence: $evidence");
note("top:\n$top");
like($evidence,
	qr/ Paid by application api \(user \w+: [0-9,]+ executions of SELECT count\(\*\) FROM contend WHERE id < (500|\$1) on suboverflowed snapshots\)/,
	'subxact_overflow: the evidence names the application and statement that paid');
unlike($evidence, qr/Paid by.*(importer|FROM side|pg_contention|CASE WHEN|regexp_replace)/,
	'subxact_overflow: who pays is not the culprits nor pg_contention (nor the statements of its functions)');

# top: who pays as statements and applications.
like($top, qr/^Who pays, over the last [^\n]*\(\d+\)$/m, 'top: a who-pays section');
like($top, qr/^api +\w+ +[0-9.,kM]+ suboverflowed execs +SELECT count\(\*\) FROM contend/m,
	'top: the api readers\' statement, with what it paid');
unlike($top, qr/^(importer|pg_contention)\s/m, 'top: not the culprits nor pg_contention among who pays');
like($top, qr/ api +SELECT count\(\*\) FROM contend/, 'top: the statements table has the application');

# The HTML report: who pays as a table, the details folded away.
my $page = slurp_file($html);
like($page, qr{<h3>Who pays: [^<]*</h3>\n<table>}, 'report: a who-pays table');
like($page, qr{<tr><td>api</td><td>\w+</td><td>postgres</td><td class="n">[0-9.,kM]+</td><td>executions on suboverflowed snapshots</td>},
	'report: application api paid, with the figure and what it is');
unlike($page, qr{<tr><td>(importer|pg_contention)</td><td>\w+</td><td>postgres</td><td class="n">[^<]*</td><td>(executions on|dead index)},
	'report: not the culprits nor pg_contention among who pays');
like($page, qr{<details><summary>Details \(JSON\)</summary><pre class="details">\{},
	'report: a finding\'s details JSON is folded in a <details> element');
my $open_pre = () = $page =~ /<pre class="details">/g;
my $folded = () = $page =~ /<details><summary>Details \(JSON\)<\/summary><pre class="details">/g;
is($open_pre, $folded, 'report: no details JSON outside the folds');
like($page, qr{Paid by application api \(user \w+: }, 'report: the evidence says who pays');

$_->query_safe('ROLLBACK') for @importers;
$_->quit for @importers;

# ---- Who pays for a held horizon: dead entries behind an idle transaction.
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
my $holder = $node->background_psql('postgres');
$holder->query_safe("SET application_name = 'reporter'; BEGIN; SELECT txid_current()");
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder_pid =~ s/\s+//g;
$node->safe_psql('postgres',
	"INSERT INTO orders (customer, note) SELECT 42, 'gone' FROM generate_series(1, 20000)");
$node->safe_psql('postgres', "DELETE FROM orders WHERE note = 'gone'");
# The holder reads too: its own statement visits the dead entries.
$holder->query_safe('SELECT * FROM orders WHERE customer = 42');
api_readers('lookups', "SELECT * FROM orders WHERE customer = 42;\n", 3);
client('check', '--live');

my $short = "SET pg_contention.horizon_min_age = '1s';";
$node->poll_query_until('postgres',
	"SELECT now() - xact_start > interval '1 second' FROM pg_stat_activity WHERE pid = $holder_pid")
  or die 'the holder did not age';
$evidence = finding($node, 'xmin_horizon_held', 'evidence', $short);
note("xmin_horizon_held evidence: $evidence");
like($evidence,
	qr/ Paid by application api \(user \w+: SELECT \* FROM orders WHERE customer = (42|\$1) visited [0-9,]+ dead index entries in 6 executions\)\.$/,
	'xmin_horizon_held: the evidence names the application and statement that paid');
unlike($evidence, qr/Paid by.*(reporter|pg_contention)/,
	'xmin_horizon_held: not the holder\'s own statement (the 6 executions are the readers\'), nor pg_contention\'s');
is($node->safe_psql('postgres',
	"SELECT string_agg(DISTINCT application_name, ',') FROM pg_contention_victims()
	  WHERE kind = 'dead_index_entries'"), 'api',
	'pg_contention_victims: without a culprit named, the holders\' statements are not victims either');
ok($node->safe_psql('postgres',
	"SELECT coalesce(sum(dead_visits), 0) FROM pg_contention_index_scans() WHERE application_name = 'reporter'") > 0,
	'the holder\'s own statement visited dead entries (its exclusion is tested)');

# The lookup ran under two applications (the holder's and api's): one row
# per application with by_application, and the default form sums them per
# statement, the executions' figures too: scans and bad executions added,
# the worst of either, the latest last and last bad, the clean_since of the
# one whose bad execution is the latest, the application NULL where there
# were several.  (On PostgreSQL 13 a query id is the text's hash: psql's
# text and pgbench's, which ends in ";\n", are two statements there, each
# under one application.)
is($node->safe_psql('postgres', q{
	WITH per_app AS (
		SELECT * FROM pg_contention_recent(300, true, true)
		 WHERE indexrelid IS NOT NULL AND query LIKE 'SELECT * FROM orders WHERE customer = %'),
	summed AS (
		SELECT * FROM pg_contention_recent(300, true)
		 WHERE indexrelid IS NOT NULL AND query LIKE 'SELECT * FROM orders WHERE customer = %'),
	a AS (
		SELECT query_id, count(*) AS apps, min(application_name) AS app,
			   sum(scans) AS scans, sum(dead_visits) AS dead, sum(bad_scans) AS bad_scans,
			   sum(bad_dead_visits) AS bad_dead, max(worst_dead_visits) AS worst,
			   max(last_at) AS last_at, max(last_bad_at) AS last_bad_at,
			   (array_agg(clean_since ORDER BY last_bad_at DESC NULLS LAST))[1] AS clean_since
		  FROM per_app GROUP BY query_id)
	SELECT (SELECT string_agg(DISTINCT application_name, ',') FROM per_app)
		   || '|' || ((SELECT count(*) FROM summed) = (SELECT count(*) FROM a))
		   || '|' || (SELECT bool_and(CASE WHEN a.apps > 1 THEN s.application_name IS NULL
										   ELSE s.application_name = a.app END)
						FROM summed AS s JOIN a USING (query_id))
		   || '|' || (SELECT min(bad_scans) > 0 FROM per_app)
		   || '|' || (SELECT bool_and(s.scans = a.scans AND s.dead_visits = a.dead
									  AND s.bad_scans = a.bad_scans AND s.bad_dead_visits = a.bad_dead
									  AND s.worst_dead_visits = a.worst AND s.last_at = a.last_at
									  AND s.last_bad_at = a.last_bad_at
									  AND s.clean_since IS NOT DISTINCT FROM a.clean_since)
						FROM summed AS s JOIN a USING (query_id))}),
	'api,reporter|true|true|true|true',
	'pg_contention_recent: two applications\' executions of the lookup summed, the worst, last and bad ones too');
if ($node->safe_psql('postgres', 'SHOW server_version_num') >= 140000)
{
	is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || count(*) FILTER (WHERE application_name IS NULL)
		FROM pg_contention_recent(300, true)
		WHERE indexrelid IS NOT NULL AND query LIKE 'SELECT * FROM orders WHERE customer = %'}),
		'1 1', 'one query id under both applications: one summed row');
}

# What top and the report list: the payers of the problems a finding
# names, each finding's culprit left out as its evidence leaves it out.
my $findings_victims = q{SELECT coalesce(string_agg(DISTINCT kind || ' ' || application_name, ','), '-')
	FROM pg_contention_findings_victims()};
{
	local $ENV{PGOPTIONS} = '-c pg_contention.horizon_min_age=1s';
	is($node->safe_psql('postgres', $findings_victims), 'dead_index_entries api',
		'pg_contention_findings_victims: the api readers paid for the holder, not the holder itself');
	my ($rc, $out) = client('top', '-n', '1');
	like($out, qr/^api +\w+ +[0-9.,kM]+ dead index entries +SELECT \* FROM orders/m, 'top lists them as paying');
}
$holder->query_safe('COMMIT');
$holder->quit;

# The holder has ended: no finding names a hold, and nobody is listed as
# paying for one (the store still has the api readers' dead visits).
{
	local $ENV{PGOPTIONS} = '-c pg_contention.horizon_min_age=1s';
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_contention_findings
		WHERE problem = 'xmin_horizon_held' OR details ? 'holder' AND jsonb_typeof(details -> 'holder') = 'object'}),
		'0', 'the hold is over: no finding names a holder');
	is($node->safe_psql('postgres', $findings_victims), '-',
		'pg_contention_findings_victims: no payer of a problem no finding names');
	ok($node->safe_psql('postgres', q{SELECT count(*) FROM pg_contention_victims() WHERE kind = 'dead_index_entries'}) > 0,
		'(pg_contention_victims() still lists them: the statements that paid in the window, whatever the findings)');
	my ($rc, $out) = client('top', '-n', '1');
	unlike($out, qr/^api +\w+ +[0-9.,kM]+ dead index entries/m, 'top lists no payer for it');
}

done_testing();
