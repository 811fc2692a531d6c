# The incidents the server keeps, read by the client (issue 25): a real
# incident (an xmin horizon held by a session idle in transaction, under a
# role and with a last statement named with terminal escapes, HTML and JSON
# metacharacters and a right-to-left override) opens with no client
# polling and closes after the fix; then
#
# - pg_contention_report(incident => N) and report --incident N (text and
#   --html): the frozen evidence, with the charts drawn from the frozen
#   history once the live history no longer covers the incident;
# - pg_contention incidents (and --json), and top's panel, which still
#   fits an 80x24 terminal;
# - every server text escaped in all of them;
# - against extension 1.3 (no incidents) the client degrades: incidents
#   and report --incident say so (exit 3), top does without the panel;
# - the usage errors of the new command and option.
use strict;
use warnings;
use Encode qw(encode_utf8);
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client client_on_terminal find_program screen_columns churn);

my $node = PostgreSQL::Test::Cluster->new('incidents_client');
$node->init(extra => [ '--encoding=UTF8', '--locale=C' ]);
# An evaluation every second, closed after 2 s gone; a horizon held 1 s is
# a finding; the live history only 5 seconds long, so that it soon no
# longer covers the incident.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
autovacuum = off
pg_contention.incident_interval = 1
pg_contention.incident_close_after = 2
pg_contention.horizon_min_age = 1
pg_contention.history_seconds = 5
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

# The hostile pieces (UTF-8 bytes): OSC 0 sets a terminal's title, BEL ends
# it, U+202E reverses the text after it, "<", "&", quotes and a backslash.
my $rlo = encode_utf8("\x{202e}");
my $role = "r\e]0;ROLE\a<i>&'" . $rlo . 'x';
my $marker = '<b id="m">&amp;\\"</b>';
(my $role_ident = $role) =~ s/"/""/g;
$node->safe_psql('postgres', qq{CREATE ROLE "$role_ident" LOGIN});

# The client, with the node's connection in the environment.
sub client
{
	local $ENV{LC_ALL} = 'C.UTF-8';
	return run_client($node, @_);
}

# What the hostile texts may never bring into output.
sub no_server_escapes
{
	my ($out, $what) = @_;
	unlike($out, qr/\e/, "$what: no escape");
	unlike($out, qr/\a/, "$what: no BEL");
	unlike($out, qr/\xe2\x80\xae/, "$what: no raw right-to-left override");
}

# ---- Usage errors: exit 3, one line.
for my $bad ([ [ 'report', '--incident', 'x' ], qr/invalid incident "x": give its id, a whole number from 1/ ],
	[ [ 'report', '--incident', '0' ], qr/invalid incident "0"/ ],
	[ [ 'report', '--incident=-3' ], qr/invalid incident "-3"/ ],
	[ [ 'report', '--incident', '99999999999999999999' ], qr/invalid incident "99999999999999999999"/ ],
	[ [ 'check', '--incident', '1' ], qr/--incident is an option of report, not of check/ ],
	[ [ 'incidents', '--html', 'x.html' ], qr/--html and --text are options of report, not of incidents/ ],
	[ [ 'top', '--json' ], qr/--json is an option of check and incidents, not of top/ ])
{
	my ($rc, $out, $err) = client(@{ $bad->[0] });
	is($rc, 3, "usage error exits 3: @{$bad->[0]}");
	like($err, $bad->[1], "usage error message: @{$bad->[0]}");
}
{
	my ($rc, $out) = client('--help');
	like($out, qr/^  incidents +the incidents the server kept/m, '--help lists incidents');
	like($out, qr/^ +--incident=ID +report: /m, '--help lists --incident');
}

