# The stores' file is untrusted input: a real saved file (statements with
# index scans, overflow events, a wait profile, some history, incidents) is mutated
# field by field (every field of the header, of the directory and of each
# section's leading counters set to 0, -1, INT64_MAX, INT32_MAX and huge
# lengths; every 4- and 8-byte field of each section's first and last
# record) and at random (bytes flipped, a fixed seed), with the CRC-32C
# recomputed so that the loader reads it.  On each the server starts, two
# overflows are written, every view, the findings and the report are read
# under a statement_timeout: no crash, no PANIC, no hang, no error.  A
# file far larger than the stores (sparse, 64 GB) is refused with one LOG
# line and the server starts.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(crc32c);

my $node = PostgreSQL::Test::Cluster->new('fuzz');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.save_interval = 0
pg_contention.max_events = 50
pg_contention.max_statements = 200
pg_contention.history_seconds = 60
pg_contention.max_profile_entries = 100
pg_contention.incident_interval = 1s
pg_contention.incident_close_after = 1s
pg_contention.horizon_min_age = 1s
pg_contention.max_incidents = 5
restart_after_crash = off
log_min_messages = warning
log_checkpoints = off
});
$node->start;
my $file = $node->data_dir . '/pg_stat_tmp/pg_contention.stat';

# Evidence in every store.
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_contention;
CREATE TABLE t (id int PRIMARY KEY, v int);
INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g;
DELETE FROM t WHERE id % 2 = 0;
ANALYZE t;
SET enable_seqscan = off;
SELECT count(*) FROM t WHERE id < 500;
SELECT * FROM t WHERE id = 7;
SELECT pg_sleep(0.3);
});
sub overflow_sql
{
	return "BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO t VALUES (-$_ - 100000 * floor(random() * 1000)::int, 0) ON CONFLICT DO NOTHING;\n" } 1 .. 70)
	  . "COMMIT;\n";
}
$node->safe_psql('postgres', overflow_sql()) for 1 .. 2;
ok($node->poll_query_until('postgres', 'SELECT count(*) >= 3 FROM pg_contention_history'),
	'some seconds of history');
# Two incidents, one closed, one open: a transaction holds the horizon.
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; SELECT txid_current()');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 1 FROM pg_contention_incidents'), 'an incident');
$holder->query_safe('COMMIT');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_contention_incidents WHERE closed IS NULL'),
	'closed');
$holder->query_safe('BEGIN; SELECT txid_current()');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 2 FROM pg_contention_incidents'), 'another incident');
$node->stop;
$holder->quit;

open(my $in, '<:raw', $file) or die "$file: $!";
my $good = do { local $/; <$in> };
close $in;

# ---- the format (src/persist.c, format 3) ----

# The file with its checksum recomputed over everything before it.
sub with_crc
{
	my ($body) = @_;
	return $body . pack('V', crc32c($body));
}

is(crc32c(substr($good, 0, -4)), unpack('V', substr($good, -4)),
	'the CRC-32C computed here is the file\'s');

my ($magic, $format, $pg_major, $nsections) = unpack('V4', $good);
is($format, 3, 'format 3');
my $header_size = 64;
my $dir_start = length($good) - 4 - 24 * $nsections;
my @sections;
my $pos = $header_size;
for my $s (0 .. $nsections - 1)
{
	my ($id, $record_size, $count, $bytes) = unpack('V V Q< Q<', substr($good, $dir_start + 24 * $s, 24));
	push @sections, { id => $id, record_size => $record_size, count => $count,
		start => $pos, bytes => $bytes, entry => $dir_start + 24 * $s };
	$pos += $bytes;
}
is($pos, $dir_start, 'the sections end where the directory starts');
is(join(',', map { $_->{count} > 0 ? 1 : 0 } @sections), '1,1,1,1,1',
	'events, statements, profile entries, seconds of history and incidents were saved');

