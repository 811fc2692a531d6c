# The pg_contention client program against real servers: usage and
# connection errors (exit 3, one line), check's exit codes and JSON on a
# healthy server and during the incidents (an overflowed subtransaction
# cache under pgbench, 100,000 dead index entries behind an idle
# transaction), report --html with the incident in its SVG charts,
# rendered by headless Chromium, top under tmux (the overflowed backend on
# screen, keys, a server restart), top's plain output off a terminal.
# (The manual's pictures come from tools/screenshots.sh.)
use strict;
use warnings;
use IPC::Run;
use Encode qw(decode_utf8);
use JSON::PP;
use Compress::Zlib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client find_program);

my $tmp = PostgreSQL::Test::Utils::tempdir;

my $node = PostgreSQL::Test::Cluster->new('client');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
max_connections = 30
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

# The client, with the node's connection in the environment.
sub client
{
	return run_client($node, @_);
}

# ---- Usage and connection errors: exit 3, one line each.
my ($rc, $out, $err) = client('--help');
is($rc, 0, '--help exits 0');
like($out, qr/^Usage:\n  pg_contention \[OPTION\]\.\.\. COMMAND/m, '--help shows the usage');
like($out, qr/^"pg_contention COMMAND --help" shows one command's help/m, '--help says each command has its own');
# Each command's help, as PostgreSQL's programs give theirs, with --help
# or -? anywhere on the line, and only its own options.
my %own = (top => qr/^Keys:\n  q /m, check => qr/^Exit status:\n  0 /m,
	report => qr/--incident=ID/, incidents => qr/report --incident=ID" gives/);
for my $command (sort keys %own)
{
	for my $args ([ $command, '--help' ], [ '-?', $command ], [ $command, '-d', 'nowhere', '-?' ])
	{
		($rc, $out, $err) = client(@$args);
		ok($rc == 0 && $err eq '', "@$args exits 0");
		like($out, qr/^Usage:\n  pg_contention \[OPTION\]\.\.\. $command \[DBNAME \| CONNINFO\]$/m,
			"@$args: $command's usage");
	}
	like($out, $own{$command}, "$command's help has what is its own");
	like($out, qr/^Connection options:\n  -h, --host=HOSTNAME/m, "$command's help has the connection options");
	unlike($out, qr/^Commands:/m, "$command's help does not list every command");
}
($rc, $out, $err) = client('check', '-h');
is($rc, 3, 'check -h: a usage error (the host, as in psql)');
like($err, qr/-h is the host option, as in psql; -\? or --help shows the help/, 'check -h says what -h is');
($rc, $out) = client('--version');
like($out, qr/^pg_contention \(client\) \d+\.\d+$/m, '--version');
for my $bad ([ [], qr/no command given/ ],
	[ ['frobnicate'], qr/unknown command "frobnicate"/ ],
	[ [ 'top', '--json' ], qr/--json is an option of check/ ],
	[ [ 'top', '--interval=0' ], qr/invalid interval "0"/ ],
	[ [ 'top', '-n', 'x' ], qr/invalid iteration count "x"/ ],
	[ [ 'check', 'db1', 'db2' ], qr/too many arguments/ ])
{
	($rc, $out, $err) = client(@{ $bad->[0] });
	is($rc, 3, "usage error exits 3: @{$bad->[0]}");
	like($err, $bad->[1], "usage error message: @{$bad->[0]}");
}

{
	my $nowhere = "$tmp/nowhere";
	mkdir $nowhere;
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'pg_contention', 'check', '-h', $nowhere, '-p', '1' ],
		'<', \undef, '>', \$o, '2>', \$e);
	is($? >> 8, 3, 'no server: exit 3');
	# libpq 13 words it "could not connect to server: ...".
	like($e, qr/^pg_contention: error: (connection to server on socket ".*" failed|could not connect to server): .*\n\z/,
		'no server: one line on stderr');
	like($o, qr/^PG_CONTENTION UNKNOWN - (connection to server|could not connect)/,
		'no server: UNKNOWN status line');
	IPC::Run::run([ 'pg_contention', 'check', '--json', '-h', $nowhere, '-p', '1' ],
		'<', \undef, '>', \$o, '2>', \$e);
	my $doc = eval { decode_json($o) };
	is($doc && $doc->{status}, 'UNKNOWN', 'no server: --json still prints a JSON document');
}

