# Hostile text from the server: a plain role's statement texts, a role, a
# table, an index and a prepared transaction named with terminal escapes
# (OSC 0 sets the window title, OSC 52 the clipboard, CSI 2J clears the
# screen), a right-to-left override, twenty CJK characters and a "|".
#
# - pg_contention top on a terminal (a pseudo-terminal made by script(1),
#   120 columns): no escape from the server reaches it, they are shown as
#   "\x1b"; every line fits in 120 screen columns (a CJK character takes
#   two); off a terminal (a pipe, TERM=dumb) it writes no escape at all;
# - check: one status line whose only "|" starts the performance data, no
#   "|" in the long text; --json valid JSON;
# - report --html: every server text escaped, inline ones isolated (<bdi>);
#   report --text: no escape;
# - texts captured in a SQL_ASCII database (bytes \xff\xfe) and in a LATIN1
#   one, read from a UTF8 database (and UTF-8 text read from the LATIN1
#   one): every view returns valid text in the reader's encoding.
use strict;
use warnings;
use Encode qw(encode_utf8);
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client client_on_terminal find_program screen_columns);

my $tmp = PostgreSQL::Test::Utils::tempdir;

my $node = PostgreSQL::Test::Cluster->new('hostile');
$node->init(extra => [ '--encoding=UTF8', '--locale=C' ]);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
autovacuum = off
max_prepared_transactions = 5
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');

# The hostile pieces, as UTF-8 bytes.
my $osc = "\e]0;TITLE\a\e]52;c;aGk=\a\e[2J";
my $rlo = encode_utf8("\x{202e}");
my $cjk = encode_utf8(join('', map { chr(0x4e00 + 7 * $_) } 1 .. 20));
my $c1 = encode_utf8("\x{9b}");    # CSI as a C1 control, UTF-8 encoded
my $role = "plain\e]0;ROLE\a";
my $table = "t\e[2J${rlo}elbat";
my $index = "i\e]0;INDEX\a${rlo}xedni";
my $gid = "gid\e]0;GID\a$rlo";

$node->safe_psql('postgres', qq{
	CREATE ROLE "$role" LOGIN;
	CREATE TABLE "$table" (id serial PRIMARY KEY, k integer NOT NULL);
	CREATE INDEX "$index" ON "$table" (k);
	INSERT INTO "$table" (k) SELECT g % 1000 FROM generate_series(1, 20000) AS g;
	GRANT ALL ON "$table" TO "$role";
	GRANT ALL ON SEQUENCE "${table}_id_seq" TO "$role";
	VACUUM ANALYZE "$table";
});

# A prepared transaction holds the horizon, under a hostile name.
$node->safe_psql('postgres', qq{
	BEGIN; INSERT INTO "$table" (k) VALUES (-1); PREPARE TRANSACTION '$gid';
});

# The plain role: 70 savepoints that wrote (an overflow), the last statement
# hostile, idle in transaction.
my $plain = $node->background_psql('postgres', extra_params => [ '-U', $role ]);
my $plain_pid = $plain->query_safe('SELECT pg_backend_pid()');
$plain_pid =~ s/\s+//g;
# (query_until: nothing of psql's own is sent after the last statement.)
$plain->query_until(qr/hostile sent/, "BEGIN;\n"
	  . join('', map { qq{SAVEPOINT s$_; INSERT INTO "$table" (k) VALUES ($_) /* | $c1 $osc */;\n} } 1 .. 70)
	  . "SELECT '$c1', '$cjk', '$osc', '$rlo reversed', '|';\n\\echo hostile sent\n");

# Dead index entries behind it, visited by a hostile statement.
$node->safe_psql('postgres', qq{DELETE FROM "$table" WHERE k = 42});
$node->safe_psql('postgres',
	qq{SET enable_bitmapscan = off; SET enable_seqscan = off; SELECT count(*) FROM "$table" WHERE k = 42 /* $cjk $osc | */})
  for 1 .. 3;
ok($node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_index_scans WHERE dead_visits > 0"),
	'the dead entries are measured');