# ---- A healthy server: no incident yet; the command lists none.
{
	my ($rc, $out, $err) = client('incidents');
	is($rc, 0, 'incidents exits 0 with none');
	like($out, qr/^PG_CONTENTION INCIDENTS - 0 open, 0 closed on \S+\n\z/, 'incidents: none');
	($rc, $out, $err) = client('report', '--incident', '4242');
	is($rc, 3, 'report of an unknown incident: exit 3');
	like($err, qr/^pg_contention: error: no incident 4242\n\z/, 'report of an unknown incident: one line');
	($rc, $out, $err) = client('report', '--incident', '4242', '--html', '-');
	is($rc, 3, 'HTML report of an unknown incident: exit 3');
	like($err, qr/^pg_contention: error: no incident 4242: pg_contention incidents lists them\n\z/,
		'HTML report of an unknown incident: says where the ids are');
	is($out, '', 'HTML report of an unknown incident: no page');
}

# ---- The incident: the hostile role holds the horizon, idle in transaction,
# its last statement hostile.  Nothing polls the findings.
my $holder = $node->background_psql('postgres', extra_params => [ '-U', $role ]);
$holder->query_safe("SET application_name = 'app<script>&\"''x'");
$holder->query_safe('BEGIN; SELECT txid_current()');
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder_pid =~ s/\s+//g;
$holder->query_until(qr/hostile sent/,
	"SELECT 'held' /* \e]0;QUERY\a $marker $rlo | */;\n\\echo hostile sent\n");
churn($node, 'postgres');		# what the hold costs

ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held' AND closed IS NULL"),
	'the held horizon opened an incident, with no client polling');
my $id = $node->safe_psql('postgres',
	"SELECT id FROM pg_contention_incidents WHERE problem = 'xmin_horizon_held'");

