# Saving the stores' file streams it: the sampler writes a file of many
# statements several times larger than the memory it grows by while
# saving, and the postmaster saves and loads it across a restart.  A save
# that cannot write (a full disk, seen as a file size limit in the middle
# of the file; an unwritable pg_stat_tmp, at an interval and at shutdown) is a
# LOG line that keeps the previous file, never an ERROR or a FATAL, and
# the server stops cleanly.  A file of format 1 (pg_contention 1.3), in
# pg_stat/ where 1.3 wrote it, is still read, and the first save removes
# it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(crc32c wait_for_log_line);

sub proc_status_kb
{
	my ($pid, $field) = @_;
	my $status = slurp_file("/proc/$pid/status");
	return $status =~ /^$field:\s+(\d+) kB/m ? $1 : undef;
}

# The save interval set, and taken by the sampler: with it the sample
# period moves by a millisecond, which the sampler publishes when it has
# read its configuration again.  A save it began before ends before that;
# once published, a longer interval postpones a save that was due (it
# counts from the last save), so last_saved holds still from then on.
sub set_save_interval
{
	my ($node, $interval) = @_;
	my $period = $node->safe_psql('postgres', 'SELECT period_ms FROM pg_contention_sampler_status') == 10 ? 11 : 10;
	$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.save_interval = '$interval'");
	$node->safe_psql('postgres', "ALTER SYSTEM SET pg_contention.sample_period = $period");
	$node->reload;
	$node->poll_query_until('postgres', "SELECT period_ms = $period FROM pg_contention_sampler_status")
	  or die 'the sampler did not take the new settings';
}

# ---- many statements ----

# 9,000 statements of about 5 kB of text each: a file of about 55 MB.
my $node = PostgreSQL::Test::Cluster->new('streaming');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.max_statements = 10000
pg_contention.max_query_length = 8192
pg_contention.save_interval = '1h'
pg_contention.incident_interval = 0
});
$node->start;
my $file = $node->data_dir . '/pg_stat_tmp/pg_contention.stat';
$node->safe_psql('postgres', 'CREATE EXTENSION pg_contention');
# Distinct query ids from the types of five constants (8^5 shapes).
$node->safe_psql('postgres', q{
DO $$
DECLARE
	types text[] := ARRAY['int2', 'int4', 'int8', 'text', 'float4', 'float8', 'numeric', 'bool'];
	padding text := repeat('x', 5000);
BEGIN
	FOR i IN 0..8999 LOOP
		EXECUTE format('SELECT NULL::%s, NULL::%s, NULL::%s, NULL::%s, NULL::%s /* %s */',
					   types[i % 8 + 1], types[i / 8 % 8 + 1], types[i / 64 % 8 + 1],
					   types[i / 512 % 8 + 1], types[i / 4096 % 8 + 1], padding);
	END LOOP;
END $$});
my $many = q{SELECT count(*) FROM pg_contention_statements WHERE query LIKE 'SELECT NULL::%'};
is($node->safe_psql('postgres', $many), '9000', '9000 statements in the store');

# The sampler saves once; how much its address space grew at its peak.
my $sampler = $node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
my $peak_before = proc_status_kb($sampler, 'VmPeak');
ok(defined $peak_before, "the sampler's peak size is known");
my $marker = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
set_save_interval($node, '1s');
ok($node->poll_query_until('postgres', "SELECT last_saved > '$marker' FROM pg_contention_info"),
	'the sampler saved');
set_save_interval($node, '1h');
is($node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status'), $sampler,
	'the same sampler');
my $grown_kb = proc_status_kb($sampler, 'VmPeak') - $peak_before;
my $size = -s $file;
note("file: $size bytes; the sampler's peak grew by $grown_kb kB");
cmp_ok($size, '>', 40 * 1024 * 1024, 'the file is over 40 MB');
cmp_ok($grown_kb * 1024, '<', $size / 4,
	'the sampler grew by less than a quarter of the file: it streamed it');
ok(!$node->log_contains(qr/could not (save|write|create)/), 'no failure logged');

# The postmaster saves it at shutdown the same way, and loads it.
my $offset = -s $node->logfile;
$node->restart;
is($node->safe_psql('postgres', $many), '9000', 'after a restart: the 9000 statements');
ok($node->log_contains(qr/pg_contention: loaded \d+ overflow events, \d+ statements/, $offset),
	'one LOG line says what was loaded');

# A write failing in the middle of the file (a file size limit of 1 MB on
# the sampler: EFBIG, as on a full disk): LOG, the previous file stays.
SKIP:
{
	skip 'prlimit is not installed', 5 if system('prlimit --version >/dev/null 2>&1') != 0;
	$sampler = $node->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
	system('prlimit', "--pid=$sampler", '--fsize=1048576') == 0 or die "prlimit: $?";
	my ($saved, $mtime) = ($node->safe_psql('postgres', 'SELECT last_saved FROM pg_contention_info'),
		(stat $file)[9]);
	$offset = -s $node->logfile;
	set_save_interval($node, '1s');
	my $re = qr/LOG:  pg_contention: could not write "pg_stat_tmp\/pg_contention.stat.tmp": File too large/;
	$offset = wait_for_log_line($node, $re, $offset);
	ok(defined $offset, 'a save that cannot write the whole file: a LOG line');
	ok(defined wait_for_log_line($node, $re, $offset), 'and again at the next interval');
	set_save_interval($node, '1h');
	is($node->safe_psql('postgres', 'SELECT pid, last_saved FROM pg_contention_info, pg_contention_sampler_status'),
		"$sampler|$saved", 'the same sampler, and last_saved unchanged');
	is((stat $file)[9], $mtime, 'the previous file is kept');
	ok(!$node->log_contains(qr/(ERROR|FATAL):/, $offset), 'no ERROR, no FATAL');
}
$node->stop;