ok($node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_findings WHERE problem = 'subxact_overflow'"),
	'the overflow is a finding');

# The client, with the node's connection in the environment.
sub client
{
	local $ENV{LC_ALL} = 'C.UTF-8';
	return run_client($node, @_);
}

# What the hostile texts may never bring into output: an escape that is not
# top's own, BEL, a raw right-to-left override, a C1 control.
sub no_server_escapes
{
	my ($out, $what, $terminal) = @_;
	my $rest = $out;
	if ($terminal)
	{
		# top's own: the alternate screen, cursor, home, one clear at start,
		# erase to end of line and of screen, colours.
		is(scalar(() = $rest =~ /\e\[2J/g), 1, "$what: the screen is cleared once, by top");
		$rest =~ s/\e\[H/\n/g;    # a frame starts on its own line
		$rest =~ s/\e\[(?:\?1049[hl]|\?25[hl]|2J|K|J|[0-9;]*m)//g;
		$rest =~ s/\r//g;
	}
	unlike($rest, qr/\e/, "$what: no escape from the server");
	unlike($rest, qr/\a/, "$what: no BEL");
	unlike($rest, qr/\xe2\x80\xae/, "$what: no raw right-to-left override");
	unlike($rest, qr/\xc2[\x80-\x9f]/, "$what: no C1 control");
	return $rest;
}

# ---- top on a terminal: script(1) gives it a pseudo-terminal of 120 columns.
SKIP:
{
	skip 'script(1) is not installed', 9 unless find_program('script');
	my ($rc, $out, $err) = client_on_terminal($node, { columns => 120, rows => 60 }, 'top', '-n', '2', '-i', '0.3');
	is($rc, 0, 'top on a terminal exits 0') or diag($err);
	my $screen = no_server_escapes($out, 'top on a terminal', 1);
	like($screen, qr/\\x1b\]0;TIT/, 'top shows the escape as text');
	like($screen, qr/\\u009b/, 'top shows the C1 control as text');
	like($screen, qr/\\u202e/, 'top shows the override as text');
	my @too_wide = grep { screen_columns($_) > 120 } split(/\n/, $screen);
	is(scalar @too_wide, 0, 'every line of top fits in 120 columns') or diag(join("\n", @too_wide));
	like($screen, qr/\Q@{[substr($cjk, 0, 6)]}\E/, 'top shows CJK text as itself');
}

# ---- top off a terminal: a pipe, and TERM=dumb on a terminal.
{
	local $ENV{COLUMNS} = '120';
	my ($rc, $out) = client('top', '-n', '2', '-i', '0.2');
	is($rc, 0, 'top in a pipe exits 0');
	no_server_escapes($out, 'top in a pipe', 0);
	like($out, qr/^ +$plain_pid postgres +plain\\x1b/m, 'top in a pipe lists the overflowed backend, its role escaped');
	my @too_wide = grep { screen_columns($_) > 120 } split(/\n/, $out);
	is(scalar @too_wide, 0, 'every line of top in a pipe fits in 120 columns') or diag(join("\n", @too_wide));
}
SKIP:
{
	skip 'script(1) is not installed', 5 unless find_program('script');
	my ($rc, $out, $err) = client_on_terminal($node, { term => 'dumb' }, 'top', '-n', '1');
	is($rc, 0, 'top with TERM=dumb exits 0') or diag($err);
	no_server_escapes($out, 'top with TERM=dumb', 0);
}

# ---- check: the monitoring-plugin format holds.
{
	my ($rc, $out) = client('check', '--live');
	ok($rc >= 0 && $rc <= 2, 'check exits with a status');
	my ($status, @long) = split(/\n/, $out);
	like($status, qr/^PG_CONTENTION \w+ - [^|]* \| findings=\d+ critical=\d+ warning=\d+ info=\d+$/,
		'check: one "|", before the performance data');
	is(scalar(grep { /\|/ } @long), 0, 'check: no "|" in the long text') or diag($out);
	ok(scalar(grep { /\\x7c/ } @long) > 0, 'check: a "|" of the server shown as \x7c');
	no_server_escapes($out, 'check', 0);

	($rc, $out) = client('check', '--live', '--json');
	my $doc = eval { decode_json($out) };
	ok($doc, 'check --json parses') or diag($out);
	my ($overflow) = grep { $_->{problem} eq 'subxact_overflow' } @{ $doc->{findings} // [] };
	like($overflow ? $overflow->{subject} : '', qr/\| \x{9b} \e\]0;TIT/,
		'check --json: the statement text as it is, escaped the JSON way');
	(my $flat = $out) =~ s/\n//g;
	unlike($flat, qr/[\x00-\x1f\x7f]|\xe2\x80\xae|\xc2[\x80-\x9f]/,
		'check --json: controls and overrides as \u escapes');
}

# ---- report: HTML escaped and isolated, text escaped.
{
	my $html = "$tmp/report.html";
	my ($rc, $out, $err) = client('report', '--html', $html);
	is($rc, 0, 'report --html exits 0') or diag($err);
	my $page = slurp_file($html);
	unlike($page, qr/\e|\a|\xe2\x80\xae|\xc2[\x80-\x9f]/, 'report --html: no raw control or override');
	like($page, qr{<td>public\.i\\x1b\]0;INDEX\\x07\\u202exedni</td>},
		'report --html: the index name escaped');
	like($page, qr{<td class="q">[^<]*\\x1b\]0;TITLE\\x07},
		'report --html: a statement escaped');
	like($page, qr{<p class="meta"><bdi>[^<]*</bdi>, PostgreSQL <bdi>},
		'report --html: the server\'s names among the page\'s words isolated');
	like($page, qr{<span class="sev">\w+</span> <bdi>subxact_overflow</bdi></h3>.*?<b>What to do:</b> <bdi>}s,
		'report --html: a finding\'s problem and advice isolated');

	($rc, $out) = client('report', '--text');
	is($rc, 0, 'report --text exits 0');
	no_server_escapes($out, 'report --text', 0);
}