$node->safe_psql('postgres', 'CREATE DATABASE noext');
($rc, $out, $err) = client('check', '--live', '-d', 'noext');
is($rc, 3, 'extension not created: exit 3');
like($err, qr/^pg_contention: error: extension "pg_contention" is not created in database "noext": run CREATE EXTENSION pg_contention there/,
	'extension not created: says what to do');

$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', "CREATE EXTENSION pg_contention VERSION '1.2'");
($rc, $out, $err) = client('report', '-d', 'old');
is($rc, 3, 'older extension: exit 3');
like($err, qr/extension pg_contention is version 1\.2 in database "old", this client needs 1\.3 or later: run ALTER EXTENSION pg_contention UPDATE\n\z/,
	'older extension: says what to do');
$node->safe_psql('old', 'ALTER EXTENSION pg_contention UPDATE');
($rc) = client('check', '--live', '-d', 'old');
is($rc, 0, 'after ALTER EXTENSION UPDATE it answers');

my $unloaded = PostgreSQL::Test::Cluster->new('unloaded');
$unloaded->init;
$unloaded->start;
$unloaded->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
{
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'pg_contention', 'top', '-n', '1', '-h', $unloaded->host, '-p', $unloaded->port,
			'-d', 'postgres' ], '<', \undef, '>', \$o, '2>', \$e);
	is($? >> 8, 3, 'library not preloaded: exit 3');
	like($e, qr/^pg_contention: error: the pg_contention library is not loaded: add pg_contention to shared_preload_libraries and restart the server\n\z/,
		'library not preloaded: says what to do');
}
$unloaded->stop;

# A connection string works as the positional argument.
{
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'pg_contention', 'check', '--live', $node->connstr('postgres') ],
		'<', \undef, '>', \$o, '2>', \$e);
	is($? >> 8, 0, 'a connection string as the argument');
}

# ---- A healthy server: pgbench's TPC-B, no finding above info.
$node->command_ok([ 'pgbench', '-i', '-s', '2', '-q', $node->connstr('postgres') ], 'pgbench tables');
$node->command_ok([ 'pgbench', '-n', '-c', '4', '-t', '300', $node->connstr('postgres') ],
	'a healthy pgbench run');
($rc, $out) = client('check', '--live');
is($rc, 0, 'healthy: check exits 0');
like($out, qr/^PG_CONTENTION OK - no findings on .* \| findings=0 critical=0 warning=0 info=0\n\z/,
	'healthy: one OK line with perfdata');
($rc, $out) = client('check', '--live', '--json');
my $doc = eval { decode_json($out) };
ok($doc, 'healthy: --json parses') or diag($out);
is_deeply([ $doc->{status}, $doc->{exit_code}, scalar @{ $doc->{findings} } ], [ 'OK', 0, 0 ],
	'healthy: status OK, no findings');

# ---- A hot standby answers the same way, and says it is one.
# top: a refresh's queries (the clock, the findings, the backends, the
# holders, the history; the statements, the indexes, who pays every 5 s)
# are sent in one round trip (libpq's pipeline mode), each prepared once
# per connection and executed by its name: the server logs each execution
# with the name, and a name is the same at every refresh.
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET log_statement = 'all'");
	$node->reload;
	$node->poll_query_until('postgres', "SELECT current_setting('log_statement') = 'all'")
	  or die 'the reload did not come';
	my $offset = -s $node->logfile;
	my ($rc2) = client('top', '-n', '3');
	is($rc2, 0, 'top -n 3 exits 0');
	my $log = slurp_file($node->logfile, $offset);
	# A client built with libpq 13 (no pipeline mode) sends them as one
	# simple Query instead: one log line per refresh.
	if ($log !~ /execute pgc_/)
	{
		my @one = grep { /statement: .*pg_contention_findings.*pg_contention_subxact.*pg_contention_horizon.*pg_contention_history/ }
		  split /\n/, $log;
		is(scalar @one, 3, 'top (libpq without pipeline mode): each refresh sends its queries in one message');
		is(scalar(grep { /pg_contention_statements.*pg_contention_index_scans/ } @one), 1,
			'top (libpq without pipeline mode): the tables read once in 3 refreshes (every 5 s)');
	}
	else
	{
		my @looks = grep { /execute pgc_[0-9a-f]{16}: .*pg_contention_horizon/ } split /\n/, $log;
		is(scalar @looks, 3, 'top: the holders read once per refresh, by a prepared statement');
		my %names;
		for my $view (qw(pg_contention_findings pg_contention_subxact pg_contention_horizon
			pg_contention_history pg_contention_statements pg_contention_index_scans))
		{
			my @runs = $log =~ /execute (pgc_[0-9a-f]{16}): [^\n]*\Q$view\E(?!_victims)/g;
			$names{$view} = scalar(@runs) . ' runs of ' . scalar(keys %{ { map { $_ => 1 } @runs } }) . ' name';
		}
		# The statements and indexes every 5 s: once in these 3 refreshes
		# (a second apart).
		is_deeply(\%names, { map { $_ => (/statements|index_scans/ ? '1 runs of 1 name' : '3 runs of 1 name') } keys %names },
			'top: each query is prepared once and executed at every refresh, the tables every 5 s');
	}
	is(scalar(grep { /statement: SELECT (?:pid|kind|query_id|severity), / } split /\n/, $log),
		0, 'top: no query of a refresh sent alone');
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET log_statement');
	$node->reload;
}

