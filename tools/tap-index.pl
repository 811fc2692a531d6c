#!/usr/bin/env perl
# The index of the TAP tests in doc/testing.md, made from the tests
# themselves: one line per t/NNN_name.pl, the first sentence of its
# opening comment (which goes on to say what the test reproduces and
# checks).  The page holds it between the markers
# "<!-- tap-index begin -->" and "<!-- tap-index end -->".
#
#   tools/tap-index.pl            print the index
#   tools/tap-index.pl --write    put it into doc/testing.md
#   tools/tap-index.pl --check    exit 1 if doc/testing.md's differs
#                                 (tools/check-docs.sh runs this)
use strict;
use warnings;
use FindBin;

my $top = "$FindBin::RealBin/..";
my $page = "$top/doc/testing.md";
my ($begin, $end) = ('<!-- tap-index begin -->', '<!-- tap-index end -->');

sub index_text
{
	my $out = '';
	for my $file (sort glob("$top/t/[0-9][0-9][0-9]_*.pl"))
	{
		open my $fh, '<', $file or die "$file: $!";
		my @lines;
		while (my $line = <$fh>)
		{
			last unless $line =~ /^#/;
			$line =~ s/^#\s?//;
			chomp $line;
			push @lines, $line;
		}
		close $fh;
		my $text = join(' ', @lines) =~ s/\s+/ /gr;
		# The first sentence: up to the first period followed by a space
		# (or the end), that is not the last dot of an ellipsis.
		my ($first) = $text =~ /^(.*?[^.]\.)(?:\s|$)/;
		die "$file: no opening comment\n" unless defined $first && $first ne '';
		(my $name = $file) =~ s{.*/t/}{t/};
		$out .= "- `$name`: $first\n";
	}
	return $out;
}

sub page_parts
{
	open my $fh, '<', $page or die "$page: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	my ($head, $body, $tail) = $text =~ /\A(.*\Q$begin\E\n)(.*?)(\Q$end\E.*)\z/s
	  or die "$page: the markers $begin and $end are missing\n";
	return ($head, $body, $tail);
}

my $mode = shift // '';
my $index = index_text();
if ($mode eq '--write')
{
	my ($head, undef, $tail) = page_parts();
	open my $fh, '>', $page or die "$page: $!";
	print $fh $head, "\n", $index, "\n", $tail;
	close $fh;
}
elsif ($mode eq '--check')
{
	my (undef, $body) = page_parts();
	if ($body ne "\n$index\n")
	{
		print STDERR "doc/testing.md: the TAP tests' index is not the tests' own: run tools/tap-index.pl --write\n";
		exit 1;
	}
}
elsif ($mode eq '')
{
	print $index;
}
else
{
	die "usage: tools/tap-index.pl [--write | --check]\n";
}