# ---- Other encodings: SQL_ASCII bytes \xff\xfe, LATIN1, read in UTF8.
$node->command_ok([ 'createdb', '-h', $node->host, '-p', $node->port, '-E', 'SQL_ASCII',
		'-T', 'template0', '--locale=C', 'sqlascii' ], 'a SQL_ASCII database');
$node->command_ok([ 'createdb', '-h', $node->host, '-p', $node->port, '-E', 'LATIN1',
		'-T', 'template0', '--locale=C', 'latin1' ], 'a LATIN1 database');
$node->safe_psql($_, 'CREATE TABLE side (id integer); CREATE EXTENSION pg_contention')
  for qw(sqlascii latin1);

my %sessions;
$sessions{sqlascii} = $node->background_psql('sqlascii');
$sessions{sqlascii}->query_until(qr/ascii sent/, "BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_) /* ascii \xff\xfe */;\n" } 1 .. 70)
	  . "\\echo ascii sent\n");
$sessions{latin1} = $node->background_psql('latin1');
$sessions{latin1}->query_until(qr/latin sent/, "SET client_encoding = 'UTF8'; BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES ($_) /* latin " . encode_utf8("caf\x{e9}") . " */;\n" } 1 .. 70)
	  . "\\echo latin sent\n");
ok($node->poll_query_until('postgres',
	"SELECT count(DISTINCT datname) = 3 FROM pg_contention_overflow_events"),
	'overflows in three databases');

# Every text column of every view, from the UTF8 database: valid UTF-8.
my %views = (
	pg_contention_overflow_events => 'query',
	pg_contention_statements => 'query',
	pg_contention_index_scans => 'query || coalesce(worst_literals, \'\')',
	'pg_contention_recent(300)' => 'query || coalesce(worst_literals, \'\')',
	pg_contention_subxact => 'query',
	pg_contention_horizon => 'query',
	pg_contention_findings => 'subject || evidence || advice || details::text',
	'pg_contention_victims()' => 'query',
	'(SELECT pg_contention_report() AS r) AS x' => 'r');