$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
{
	my ($o, $e) = ('', '');
	my @at = ('-h', $standby->host, '-p', $standby->port, '-d', 'postgres');
	IPC::Run::run([ 'pg_contention', 'check', '--live', '--json', @at ], '<', \undef, '>', \$o, '2>', \$e);
	is($? >> 8, 0, 'standby: check exits 0');
	my $d = eval { decode_json($o) };
	ok($d && $d->{in_recovery}, 'standby: the JSON says in_recovery') or diag($o . $e);
	IPC::Run::run([ 'pg_contention', 'top', '-n', '1', @at ], '<', \undef, '>', \$o, '2>', \$e);
	like($o, qr/^ pg_contention top .* PostgreSQL \d+\.\d+ standby /, 'standby: top says standby');
	IPC::Run::run([ 'pg_contention', 'report', '--html', '-', @at ], '<', \undef, '>', \$o, '2>', \$e);
	like($o, qr{<p class="meta">(?:[^<]|</?bdi>)*\(hot standby\)}, 'standby: the report says hot standby');
}
$standby->stop;

# ---- Case 1: four pgbench clients, 90 savepoints per transaction.
$node->safe_psql('postgres', q{
	CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL);
	CREATE TABLE side (id integer);
	INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i;
	CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer NOT NULL, note text);
	CREATE INDEX orders_customer ON orders (customer);
	INSERT INTO orders (customer, note) SELECT g % 10000, 'open' FROM generate_series(1, 100000) AS g;
	VACUUM ANALYZE;
});
my $script = "$tmp/savepoints90.sql";
open(my $fh, '>', $script) or die;
print $fh "BEGIN;\n";
for (1 .. 90)
{
	print $fh "SAVEPOINT a;\n\\set rnd random(1, 990)\n";
	print $fh "SELECT count(*) FROM contend WHERE id BETWEEN 10 * :rnd + :client_id + 1 AND 10 * :rnd + :client_id + 101;\n";
	print $fh "UPDATE contend SET val = val + 1 WHERE id IN (10 * :rnd + :client_id, 10 * :rnd + :client_id + 10);\n";
}
print $fh "COMMIT;\n";
close $fh;
my ($bench_out, $bench) = ('');
{
	local $ENV{PGAPPNAME} = 'pgbench';
	$bench = IPC::Run::start(
		# At 40 transactions a second in all: every second has overflowed
		# sessions and readers behind them, and the machine is left to the
		# other tests (at full speed four clients take both cores).
		[ 'pgbench', '-n', '-M', 'prepared', '-c', '4', '-j', '2', '-R', '40', '-T', '600', '-f', $script,
			$node->connstr('postgres') ],
		'>', \$bench_out, '2>', \$bench_out);
}

# One session stays overflowed all along: 70 subtransactions that wrote,
# idle in transaction.
my $overflowed = $node->background_psql('postgres');
my $overflowed_pid = $overflowed->query_safe('SELECT pg_backend_pid()');
$overflowed_pid =~ s/\s+//g;
$overflowed->query_safe("SET application_name = 'loader'; BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_);\n" } 1 .. 70));

# The severity of the overflow comes from its cost: the warning bar (50,000
# pg_subtrans lookups per second) lowered to 1 and the critical bar out
# of reach, so the expected exit code does not depend on this machine's
# speed (an assertion-enabled build is slow).
my $pinned = '-c pg_contention.subtrans_lookups_warning=1 -c pg_contention.subtrans_wait_critical=100';
{
	local $ENV{PGOPTIONS} = $pinned;
	ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_contention_findings WHERE problem = 'subxact_overflow' AND severity <> 'info'"),
		'case 1: the overflow is a finding');
	($rc, $out) = client('check', '--live');
}
is($rc, 1, 'case 1: check exits 1 (warning)');
like($out, qr/^PG_CONTENTION WARNING - \d+ findings? \(0 critical, [1-9]\d* warning, \d+ info\) on /,
	'case 1: the status line');