# While open: the list, and top's panel on an 80x24 terminal.
{
	my ($rc, $out) = client('incidents');
	is($rc, 0, 'incidents exits 0');
	like($out, qr/^PG_CONTENTION INCIDENTS - 1 open, 0 closed on /, 'incidents: the counts');
	like($out, qr/^#$id OPEN (warning|critical) xmin_horizon_held: pid $holder_pid .*Opened \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, still open, now /m,
		'incidents: the open incident, one line');
	no_server_escapes($out, 'incidents (open)');
	like($out, qr/r\\x1b\]0;ROLE\\x07<i>&'\\u202ex/, 'incidents: the role shown escaped');

	($rc, $out) = client('report', '--incident', $id);
	like($out, qr/^Closed: +no, still open \(severity now /m, 'report of an open incident says so');

	# The live reports name it, with the command for its frozen report.
	($rc, $out) = client('report');
	like($out, qr/^== Open incidents \(1\)\n$id\. \[(warning|critical)\] xmin_horizon_held: pid $holder_pid .*\n   Opened \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, last seen at warning or above \d{4}-[-\d: ]+; its report: pg_contention report --incident=$id$/m,
		'the live report names the open incident, with the command for its report');
	no_server_escapes($out, 'report (live, an incident open)');
	($rc, $out) = client('report', '--html', '-');
	like($out, qr{<h3>Open incidents \(pg_contention report --incident=ID[^<]*</h3>\s*<table>.*?<tr><td class="n">$id</td><td>(warning|critical)</td><td>xmin_horizon_held</td>}s,
		'report --html: the open incidents\' table');
	no_server_escapes($out, 'report --html (an incident open)');
	unlike($out, qr/<i>&'/, 'report --html: the role\'s markup escaped');
}
SKIP:
{
	skip 'script(1) is not installed', 6 unless find_program('script');
	my ($rc, $out, $err) = client_on_terminal($node, { columns => 80, rows => 24 }, 'top', '-n', '1');
	is($rc, 0, 'top on an 80x24 terminal exits 0') or diag($err);
	# The frame: from the last "home", top's own escapes and the carriage
	# returns (its own and the terminal's) removed.
	my $frame = (split(/\e\[H/, $out))[-1];
	$frame =~ s/\e\[(?:\?1049[hl]|\?25[hl]|2J|K|J|[0-9;]*m)//g;
	$frame =~ s/\r//g;
	no_server_escapes($frame, 'top on 80x24');
	my @lines = split(/\n/, $frame);
	ok(@lines <= 24, 'top: the frame has at most 24 lines') or diag($frame);
	is(scalar(grep { screen_columns($_) > 80 } @lines), 0, 'top: every line fits in 80 columns')
	  or diag($frame);
	like($frame, qr/^Incidents: 1 open, 0 closed/m, 'top: the incidents panel');
	like($frame, qr/^ #$id +OPEN +(warning|critical) +since \d\d:\d\d:\d\d  xmin_horizon_held: pid $holder_pid/m,
		'top: the open incident, one line');
	like($frame, qr/^Statements by dead index entries per execution/m,
		'top: the last section still fits on the screen');
}

# ---- The fix: the transaction ends; the incident closes by itself.
$holder->query_safe('COMMIT');
$holder->quit;
ok($node->poll_query_until('postgres',
	"SELECT closed IS NOT NULL FROM pg_contention_incidents WHERE id = $id"),
	'the incident closed after the fix');
# The live history soon no longer covers the incident: its oldest second
# is after the peak.  What the reports show then comes from the frozen
# columns only.
ok($node->poll_query_until('postgres',
	"SELECT min(bucket_start) > (SELECT peak FROM pg_contention_incidents WHERE id = $id)"
	  . " FROM pg_contention_history"),
	'the live history no longer covers the incident');
my $frozen_seconds = $node->safe_psql('postgres',
	"SELECT jsonb_array_length(details -> 'history') FROM pg_contention_incidents WHERE id = $id");
cmp_ok($frozen_seconds, '>', 0, 'the incident froze history seconds');

# The server's text report.
{
	my $r = $node->safe_psql('postgres', "SELECT pg_contention_report(incident => $id)");
	like($r, qr/^pg_contention incident $id, reported at /, 'report(incident): its title');
	like($r, qr/^\[(warning|critical)\] xmin_horizon_held: pid $holder_pid /m, 'report(incident): the problem and subject');
	like($r, qr/^Closed: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d .*\nDuration: +\d+ (s|min)\b.*\nResolution: +\S/m,
		'report(incident): closed, how long, the resolution');
	like($r, qr/^== At open \(warning, /m, 'report(incident): the evidence at open');
	like($r, qr/^== At the peak \((warning|critical), first reached at \S+ \S+; the figures as of then\)$/m, 'report(incident): the evidence at the peak');
	like($r, qr/^Peak: +\S+ \S+ \S+ \((warning|critical), first reached then; its figures are frozen as of then\)$/m,
		'report(incident): the peak says what it froze (the first moment at its severity, not the largest figures)');
	like($r, qr/^Advice: .*pg_terminate_backend\($holder_pid\)/m,
		'report(incident): the advice at the peak');
	like($r, qr/^== Holders of the xmin horizon at the peak\n.*\n\S+ .* +$holder_pid .*idle in transaction, app<script>&"'x, SELECT \$1 /m,
		'report(incident): the frozen holder, its application and statement (normalized)');
	like($node->safe_psql('postgres', "SELECT pg_contention_report(incident => $id, with_values => true)"),
		qr/^== Holders of the xmin horizon at the peak\n.*\n\S+ .* +$holder_pid .*idle in transaction, app<script>&"'x, SELECT 'held'/m,
		'report(incident, with_values): the statement as it ran');
	my @seconds = $r =~ /^\d\d:\d\d:\d\d +[0-9.]+ /mg;
	is(scalar @seconds, $frozen_seconds, 'report(incident): every frozen second, as a row');
	like($r, qr/^== The $frozen_seconds seconds before the peak/m, 'report(incident): the seconds counted');
}

# The client: text, HTML, the list.
{
	my ($rc, $out, $err) = client('report', '--incident', $id);
	is($rc, 0, 'report --incident exits 0') or diag($err);
	like($out, qr/^pg_contention incident $id, /, 'report --incident: the server\'s text report');
	no_server_escapes($out, 'report --incident (text)');
	ok(index($out, '\x1b]0;QUERY\x07 ' . $marker . ' \u202e |') >= 0,
		'report --incident: the statement shown with its controls escaped') or diag($out);
	like($out, qr/r\\x1b\]0;ROLE\\x07<i>&'\\u202ex/, 'report --incident: the role escaped');

	my $page = PostgreSQL::Test::Utils::tempdir . '/incident.html';
	($rc, $out, $err) = client('report', '--incident', $id, '--html', $page);
	is($rc, 0, 'report --incident --html exits 0') or diag($err);
	my $html = slurp_file($page);
	like($html, qr/<title>pg_contention incident $id: /, 'HTML: the incident\'s page');
	for my $chart ('active', 'lookups', 'overflowed', 'horizon')
	{
		like($html, qr/<svg id="chart-$chart" class="chart" [^>]*data-points="$frozen_seconds"/,
			"HTML: the $chart chart drawn from the $frozen_seconds frozen seconds");
	}
	my @order = $html =~ /<svg id="chart-(\w+)"/g;
	is($order[0], 'horizon', 'HTML: an xmin incident\'s page shows the horizon\'s age first');
	# The timeline: opened and peak in one row when it opened at its peak,
	# else two rows that differ.
	my ($timeline) = $html =~ m{<h3>Open, peak and close</h3>(.*?)</table>}s;
	my @moments = ($timeline // '') =~ m{<tr><td>([^<]*)</td>}g;
	my $at_peak = $node->safe_psql('postgres',
		"SELECT date_trunc('second', opened) = date_trunc('second', peak) FROM pg_contention_incidents WHERE id = $id");
	is(join(', ', @moments), $at_peak eq 't' ? 'opened at its peak, closed' : 'opened, peak, closed',
		'HTML: the timeline repeats no row (opened at its peak: one row for both)');
	my ($horizon) = $html =~ /<svg id="chart-horizon"[^>]*data-max="([0-9.e+]+)"/;
	cmp_ok($horizon // 0, '>', 0, 'HTML: the frozen xmin age is on the chart');
	like($html, qr/<section class="finding (warning|critical)">/, 'HTML: the incident at its peak');
	like($html, qr/<b>Resolution:<\/b> <bdi>\S/, 'HTML: the resolution');
	like($html, qr/<h3>Holders of the xmin horizon at the peak<\/h3>\n<table>.*<td>$holder_pid<\/td>.*<td>yes, named by the finding<\/td>/s,
		'HTML: the frozen holder, marked as the one the finding names');
	like($html, qr/Frozen when the incident first reached its highest severity/,
		'HTML: the evidence says when it was frozen');
	no_server_escapes($html, 'report --incident --html');
	unlike($html, qr/\Q$marker\E/, 'HTML: the statement\'s markup is not markup');
	ok(index($html, '&lt;b id=&quot;m&quot;&gt;&amp;amp;\\&quot;&lt;/b&gt;') >= 0, 'HTML: the statement\'s markup escaped');
	unlike($html, qr/<script>|<i>/, 'HTML: no markup from the server');
	like($html, qr/\\x1b\]0;QUERY\\x07/, 'HTML: the escape shown as text');
	like($html, qr/\\u202e/, 'HTML: the override shown as text');

	($rc, $out) = client('incidents');
	like($out, qr/^PG_CONTENTION INCIDENTS - 0 open, 1 closed on /, 'incidents: closed now');
	like($out, qr/^#$id closed (warning|critical) xmin_horizon_held: pid $holder_pid .* Opened \S+ \S+, closed \S+ \S+ after \d+ s\. .* Resolution: \S/m,
		'incidents: the closed incident, its resolution');
	is(scalar(() = $out =~ /\n/g), 2, 'incidents: one line each');
	no_server_escapes($out, 'incidents');

	($rc, $out) = client('incidents', '--json');
	is($rc, 0, 'incidents --json exits 0');
	my $doc = eval { decode_json($out) };
	ok($doc, 'incidents --json parses') or diag($out);
	is($doc->{counts}{closed}, 1, 'JSON: the counts');
	my ($inc) = @{ $doc->{incidents} // [] };
	is($inc->{id}, $id, 'JSON: the id, a number');
	is($inc->{status}, 'closed', 'JSON: closed');
	ok(index(encode_utf8($inc->{subject} // ''), $role) >= 0, 'JSON: the subject holds the role as it is');
	my ($held) = grep { ($_->{pid} // 0) == $holder_pid } @{ $inc->{details}{holders} // [] };
	ok($held && index(encode_utf8($held->{query}), $marker) >= 0,
		'JSON: the frozen holder\'s statement as it is');
	ok($held && $held->{named_by_finding} && $held->{blocks_cleanup},
		'JSON: the frozen holder is the one the finding names, and marked as blocking cleanup, as the advice says');
	no_server_escapes($out, 'incidents --json');

	# top off a terminal: the closed incident in its panel.
	local $ENV{COLUMNS} = '80';
	($rc, $out) = client('top', '-n', '1');
	like($out, qr/^Incidents: 0 open, 1 closed\n #$id +closed +(warning|critical) +\d\d:\d\d:\d\d-\d\d:\d\d:\d\d  xmin_horizon_held: /m,
		'top: the closed incident');
}

# ---- A role without pg_read_all_stats, not the culprit's: the server masks
# the texts and the frozen evidence, and both reports say so.
$node->safe_psql('postgres', 'CREATE ROLE outsider LOGIN');
{
	my ($rc, $out, $err) = client('report', '--incident', $id, '-U', 'outsider');
	is($rc, 0, 'masked: report --incident exits 0') or diag($err);
	like($out, qr/^The texts are masked: /m, 'masked: the text report says so');
	like($out, qr/^\[(warning|critical)\] xmin_horizon_held: <insufficient privilege>$/m,
		'masked: the subject is masked');
	unlike($out, qr/QUERY/, 'masked: nothing of the holder\'s statement (its application, like pg_stat_activity\'s, shown)');
	($rc, $out, $err) = client('report', '--incident', $id, '--html', '-', '-U', 'outsider');
	is($rc, 0, 'masked: report --incident --html exits 0') or diag($err);
	like($out, qr/<b>The texts are masked<\/b>/, 'masked: the page says so');
	unlike($out, qr/QUERY/, 'masked: nothing of the holder\'s statement in the page');
}

# ---- The report function's arguments.
{
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT pg_contention_report('5 min', $id)");
	like($err, qr/ERROR:  window_length and incident cannot be given together/, 'report: not both arguments');
	($rc, $out, $err) = $node->psql('postgres', 'SELECT pg_contention_report(incident => 424242)');
	like($err, qr/ERROR:  no incident 424242\nHINT:  SELECT id FROM pg_contention_incidents lists them\./,
		'report: an unknown incident');
	like($node->safe_psql('postgres', "SELECT pg_contention_report('5 min')"),
		qr/^pg_contention report at /, 'report: a window, positionally, as in 1.3');
}

# ---- An extension without incidents (1.3): the client does without.
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', "CREATE EXTENSION pg_contention VERSION '1.3'");
{
	my ($rc, $out, $err) = client('incidents', '-d', 'old');
	is($rc, 3, 'incidents on 1.3: exit 3');
	like($err, qr/^pg_contention: error: extension pg_contention 1\.3 in database "old" keeps no incidents \(no view pg_contention_incidents\): they come with version 1\.4, run ALTER EXTENSION pg_contention UPDATE\n\z/,
		'incidents on 1.3: says why, one line');
	($rc, $out, $err) = client('report', '--incident', '1', '-d', 'old');
	is($rc, 3, 'report --incident on 1.3: exit 3');
	like($err, qr/keeps no incidents/, 'report --incident on 1.3: says why');
	($rc, $out, $err) = client('top', '-n', '1', '-d', 'old');
	is($rc, 0, 'top on 1.3: exit 0') or diag($err);
	like($out, qr/^Findings over the last /m, 'top on 1.3: the findings');
	unlike($out, qr/^Incidents/m, 'top on 1.3: no incidents panel');
	($rc, $out) = client('report', '-d', 'old');
	is($rc, 0, 'report on 1.3: the live report still works');
	$node->safe_psql('old', 'ALTER EXTENSION pg_contention UPDATE');
	($rc, $out) = client('incidents', '-d', 'old');
	is($rc, 0, 'after ALTER EXTENSION UPDATE: incidents answers');
}

$node->stop;
done_testing();
