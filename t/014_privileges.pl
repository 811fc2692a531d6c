# Privileges, every object: each view and function read by a superuser,
# a member of pg_read_all_stats, a member of pg_monitor, a plain role, and
# the role whose statements are shown.  Other roles' statement texts and
# query ids are masked as pg_stat_activity masks them; the administrative
# function is refused with SQLSTATE 42501.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test ();

my $node = PostgreSQL::Test::Cluster->new('privileges');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.overflow_ended_after = '1h'
max_prepared_transactions = 2
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_contention;
	CREATE ROLE owner_role LOGIN;
	CREATE ROLE plain_role LOGIN;
	CREATE ROLE stats_role LOGIN IN ROLE pg_read_all_stats;
	CREATE ROLE monitor_role LOGIN IN ROLE pg_monitor;
	CREATE TABLE priv_marker (id integer PRIMARY KEY, k integer);
	CREATE INDEX priv_marker_k ON priv_marker (k);
	INSERT INTO priv_marker SELECT g, g % 10 FROM generate_series(1, 1000) AS g;
	GRANT ALL ON priv_marker TO owner_role;
	ANALYZE priv_marker;
});

# The owner's traces: an overflow event, statements, an index scan with
# dead entries, and an open transaction that holds the horizon.
$node->safe_psql('postgres', "BEGIN;\n"
	  . join('', map { "SAVEPOINT s$_; INSERT INTO priv_marker VALUES (2000 + $_, 7);\n" } 1 .. 70)
	  . "COMMIT;", extra_params => [ '-U', 'owner_role' ]);
$node->safe_psql('postgres', 'DELETE FROM priv_marker WHERE k = 7',
	extra_params => [ '-U', 'owner_role' ]);
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'owner_role' ]);
$holder->query_safe('BEGIN; SELECT txid_current(); SELECT count(*) FROM priv_marker WHERE k = 3');
$node->safe_psql('postgres', 'SET enable_seqscan = off; SELECT * FROM priv_marker WHERE k = 7',
	extra_params => [ '-U', 'owner_role' ]);
# Slept until the sampler has seen a sleep (a busy machine can leave one
# sleep unsampled): a poll, not a fixed spell.
for (1 .. 100)
{
	$node->safe_psql('postgres', 'SELECT pg_sleep(0.3) FROM priv_marker WHERE id = 1',
		extra_params => [ '-U', 'owner_role' ]);
	last if $node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_contention_waits WHERE usename = 'owner_role' AND wait_event = 'PgSleep'") eq 't';
}

# What a viewer sees of the owner in each object: "shown" (text and query
# id), "masked" (neither), or something else that fails the test.
my %probe = (
	pg_contention_subxact => q{SELECT CASE WHEN bool_and(query LIKE '%priv_marker%') THEN 'shown'
		WHEN bool_and(query = '<insufficient privilege>' AND state IS NULL) THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_subxact WHERE usename = 'owner_role'},
	pg_contention_overflow_events => q{SELECT CASE
		WHEN bool_and(query LIKE 'INSERT INTO priv_marker%' AND query_id IS NOT NULL) THEN 'shown'
		WHEN bool_and(query = '<insufficient privilege>' AND query_id IS NULL) THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_overflow_events WHERE usename = 'owner_role'},
	pg_contention_statements => q{SELECT CASE
		WHEN bool_and(query <> '<insufficient privilege>' AND query_id IS NOT NULL) THEN 'shown'
		WHEN bool_and(query = '<insufficient privilege>' AND query_id IS NULL) THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_statements WHERE usename = 'owner_role'},
	pg_contention_index_scans => q{SELECT CASE
		WHEN bool_and(query LIKE '%priv_marker%' AND query_id IS NOT NULL) THEN 'shown'
		WHEN bool_and(query = '<insufficient privilege>' AND query_id IS NULL) THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_index_scans WHERE indexrelname = 'priv_marker_k'},
	pg_contention_horizon => q{SELECT CASE WHEN bool_and(query LIKE '%priv_marker%') THEN 'shown'
		WHEN bool_and(query = '<insufficient privilege>') THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_horizon WHERE usename = 'owner_role'},
	pg_contention_waits => q{SELECT CASE WHEN bool_and(query_id IS NOT NULL) THEN 'shown'
		WHEN bool_and(query_id IS NULL) THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_waits WHERE usename = 'owner_role' AND wait_event = 'PgSleep'},
	pg_contention_recent => q{SELECT CASE
		WHEN bool_and(query <> '<insufficient privilege>' AND query_id IS NOT NULL) THEN 'shown'
		WHEN bool_and(query = '<insufficient privilege>' AND query_id IS NULL) THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_recent(300) WHERE userid = 'owner_role'::regrole},
	pg_contention_findings => q{SELECT CASE
		WHEN bool_and(subject LIKE 'statement INSERT INTO priv_marker%(query id %') THEN 'shown'
		WHEN bool_and(subject LIKE 'statement <insufficient privilege> in pid %'
					  AND subject NOT LIKE '%query id%') THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_findings WHERE problem = 'subxact_overflow'},
	pg_contention_report => q{SELECT CASE WHEN r LIKE '%INSERT INTO priv_marker%' THEN 'shown'
		WHEN r LIKE '%<insufficient privilege>%' THEN 'masked' ELSE 'mixed' END
		FROM pg_contention_report() AS r},
);

# Every probe must have rows to judge, for everyone.
ok($node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_contention_waits WHERE usename = 'owner_role' AND wait_event = 'PgSleep'"),
	'the owner\'s pg_sleep is in the wait profile');

my %expect = (
	postgres => 'shown',	# the bootstrap superuser running the tests
	stats_role => 'shown',
	monitor_role => 'shown',
	owner_role => 'shown',
	plain_role => 'masked');
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
for my $viewer (sort keys %expect)
{
	my $role = $viewer eq 'postgres' ? $superuser : $viewer;
	for my $object (sort keys %probe)
	{
		my ($ret, $out, $err) = $node->psql('postgres', $probe{$object},
			extra_params => [ '-U', $role ]);
		is($out, $expect{$viewer}, "$object, read by $viewer: $expect{$viewer}")
		  or diag($err);
	}

	# The views without texts answer for everyone.
	for my $view (qw(pg_contention_info pg_contention_history pg_contention_sampler_status
		pg_contention_old_snapshot pg_contention_metrics))
	{
		my ($ret) = $node->psql('postgres', "SELECT * FROM $view", extra_params => [ '-U', $role ]);
		is($ret, 0, "$view answers $viewer");
	}

}

# The administrative function: superusers only (or an explicit GRANT).
for my $viewer (qw(stats_role monitor_role owner_role plain_role))
{
	my ($ret, $out, $err) = $node->psql('postgres', 'SELECT pg_contention_reset()',
		extra_params => [ '-U', $viewer, '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  42501: permission denied for function pg_contention_reset/,
		"pg_contention_reset() refused to $viewer with 42501");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '1',
	'nothing was reset');
$node->safe_psql('postgres', 'SELECT pg_contention_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_contention_overflow_events'), '0',
	'a superuser resets');

$holder->query_safe('COMMIT');
$holder->quit;
done_testing();