like($out, qr/^warning subxact_overflow: statement UPDATE contend SET val = val \+ \$\d+ .*Advice: Keep transactions under 64 subtransactions/m,
	'case 1: one line for the overflow, with its advice');
{
	local $ENV{PGOPTIONS} = $pinned;
	($rc, $out) = client('check', '--live', '--json');
}
$doc = eval { decode_json($out) };
ok($doc, 'case 1: --json parses') or diag($out);
my ($overflow) = grep { $_->{problem} eq 'subxact_overflow' } @{ $doc->{findings} };
ok($overflow && $overflow->{details}{subtrans_lookups} > 0 && $doc->{status} eq 'WARNING'
	  && $doc->{exit_code} == 1,
	'case 1: the JSON finding carries the server\'s details (lookups)');

# ---- Case 2: 100,000 dead versions behind an idle transaction.
my $billing = $node->background_psql('postgres');
my $billing_pid = $billing->query_safe('SELECT pg_backend_pid()');
$billing_pid =~ s/\s+//g;
$billing->query_safe("SET application_name = 'billing'; BEGIN; SELECT txid_current()");
$node->safe_psql('postgres',
	"INSERT INTO orders (customer, note) SELECT 42, 'cancelled' FROM generate_series(1, 100000)");
$node->safe_psql('postgres', "DELETE FROM orders WHERE note = 'cancelled'");
$node->safe_psql('postgres', 'SET enable_bitmapscan = off; SELECT * FROM orders WHERE customer = 42')
  for 1 .. 2;
($rc, $out) = client('check', '--live');
is($rc, 2, 'case 2: check exits 2 (critical)');
like($out, qr/^PG_CONTENTION CRITICAL - /, 'case 2: the status line');
like($out, qr/^critical dead_tuple_index_scan: index public\.orders_customer scanned by SELECT \* FROM orders WHERE customer = \$1 .* vacuum cannot remove them while pid $overflowed_pid \(application loader\)/m,
	'case 2: the index line names the oldest holder (the loader, older than billing)');

# ---- report --html, during both.
my $html = "$tmp/report.html";
($rc, $out, $err) = client('report', '--html', $html);
is($rc, 0, 'report --html exits 0') or diag($err);
like($out, qr/^pg_contention: wrote \Q$html\E \(\d+ kB\)$/m, 'it says where it wrote the page');
my $page = slurp_file($html);
like($page, qr{<title>pg_contention report: [^<]* at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [^<]*</title>},
	'the page has a title');
unlike($page, qr/<script|\bsrc=|\bhref=|\@import|url\(/i,
	'self-contained: no script, and nothing fetched from elsewhere');
my %chart_max;
while ($page =~ /<svg id="chart-(\w+)" [^>]*data-max="([^"]+)" data-points="(\d+)"/g)
{
	$chart_max{$1} = $2;
	ok($3 > 0, "chart $1 has points");
}
is_deeply([ sort keys %chart_max ], [qw(active horizon lookups overflowed)], 'four charts');
ok($chart_max{overflowed} >= 1, 'the overflowed-backends chart shows the overflow');
# Any: the most lookups in one second depends on the machine's speed.
ok($chart_max{lookups} > 0, 'the lookups chart shows the pg_subtrans lookups');
ok($chart_max{horizon} >= 100, 'the horizon chart shows the held horizon\'s age');
ok($chart_max{active} > 0, 'the wait-class chart shows active backends');
like($page, qr{<g class="series" data-series="[^"]+" data-max="[1-9]}, 'a wait class is stacked');
# (Server text among the page's own words in a <bdi>, isolated from its direction.)
like($page, qr{<section class="finding critical"><h3><span class="sev">critical</span> <bdi>dead_tuple_index_scan</bdi></h3>},
	'the critical finding is on the page');
like($page, qr{<td class="n">$overflowed_pid</td>.*?<td class="n">64</td><td>yes</td>}s,
	'the overflowed backend is in the evidence table');
