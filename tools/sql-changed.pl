#!/usr/bin/perl
# Which SQL sources an update script must carry (tools/sql.sh).
#
#   tools/sql-changed.pl PREVIOUS STEP FILE...
#
# PREVIOUS is the last release's install script, STEP the hand-written
# step of the update (src/sql/updates/), FILE... the sources of the new
# version in their order.  Prints the files whose objects changed since
# PREVIOUS, one per line, in the order given: a file is printed when one
# of its statements (CREATE OR REPLACE, GRANT, REVOKE, COMMENT) is not in
# PREVIOUS as it is now, or when it creates an object STEP drops.  Two
# statements are the same when they are the same outside comments and
# runs of white space (CREATE OR REPLACE is CREATE); a function's body
# must be the same to the byte.
#
# Exits 1, naming them on stderr, when an object of PREVIOUS is in no FILE
# and STEP does not drop it: the update would leave it behind.
use strict;
use warnings;

die "usage: tools/sql-changed.pl PREVIOUS STEP FILE...\n" if @ARGV < 2;
my ($previous, $step, @files) = @ARGV;

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "tools/sql-changed.pl: cannot read $path: $!\n";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# The statements of a script, each normalised: comments gone, white space
# outside quotes one space, CREATE OR REPLACE as CREATE.  psql's
# backslash lines (\echo ... \quit) are not statements.
sub statements
{
	my ($text) = @_;
	$text =~ s/^\\[^\n]*\n//mg;
	my (@out, $cur);
	$cur = '';
	my $len = length $text;
	my $i = 0;
	while ($i < $len)
	{
		my $rest = substr($text, $i);
		if ($rest =~ /^--[^\n]*/)
		{
			$i += length $&;
		}
		elsif ($rest =~ m{^/\*.*?\*/}s)
		{
			$i += length $&;
		}
		elsif ($rest =~ /^(\$[A-Za-z_]*\$)/)
		{
			my $tag = $1;
			my $end = index($text, $tag, $i + length $tag);
			die "tools/sql-changed.pl: unterminated $tag quote\n" if $end < 0;
			$cur .= substr($text, $i, $end + length($tag) - $i);
			$i = $end + length $tag;
		}
		elsif ($rest =~ /^'(?:[^']|'')*'/ || $rest =~ /^"(?:[^"]|"")*"/)
		{
			$cur .= $&;
			$i += length $&;
		}
		elsif ($rest =~ /^\s+/)
		{
			$cur .= ' ';
			$i += length $&;
		}
		elsif (substr($text, $i, 1) eq ';')
		{
			push @out, normalise($cur);
			$cur = '';
			$i++;
		}
		else
		{
			$cur .= substr($text, $i, 1);
			$i++;
		}
	}
	push @out, normalise($cur);
	return grep { $_ ne '' } @out;
}

sub normalise
{
	my ($s) = @_;
	$s =~ s/^ +| +$//g;
	$s =~ s/^CREATE OR REPLACE /CREATE /i;
	return $s;
}

# The object a CREATE or DROP names: "function NAME" or "view NAME".
sub created
{
	my ($s) = @_;
	return lc("$1 $2") if $s =~ /^CREATE (FUNCTION|VIEW|PROCEDURE|TYPE|TABLE|AGGREGATE) ([^\s(]+)/i;
	return undef;
}

sub dropped
{
	my ($s) = @_;
	return lc("$1 $2") if $s =~ /^DROP (FUNCTION|VIEW|PROCEDURE|TYPE|TABLE|AGGREGATE) (?:IF EXISTS )?([^\s(;]+)/i;
	return undef;
}

my %before = map { $_ => 1 } statements(slurp($previous));
my %drops = map { $_ => 1 } grep { defined } map { dropped($_) } statements(slurp($step));
my %now;
for my $file (@files)
{
	my $changed = 0;
	for my $s (statements(slurp($file)))
	{
		my $object = created($s);
		$now{$object} = 1 if defined $object;
		$changed = 1 if !$before{$s} || (defined $object && $drops{$object});
	}
	print "$file\n" if $changed;
}

my @left = sort grep { !$now{$_} && !$drops{$_} } grep { defined } map { created($_) } keys %before;
if (@left)
{
	print STDERR "tools/sql-changed.pl: in $previous but in no source and not dropped by $step: @left\n";
	exit 1;
}
exit 0;