for my $view (sort keys %views)
{
	my ($ok, $bad) = (0, 0);
	my $out = $node->safe_psql('postgres',
		"SELECT encode(textsend($views{$view}), 'hex') FROM $view");
	for my $hex (split /\n/, $out)
	{
		my $bytes = pack('H*', $hex);
		utf8::decode($bytes) ? $ok++ : $bad++;
	}
	is($bad, 0, "$view: every text valid UTF-8 ($ok rows)");
}
my $events = $node->safe_psql('postgres',
	"SELECT datname, query FROM pg_contention_overflow_events ORDER BY 1");
like($events, qr/^sqlascii\|INSERT INTO side VALUES \(\d+\) \/\* ascii \\xff\\xfe \*\/$/m,
	'SQL_ASCII bytes above 127 shown as \xNN');
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
my $e_acute = $version >= 140000 ? encode_utf8("caf\x{e9}") : 'caf\\xe9';
like($events, qr/^latin1\|INSERT INTO side VALUES \(\d+\) \/\* latin \Q$e_acute\E \*\/$/m,
	'LATIN1 text converted (on PostgreSQL 13: \xNN)');
like($node->safe_psql('postgres', "SELECT query FROM pg_contention_subxact WHERE datname = 'sqlascii'"),
	qr/ascii \\xff\\xfe/, 'pg_contention_subxact: a SQL_ASCII backend\'s statement escaped');

# From the LATIN1 database: the UTF8 database's CJK text (in a comment of
# the statement that visited the dead entries), which LATIN1 cannot hold,
# as the bytes of its characters.
my $first_cjk = join('', map { sprintf('\\\\x%02x', ord) } split //, substr($cjk, 0, 3));
like($node->safe_psql('latin1', "SELECT string_agg(query, ' ') FROM pg_contention_statements"),
	qr/$first_cjk/, 'read in LATIN1: characters it lacks as \xNN');

# check --json in the SQL_ASCII database: the statement's bytes that are
# not UTF-8 come escaped by the server (the text \xff); the JSON stays
# valid.
{
	local $ENV{PGDATABASE} = 'sqlascii';
	my ($rc, $out) = client('check', '--live', '--json');
	my $doc = eval { decode_json($out) };
	ok($doc, 'check --json in a SQL_ASCII database parses') or diag($out);
	like($out, qr/ascii \\\\xff\\\\xfe/, 'check --json: bytes that are not UTF-8 as the text \xff');
	($rc, $out) = client('check', '--live');
	no_server_escapes($out, 'check in a SQL_ASCII database', 0);
	unlike($out, qr/\xff/, 'check in a SQL_ASCII database: no byte that is not UTF-8');
}

# The texts above come escaped by the server; a catalog's name does not.
# An extension in a schema whose name is not UTF-8, in a SQL_ASCII
# database: the client's first statement already reads the name, so its
# encoding must be set before it, in the same round trip.
$node->command_ok([ 'createdb', '-h', $node->host, '-p', $node->port, '-E', 'SQL_ASCII',
		'-T', 'template0', '--locale=C', 'sqlascii_schema' ], 'a second SQL_ASCII database');
$node->safe_psql('sqlascii_schema',
	"CREATE SCHEMA \"caf\xe9\"; CREATE EXTENSION pg_contention SCHEMA \"caf\xe9\"");
{
	local $ENV{PGDATABASE} = 'sqlascii_schema';
	my ($rc, $out, $err) = client('check', '--live');
	ok($rc <= 2, 'check, extension in a schema named in bytes that are not UTF-8: answers')
	  or diag($out, $err);
	is($err, '', 'check, that schema: nothing on stderr');
	($rc, $out, $err) = client('report');
	is($rc, 0, 'report, that schema: exits 0') or diag($err);
	unlike($out, qr/\xe9/, 'report, that schema: no byte that is not UTF-8');
}

$_->quit for values %sessions;
$plain->quit;
$node->safe_psql('postgres', "COMMIT PREPARED '$gid'");
$node->stop;
done_testing();