# The overflow events, one row per session and statement: pgbench's
# sessions overflow at every transaction, each a row with its count and
# time range, not a screen of identical rows.
my ($events) = $page =~ m{Latest subtransaction-cache overflow events, by session and statement(.*?)</table>}s;
my @event_rows = map { [ map { s/<[^>]+>//gr } /<td[^>]*>(.*?)<\/td>/g ] } ($events // '') =~ m{<tr>(<td.*?)</tr>}g;
my %pair;
$pair{"$_->[3] $_->[7]"}++ for @event_rows;
ok(@event_rows > 0 && !grep({ $_ > 1 } values %pair),
	'report --html: the overflow events, one row per session and statement (' . scalar(@event_rows) . ' rows)');
ok((grep { $_->[2] =~ /^[\d,]+$/ && $_->[2] =~ tr/,//dr > 1 && $_->[1] =~ /\d\d:\d\d:\d\d$/ } @event_rows),
	'report --html: a pgbench session\'s row counts its events, with the last one\'s time');
($rc, $out) = client('report', '--text');
like($out, qr/^pg_contention report at .*== Findings \(\d+\).*== The last 60 seconds .* xmin age$/ms,
	'report --text prints the server\'s report');
($rc, $out, $err) = client('report', '--html', "$tmp/no/such/dir/r.html");
is($rc, 3, 'an unwritable report path: exit 3');
like($err, qr/could not write ".*r\.html": No such file or directory/, 'an unwritable report path: says why');

# Rendered in headless Chromium: a PNG that is not blank, the title in the DOM.
SKIP:
{
	my $chromium = find_program('chromium');
	skip 'chromium is not installed here (the host\'s PostgreSQL 15 run renders the page)', 4
	  unless $chromium;
	my $png = "$tmp/report.png";
	my @chrome = ($chromium, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
		"--user-data-dir=$tmp/chromium", '--force-device-scale-factor=1');
	my ($o, $e) = ('', '');
	IPC::Run::run([ @chrome, '--window-size=1100,2000', "--screenshot=$png", "file://$html" ],
		'<', \undef, '>', \$o, '2>', \$e);
	ok(-s $png, 'chromium rendered the page to a PNG') or diag($e);
	my $stats = png_stats($png);
	ok($stats->{ink} > 0.03, sprintf('the PNG is not blank (%.1f%% of it not white)', 100 * $stats->{ink}));
	ok($stats->{colour}{'6a1b9a'} || $stats->{near}{'6a1b9a'},
		'the overflowed-backends line is drawn in its colour');
	IPC::Run::run([ @chrome, '--dump-dom', "file://$html" ], '<', \undef, '>', \$o, '2>', \$e);
	like($o, qr{<title>pg_contention report: .*</title>.*<h1>pg_contention report</h1>}s,
		'the DOM Chromium built has the title');
}

# ---- top off a terminal: plain frames, no escape sequences.
($rc, $out) = client('top', '-n', '2', '-i', '0.2');
is($rc, 0, 'top -n 2 off a terminal exits 0');
is(scalar(() = $out =~ /^ pg_contention top /mg), 2, 'two frames');
unlike($out, qr/\e/, 'no escape sequences off a terminal');
like($out, qr/^ +$overflowed_pid postgres +\S+ +loader +idle in transaction +64 ovfl /m,
	'the overflowed backend is listed');

# ---- top under tmux: the live screen, keys, a restart.
SKIP:
{
	my $tmux = find_program('tmux');
	skip 'tmux is not installed', 42 unless $tmux;
	my $socket = "$tmp/tmux.sock";
	my @tmux = ($tmux, '-u', '-S', $socket);
	local $ENV{TERM} = 'xterm-256color';
	# The overflow's critical bar out of reach, so that its place in the
	# list stays below the index finding's until the test moves it.
	$node->safe_psql('postgres',
		'ALTER SYSTEM SET pg_contention.subtrans_wait_critical = 100; SELECT pg_reload_conf()');
	my $cmd = join(' ', 'env', 'LANG=C.UTF-8', 'TERM=xterm-256color', 'PGHOST=' . $node->host,
		'PGPORT=' . $node->port, 'PGDATABASE=postgres', 'pg_contention', 'top');
	system(@tmux, '-f', '/dev/null', 'new-session', '-d', '-s', 'pgc', '-x', '160', '-y', '58', $cmd) == 0
	  or die 'tmux new-session failed';
	my $screen = sub {
		my ($o, $e) = ('', '');
		IPC::Run::run([ @tmux, 'capture-pane', '-p', @_, '-t', 'pgc' ], '>', \$o, '2>', \$e);
		return $o;
	};
	my $until = sub {
		my ($re) = @_;
		for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
		{
			my $s = $screen->();
			return $s if $s =~ $re;
			select(undef, undef, undef, 0.1);
		}
		return $screen->();
	};
	# top reads the incidents worker's evaluation, up to one interval old:
	# until it shows the finding too.
	my $s = $until->(
		qr/\A(?=(?s:.*?)\b$overflowed_pid .*64 ovfl)(?=(?s:.*?)^ +critical +dead_tuple_index_scan )/m);
	like($s, qr/^ +$overflowed_pid postgres +\S+ +loader +idle in transaction +64 ovfl/m,
		'top shows the overflowed backend');
	like($s, qr/^Findings over the last 5 min: [1-9]\d* critical/m, 'top shows the findings first');
	like($s, qr/^ +critical +dead_tuple_index_scan index public\.orders_customer/m,
		'the critical finding is on screen');
	like($s, qr/^ subtrans lookups\/s +.*[▁▂▃▄▅▆▇█]/m, 'the history as sparklines');

	# The same screen on an ordinary terminal, a larger and a wide one:
	# every table that has rows shows some (no heading over nothing: the
	# sparklines give way), the mode and the sort always in sight, and at
	# 80x24 the first finding read whole (enter), what its row cuts.
	# A frame drawn at that width: its header is as wide, its keys last
	# (tmux trims the last blank).
	my $frame_at = sub {
		my ($w) = @_;
		my $s = '';
		for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
		{
			$s = $screen->();
			my ($first) = split /\n/, $s;
			my $n = length(decode_utf8($first // ''));
			# (Its keys end it: old content beyond an earlier width does not.)
			return $s if $n >= $w - 1 && $n <= $w && ($first // '') =~ /^ pg_contention top .*enter(: read)?\s*$/;
			select(undef, undef, undef, 0.1);
		}
		return $s;
	};
	my $subject = $node->safe_psql('postgres',
		"SELECT subject FROM pg_contention_findings WHERE problem = 'dead_tuple_index_scan'");
	for my $size ([ 80, 24 ], [ 120, 40 ], [ 200, 60 ])
	{
		my ($w, $h) = @$size;
		system(@tmux, 'resize-window', '-t', 'pgc', '-x', $w, '-y', $h) == 0 or die 'tmux resize-window failed';
		$s = $frame_at->($w);
		my @lines = split /\n/, $s;
		like($lines[0], qr/^ pg_contention top  sort: cost  /, "${w}x$h: the header starts with the sort");
		my @empty = grep { /\(\d+, 0 shown\)/ } @lines;
		is(join(' | ', @empty), '', "${w}x$h: no table heading without a row under it");
		like($s, qr/^ +critical +dead_tuple_index_scan /m, "${w}x$h: the critical finding");
		like($s, qr/^Holders of the xmin horizon \(\d+(, \d+ shown)?\)\n.*\n.*\b(backend|prepared)/m,
			"${w}x$h: the holders' table has rows");
		unlike($s, qr/^\S.*\b(\d+)\b +\1 +[\d,]+ +\S+ +(yes|no) /m, "${w}x$h: no holder's pid twice");
		# The findings first: the history gets only what they and the
		# tables leave, so it is never on screen while findings are cut.
		my ($c, $wn, $in) = $s =~ /^Findings over the last .*?: (\d+) critical, (\d+) warning, (\d+) info/m;
		my $listed = () = $s =~ /^[ >](critical|warning|info) +\w+ /mg;
		my $history = $s =~ /^Last \d+ seconds/m;
		note("${w}x$h: $listed of " . ($c + $wn + $in) . ' findings listed, history ' . ($history ? 'shown' : 'not shown'));
		ok($listed == $c + $wn + $in || !$history, "${w}x$h: no history while findings are cut");
		# Every finding, at every size: the least urgent sections are left
		# out whole first, and one line names them.
		is($listed, $c + $wn + $in, "${w}x$h: every finding listed");
		if ($s =~ /^Not shown, to list every finding/m)
		{
			like($s, qr/^Not shown, to list every finding: (who pays|backends|statements|indexes) \(\d+\)/m,
				"${w}x$h: the sections left out are named, with their rows");
			unlike($s, qr/^(Statements|Indexes) /m, "${w}x$h: and not drawn") if $s =~ /^Not shown.*statements.*indexes/m;
		}
		note("${w}x$h frame:\n$s") if $h == 24;
	}
	# The selection moves over the findings on screen only: at 80x24,
	# more downs than findings leave the marker on a listed one.
	system(@tmux, 'resize-window', '-t', 'pgc', '-x', 80, '-y', 24);
	$s = $frame_at->(80);
	system(@tmux, 'send-keys', '-t', 'pgc', 'Down') for 1 .. 12;
	$s = $until->(qr/^>(critical|warning|info) /m);
	like($s, qr/^>(critical|warning|info) +\w+ /m, 'at 80x24, the selection stays on a finding on screen');
	system(@tmux, 'send-keys', '-t', 'pgc', 'Up') for 1 .. 12;
	system(@tmux, 'resize-window', '-t', 'pgc', '-x', 200, '-y', 60);
	$frame_at->(200);
	system(@tmux, 'send-keys', '-t', 'pgc', 'p');
	like($until->(qr/^ pg_contention top  PAUSED  sort: /), qr/^ pg_contention top  PAUSED  sort: cost/,
		'at 200x60, p pauses, said first on the header');
	system(@tmux, 'resize-window', '-t', 'pgc', '-x', 80, '-y', 24);
	like($frame_at->(80), qr/^ pg_contention top  PAUSED  sort: cost/,
		'at 80x24 too: the mode and the sort are never cut');
	# Still paused, so that no refresh reorders the list under the keys:
	# from the marker to the dead_tuple_index_scan finding, and read it
	# whole.
	$s = $screen->();
	my @rows = $s =~ /^([ >])(critical|warning|info) +(\w+) /mg;
	my ($marker, $target) = (0, undef);
	for (my $i = 0; $i < @rows; $i += 3)
	{
		$marker = $i / 3 if $rows[$i] eq '>';
		$target //= $i / 3 if $rows[ $i + 2 ] eq 'dead_tuple_index_scan';
	}
	system(@tmux, 'send-keys', '-t', 'pgc', $target > $marker ? 'Down' : 'Up') for 1 .. abs($target - $marker);
	system(@tmux, 'send-keys', '-t', 'pgc', 'Enter');
	$s = $until->(qr/^Finding \d+ of \d+: critical dead_tuple_index_scan/m);
	like($s, qr/^Finding \d+ of \d+: critical dead_tuple_index_scan, since /m, 'enter: the selected finding read whole');
	my ($shown) = $s =~ /^Subject\n((?:  .*\n)+)/m;
	is(join(' ', map { s/^\s+|\s+$//gr } split /\n/, $shown // ''), $subject =~ s/\s+/ /gr,
		'at 80x24 its whole subject, wrapped at spaces');
	like($s, qr/^Evidence\n  \S/m, 'its evidence');
	like($s, qr/^Advice\n  \S/m, 'its advice');
	# Live again, the page follows its finding when a refresh reorders the
	# list: the overflow, made critical (its wait bar at 0), moves above
	# it (a lower rank).  Read by index, the page would turn to the
	# overflow.
	my ($before) = $s =~ /^Finding (\d+) of /m;
	system(@tmux, 'send-keys', '-t', 'pgc', 'p');
	$node->safe_psql('postgres',
		'ALTER SYSTEM SET pg_contention.subtrans_wait_critical = 0; SELECT pg_reload_conf()');
	ok($node->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM pg_contention_findings
		 WHERE problem = 'subxact_overflow' AND severity = 'critical'}),
		'the overflows made critical');
	$s = $until->(qr/^Finding (?!$before )\d+ of \d+: critical dead_tuple_index_scan|^Finding \d+ of \d+: critical subxact_overflow/m);
	like($s, qr/^Finding (?!$before )\d+ of \d+: critical dead_tuple_index_scan, since /m,
		'a refresh moved the finding read whole: the page follows it');
	$node->safe_psql('postgres',
		'ALTER SYSTEM RESET pg_contention.subtrans_wait_critical; SELECT pg_reload_conf()');
	system(@tmux, 'send-keys', '-t', 'pgc', 'Escape');
	like($until->(qr/^Findings over/m), qr/^Findings over/m, 'esc: back to the tables');
	system(@tmux, 'resize-window', '-t', 'pgc', '-x', 160, '-y', 58);

	system(@tmux, 'send-keys', '-t', 'pgc', 's');
	like($until->(qr/sort: volume/), qr/sort: volume/, 's switches the sort');
	system(@tmux, 'send-keys', '-t', 'pgc', 'p');
	like($until->(qr/PAUSED/), qr/PAUSED/, 'p pauses');
	system(@tmux, 'send-keys', '-t', 'pgc', 'p');

	# top reads each second of the history once, on its connection: later
	# refreshes ask for the newer seconds only and keep the others.  With
	# the overflowed sessions gone, the seconds they were there in stay on
	# screen beside five and more new seconds without them (fails if top
	# shows only what it read last).
	# (The screen is bytes: a block is a group, not a character class.)
	my $raised = qr/(?:▂|▃|▄|▅|▆|▇|█)/;
	$bench->kill_kill;
	$overflowed->quit;
	my $kept = qr/^ overflowed .*$raised(?:▁){5,} +0 +[1-9]\d* *$/m;
	like($until->($kept), $kept, 'top keeps the seconds it read, and adds the new ones');
	# A reset empties the server's history: the first look after it (the
	# statements' table empty again) shows none of the seconds before it.
	$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
	my $after_reset = qr/^Statements by pg_subtrans waits, since reset \(0\)/m;
	$s = $until->($after_reset);
	like($s, $after_reset, 'a look after the reset');
	unlike($s, qr/^ overflowed .*$raised/m, 'after a reset, top shows no second from before it');

	# A restart: top says the connection is lost, then that it is back.
	$billing->quit;
	$node->stop('fast');
	like($until->(qr/CONNECTION LOST/), qr/^CONNECTION LOST at \d\d:\d\d:\d\d .*reconnecting every 1 s/m,
		'the server stopped: top says so');
	$node->start;
	like($until->(qr/Reconnected at/), qr/^Reconnected at \d\d:\d\d:\d\d; the server restarted at \d\d:\d\d:\d\d\./m,
		'the server is back: top reconnected by itself and says the server restarted');

	system(@tmux, 'send-keys', '-t', 'pgc', 'q');
	my $gone = 0;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		if (system(@tmux, 'has-session', '-t', 'pgc') != 0)
		{
			$gone = 1;
			last;
		}
		select(undef, undef, undef, 0.1);
	}
	ok($gone, 'q quits');
	system(@tmux, 'kill-server');
}
$bench->kill_kill if $bench->pumpable;
$node->stop;
done_testing();

# What share of a PNG's pixels are not (nearly) white, and which exact
# colours it has: enough to tell a rendered page from a blank one.
sub png_stats
{
	my ($file) = @_;
	my $data = slurp_file($file);
	my ($width, $height, $depth, $type) = unpack('NNCC', substr($data, 16, 10));
	my $idat = '';
	my $pos = 8;
	while ($pos < length $data)
	{
		my ($len, $kind) = unpack('Na4', substr($data, $pos, 8));
		$idat .= substr($data, $pos + 8, $len) if $kind eq 'IDAT';
		$pos += 12 + $len;
	}
	my $raw = uncompress($idat);
	die "unsupported PNG ($depth bits, type $type)" unless $depth == 8 && ($type == 2 || $type == 6);
	my $bpp = $type == 6 ? 4 : 3;
	my $stride = $width * $bpp;
	my @prev = (0) x $stride;
	my ($ink, %colour, %near) = (0);
	my %wanted = ('6a1b9a' => [ 0x6a, 0x1b, 0x9a ]);
	for my $y (0 .. $height - 1)
	{
		my $filter = ord(substr($raw, $y * ($stride + 1), 1));
		my @line = unpack('C*', substr($raw, $y * ($stride + 1) + 1, $stride));
		for my $x (0 .. $stride - 1)
		{
			my $a = $x >= $bpp ? $line[ $x - $bpp ] : 0;
			my $b = $prev[$x];
			my $c = $x >= $bpp ? $prev[ $x - $bpp ] : 0;
			my $p;
			if    ($filter == 0) { $p = 0 }
			elsif ($filter == 1) { $p = $a }
			elsif ($filter == 2) { $p = $b }
			elsif ($filter == 3) { $p = int(($a + $b) / 2) }
			else
			{
				my $pa = abs($b - $c);
				my $pb = abs($a - $c);
				my $pc = abs($a + $b - 2 * $c);
				$p = ($pa <= $pb && $pa <= $pc) ? $a : ($pb <= $pc ? $b : $c);
			}
			$line[$x] = ($line[$x] + $p) & 0xff;
		}
		for (my $x = 0; $x < $stride; $x += $bpp)
		{
			my ($r, $g, $bl) = @line[ $x .. $x + 2 ];
			$ink++ if $r < 235 || $g < 235 || $bl < 235;
			my $hex = sprintf('%02x%02x%02x', $r, $g, $bl);
			$colour{$hex}++ if exists $wanted{$hex};
			for my $w (keys %wanted)
			{
				my ($wr, $wg, $wb) = @{ $wanted{$w} };
				$near{$w}++
				  if abs($r - $wr) < 24 && abs($g - $wg) < 24 && abs($bl - $wb) < 24;
			}
		}
		@prev = @line;
	}
	return { ink => $ink / ($width * $height), colour => \%colour, near => \%near };
}