# ---- an unwritable pg_stat_tmp ----

SKIP:
{
	skip 'root ignores directory permissions', 15 if $> == 0;
	my $small = PostgreSQL::Test::Cluster->new('unwritable');
	$small->init;
	# No incidents worker: an incident opening asks for a save at once,
	# whatever the interval, and would write the file the test keeps.
	$small->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.save_interval = '1s'
pg_contention.incident_interval = 0
});
	$small->start;
	my $dir = $small->data_dir . '/pg_stat_tmp';
	$file = "$dir/pg_contention.stat";
	$small->safe_psql('postgres', 'CREATE EXTENSION pg_contention; CREATE TABLE t (id int)');
	$small->safe_psql('postgres', "BEGIN;\n"
		  . join('', map { "SAVEPOINT s$_; INSERT INTO t VALUES ($_);\n" } 1 .. 70)
		  . "COMMIT;");
	$marker = $small->safe_psql('postgres', 'SELECT clock_timestamp()');
	ok($small->poll_query_until('postgres', "SELECT last_saved > '$marker' FROM pg_contention_info"),
		'saved with one overflow event');
	set_save_interval($small, '1h');
	my $saved = $small->safe_psql('postgres', 'SELECT last_saved FROM pg_contention_info');
	my $good = slurp_file($file);

	# At an interval.
	$sampler = $small->safe_psql('postgres', 'SELECT pid FROM pg_contention_sampler_status');
	chmod 0500, $dir or die "chmod $dir: $!";
	$offset = -s $small->logfile;
	set_save_interval($small, '1s');
	my $re = qr/LOG:  pg_contention: could not create "pg_stat_tmp\/pg_contention.stat.tmp": Permission denied/;
	$offset = wait_for_log_line($small, $re, $offset);
	ok(defined $offset, 'pg_stat_tmp unwritable: a LOG line at an interval');
	ok(defined wait_for_log_line($small, $re, $offset), 'and again at the next');
	is($small->safe_psql('postgres', 'SELECT pid, last_saved FROM pg_contention_info, pg_contention_sampler_status'),
		"$sampler|$saved", 'the same sampler, and last_saved unchanged');
	ok(!$small->log_contains(qr/(ERROR|FATAL):/), 'no ERROR, no FATAL');

	# At shutdown.
	$offset = -s $small->logfile;
	$small->stop;
	ok($small->log_contains(qr/database system is shut down/, $offset), 'the server stopped');
	ok($small->log_contains($re, $offset), 'pg_stat_tmp unwritable: a LOG line at shutdown');
	ok(!$small->log_contains(qr/(FATAL|PANIC):/, $offset), 'no FATAL at shutdown');
	chmod 0700, $dir or die "chmod $dir: $!";
	ok(slurp_file($file) eq $good, 'the previous file is kept');
	ok(!-e "$file.tmp", 'no temporary file is left');

	$small->start;
	is($small->safe_psql('postgres',
		"SELECT loaded_file_saved_at = '$saved' FROM pg_contention_info"), 't',
		'the previous file is loaded at the next start');

	# A file of format 1 (each section's entry before its records), made
	# from the one just saved and put where 1.3 wrote it, loads the same;
	# the save at shutdown writes the new file and removes the old one.
	my $events = q{SELECT count(*) FROM pg_contention_overflow_events};
	is($small->safe_psql('postgres', $events), '1', 'one event');
	$small->stop;
	my $old = to_format_1(slurp_file($file));
	my $legacy = $small->data_dir . '/pg_stat/pg_contention.stat';
	unlink $file or die "$file: $!";
	open(my $fh, '>', $legacy) or die "$legacy: $!";
	binmode $fh;
	print $fh $old;
	close $fh;
	$offset = -s $small->logfile;
	$small->start;
	ok($small->log_contains(qr/pg_contention: loaded 1 overflow events, \d+ statements.* from "pg_stat\/pg_contention.stat"/, $offset),
		'a format-1 file in pg_stat is loaded') or diag(slurp_file($small->logfile, $offset));
	is($small->safe_psql('postgres', $events), '1', 'with its event');
	$small->stop;
	ok(-e $file && !-e $legacy, 'the save wrote the new file and removed the old one');
}

# Format 3: header (64 bytes: format at 4, nsections at 12; format 1's
# were the first 56), the sections' records, a directory of (id,
# record_size, count, bytes), the CRC.
sub to_format_1
{
	my ($data) = @_;
	my $nsections = unpack('V', substr($data, 12, 4));
	my $dir_at = length($data) - 4 - 24 * $nsections;
	my $out = substr($data, 0, 4) . pack('V', 1) . substr($data, 8, 48);
	my $pos = 64;
	for my $s (0 .. $nsections - 1)
	{
		my $entry = substr($data, $dir_at + 24 * $s, 24);
		my $bytes = unpack('Q<', substr($entry, 16, 8));
		$out .= $entry . substr($data, $pos, $bytes);
		$pos += $bytes;
	}
	die "sections do not end at the directory" if $pos != $dir_at;
	return $out . pack('V', crc32c($out));
}

done_testing();