# Where each section's records are: after the leading counters (two for
# the profile, 4 + 8 * 2 for incidents, one for the others), each a fixed
# part and, for events and statements, a text (uint32 length, bytes), for
# incidents eleven.
my %leading = (1 => 1, 2 => 1, 3 => 2, 4 => 1, 5 => 20);
my %has_text = (1 => 1, 2 => 1, 5 => 11);
for my $s (@sections)
{
	my $p = $s->{start} + 8 * $leading{ $s->{id} };
	my @records;
	for (1 .. $s->{count})
	{
		push @records, $p;
		$p += $s->{record_size};
		$p += 4 + unpack('V', substr($good, $p, 4)) for 1 .. ($has_text{ $s->{id} } // 0);
	}
	is($p, $s->{start} + $s->{bytes}, "section $s->{id}: its records fill it");
	$s->{records} = \@records;
}

my $INT64_MAX = '9223372036854775807';
my @values8 = (pack('q<', 0), pack('q<', -1), pack('Q<', $INT64_MAX), pack('q<', 2147483647),
	pack('q<', 4294967296));
my @values4 = (pack('l<', 0), pack('l<', -1), pack('l<', 2147483647));

my @cases;    # [ name, file ]
sub mutate
{
	my ($name, @edits) = @_;
	my $body = substr($good, 0, -4);
	for my $e (@edits)
	{
		my ($at, $bytes) = @$e;
		substr($body, $at, length($bytes)) = $bytes;
	}
	push @cases, [ $name, with_crc($body) ];
}

# The header, the directory and the leading counters: each field alone,
# each value.
my @fields = map { [ "header +$_", $_, 4 ] } (0, 4, 8, 12, 40, 44, 48, 52, 56);
push @fields, map { [ "header +$_", $_, 8 ] } (16, 24, 56);
for my $s (@sections)
{
	push @fields, [ "section $s->{id} entry $_->[0]", $s->{entry} + $_->[1], $_->[2] ]
	  for ([ 'id', 0, 4 ], [ 'record_size', 4, 4 ], [ 'count', 8, 8 ], [ 'bytes', 16, 8 ]);
	push @fields, [ "section $s->{id} counter $_", $s->{start} + 8 * $_, 8 ]
	  for 0 .. $leading{ $s->{id} } - 1;
}
for my $f (@fields)
{
	my ($name, $at, $size) = @$f;
	my @values = $size == 8 ? @values8 : @values4;
	mutate("$name = " . unpack('H*', $_), [ $at, $_ ]) for @values;
}
my $structural = scalar(@cases);

# Every field of each section's first and last record: case k sets, in
# every section, the 8-byte fields k, k + 30, ... of the first record and
# the second 4-byte halves of the same fields of the last record, a value
# each in turn (the sections load independently, so each case tests all
# four).
my $stride = 30;
for my $k (0 .. $stride - 1)
{
	my @edits;
	for my $s (@sections)
	{
		my ($first, $last) = ($s->{records}[0], $s->{records}[-1]);
		for (my $f = $k, my $j = 0; 8 * $f + 8 <= $s->{record_size}; $f += $stride, $j++)
		{
			push @edits, [ $first + 8 * $f, $values8[ ($k + $j) % @values8 ] ];
			push @edits, [ $last + 4 * (2 * $f + 1), $values4[ ($k + $j) % @values4 ] ]
			  if 4 * (2 * $f + 1) + 4 <= $s->{record_size};
		}
		# The text's length too.
		if ($has_text{ $s->{id} } && $k < 4)
		{
			push @edits, [ $first + $s->{record_size},
				pack('V', (0, 0xFFFFFFFF, 0x7FFFFFFF, 65536)[$k]) ];
		}
	}
	mutate("record fields $k (+$stride)", @edits);
}

# At random: a fixed seed, one to eight bytes flipped anywhere.
srand(26);
for my $k (1 .. 30)
{
	my @edits = map { my $at = int(rand(length($good) - 4)); [ $at, chr(int(rand(256))) ] }
	  1 .. 1 + int(rand(8));
	mutate("random $k", @edits);
}

# ---- run them ----

my $views;
$node->start;
$views = $node->safe_psql('postgres', q{
	SELECT string_agg(format('SELECT count(*), max(md5(v::text)) FROM %I v;', viewname), E'\n' ORDER BY viewname)
	  FROM pg_views WHERE viewname LIKE 'pg\_contention\_%' AND viewname <> 'pg_contention_findings'});
# The cases are dealt by their position modulo 6: the assertion-enabled
# build runs 0, 3 and 5 (half of them), the other builds one sixth each,
# chosen by the major version: 13 runs 1, 17 runs 2, 18 runs 4, 15 runs 5
# (14 and 16 repeat 17's and 18's).  So the matrix (13, 17, 18 and the
# assertion build) runs every case once: the loader is the same code on
# every version, and each case costs a restart (about 1 s).
my $assertions = $node->safe_psql('postgres', 'SHOW debug_assertions');
my $major = $node->safe_psql('postgres', "SELECT current_setting('server_version_num')::int / 10000");
$node->stop;
my %sixth = (13 => 1, 14 => 2, 15 => 5, 16 => 4, 17 => 2, 18 => 4);
my %ours = $assertions eq 'on' ? (0 => 1, 3 => 1, 5 => 1) : (($sixth{$major} // 1) => 1);
{
	my $i = 0;
	@cases = grep { $ours{ $i++ % 6 } } @cases;
	$structural = grep { $_->[0] !~ /^(record fields|random) / } @cases;
}
note(($assertions eq 'on' ? 'half of the cases' : "a sixth of the cases, by the major version $major") . ': ' . scalar(@cases));
# Two overflows: the second is the one a count written wrapped by the
# first would put outside the ring.
my $read_sql = "SET statement_timeout = '20s';\n"
  . overflow_sql() . overflow_sql()
  . $views . "\n"
  . "SELECT count(*), max(md5(f::text)) FROM pg_contention_findings() f;\n"
  . "SELECT md5(pg_contention_report('1 day'));\n";

my @failed;
my $started = time;
my $log_offset = -s $node->logfile;
for my $case (@cases)
{
	my ($name, $content) = @$case;
	open(my $out, '>:raw', $file) or die "$file: $!";
	print $out $content;
	close $out;
	my $offset = -s $node->logfile;
	if (!$node->start(fail_ok => 1))
	{
		push @failed, "$name: the server did not start";
		last;
	}
	my ($stdout, $stderr, $timed_out) = ('', '', 0);
	my $rc = $node->psql('postgres', $read_sql, stdout => \$stdout, stderr => \$stderr,
		on_error_stop => 0, timeout => 60, timed_out => \$timed_out);
	my $log = slurp_file($node->logfile, $offset);
	my $failures = @failed;
	push @failed, "$name: the reads hung" if $timed_out;
	push @failed, "$name: psql exited with $rc: $stderr" if !$timed_out && $rc != 0;
	push @failed, "$name: $1" if $stderr =~ /(ERROR:.*)/;
	push @failed, "$name: the log says $1"
	  if $log =~ /(terminated by signal \d+|PANIC:.*|TRAP:.*|stuck spinlock.*)/;
	if (@failed > $failures)
	{
		# A server in trouble may not stop cleanly; the next file is ours.
		$node->stop('immediate', fail_ok => 1);
		last if @failed > 5;
		next;
	}
	$node->stop('fast');
}
my $elapsed = time - $started;
is(join("\n", @failed), '', scalar(@cases) . " mutated files ($structural field by field): no crash, no PANIC, no hang, no error");
note(sprintf('%d cases in %.0f s', scalar(@cases), $elapsed));
my $log = slurp_file($node->logfile, $log_offset);
my @lines = $log =~ /LOG:  (pg_contention: (?:ignored|kept|skipped|the|"))/g;
ok(scalar(@lines) > 0, 'the loader said what it ignored, clamped or skipped: ' . scalar(@lines) . ' lines');

# A file far larger than the stores: refused before anything is read.
open(my $out, '>:raw', $file) or die "$file: $!";
print $out $good;
close $out;
truncate($file, 64 * 1024 * 1024 * 1024) or die "truncate: $!";
my $offset = -s $node->logfile;
ok($node->start(fail_ok => 1), 'a 64 GB file: the server starts');
ok($node->log_contains(qr/LOG:  pg_contention: ignored "pg_stat_tmp\/pg_contention.stat": it is larger \(68719476736 bytes\) than stores of the sizes it names can write/, $offset),
	'one LOG line says why it was ignored');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '0',
	'with empty stores');
$node->stop;
ok(-s $file < 1024 * 1024, 'the save at shutdown replaced it');

# The file as saved still loads whole.
open($out, '>:raw', $file) or die "$file: $!";
print $out $good;
close $out;
$offset = -s $node->logfile;
$node->start;
ok($node->log_contains(qr/pg_contention: loaded 2 overflow events, \d+ statements, \d+ wait profile entries, \d+ seconds of history/, $offset),
	'the unmutated file loads');
ok(!$node->log_contains(qr/pg_contention: .*(implausible|skipped|ignored|end early|kept \d+ of)/, $offset),
	'with nothing clamped, skipped or left out');
$node->stop;

done_testing();
