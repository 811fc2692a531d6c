# Who reads what an incident froze (issue 45, items 2 and 5).  alice, a
# plain role, changes her password in a transaction she leaves open;
# mallory, another plain role, holds a snapshot so that the incident worker
# opens an incident naming her, whose frozen holders include alice's
# statement.  mallory reads her own incident in every way there is (the
# view, its details, the SQL report, the client's text and HTML reports):
# alice's statement is masked everywhere, mallory's own holder is shown,
# the composed texts are masked, before and after alice's session ends and
# after a restart (the incident read back from the stores' file).  A
# member of pg_read_all_stats reads alice's statement.
#
# Reports are for tickets: by default every statement in them is
# normalized (the holders', the overflow events', the sessions') and the
# findings leave out their worst execution's constants; with_values (the
# client's --with-values) shows them, to a reader who may see them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/lib";
use PgContention::Test qw(run_client churn);

my $secret = 'alice-secret-2291';
my $node = PostgreSQL::Test::Cluster->new('who_reads');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_contention'
pg_contention.incident_interval = 1s
pg_contention.incident_database = 'shop'
pg_contention.horizon_min_age = 1s
pg_contention.dead_visits_warning = 50
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE mallory LOGIN;
	CREATE ROLE stats LOGIN IN ROLE pg_read_all_stats;
	CREATE DATABASE shop;
});
$node->safe_psql('shop', q{
	CREATE EXTENSION pg_contention;
	CREATE TABLE items (id integer PRIMARY KEY, k integer NOT NULL);
	CREATE INDEX items_k ON items (k);
	INSERT INTO items SELECT i, i % 100 FROM generate_series(1, 20000) AS i;
	CREATE TABLE side (v integer);
	GRANT ALL ON items, side TO alice, mallory;
});
$node->safe_psql('shop', 'VACUUM (ANALYZE) items');

sub as
{
	my ($role, $sql) = @_;
	return $node->safe_psql('shop', $sql, extra_params => [ '-U', $role ]);
}

# alice's open transaction: her password, in the text of her last statement,
# with a comment that plays a JSON document's end of string and members
# (mallory's role among them) and a backslash: the masked value is the
# whole text, as the parser reads it, not what the text pretends.
my $mallory_oid = $node->safe_psql('shop', "SELECT 'mallory'::regrole::oid");
my $alice = $node->background_psql('shop', extra_params => [ '-U', 'alice' ]);
$alice->query_safe("BEGIN; INSERT INTO side VALUES (1); "
	  . "ALTER ROLE alice PASSWORD '$secret' /*\",\"userid\":$mallory_oid,\"\\\\\"}*/");
# alice's lookups of dead entries (with a constant, 7), and an overflow
# event of hers whose statement carries a constant, 371122.
as('alice', 'DELETE FROM items WHERE k = 7');
as('alice', "SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT sum(id) FROM items WHERE k = 7;" x 3);
as('alice', "BEGIN;\n" . join('', map { "SAVEPOINT s$_; INSERT INTO side VALUES (371122);\n" } 1 .. 70) . 'COMMIT;');
# mallory's snapshot, with her own statement last.
my $mallory = $node->background_psql('shop', extra_params => [ '-U', 'mallory' ]);
my $mallory_pid = $mallory->query_safe('SELECT pg_backend_pid()');
$mallory_pid =~ s/\s+//g;
$mallory->query_safe('BEGIN; SELECT txid_current(); SELECT 1 AS mallory_own_marker');
churn($node, 'shop');			# what the holds cost
ok($node->poll_query_until('shop', qq{
	SELECT count(*) = 1 FROM pg_contention_incidents
	 WHERE problem = 'xmin_horizon_held' AND details ->> 'key' = 'backend $mallory_pid'
	   AND details -> 'holders' \@> '[{"application_name": "037_who_reads.pl"}]'
	   AND details::text LIKE '%$secret%'}),
	'mallory\'s incident opened, its frozen holders with alice\'s statement (as a superuser reads them)');
my $id = $node->safe_psql('shop',
	"SELECT id FROM pg_contention_incidents WHERE details ->> 'key' = 'backend $mallory_pid'");
my @ids = split /\n/, $node->safe_psql('shop', 'SELECT id FROM pg_contention_incidents ORDER BY id');

# Everything mallory can read of the incidents, in every form.
sub mallory_reads
{
	my ($when) = @_;
	my $all = as('mallory', 'SELECT string_agg(i::text, E\'\n\') FROM pg_contention_incidents AS i');
	unlike($all, qr/\Q$secret\E/, "$when: mallory reads no trace of alice's statement in any incident");
	is(as('mallory', "SELECT subject || ' ' || evidence || ' ' || advice || ' ' || (details ->> 'masked')
		|| ' ' || (details -> 'finding')::text || ' ' || (details #>> '{peak,subject}')
		FROM pg_contention_incidents WHERE id = $id"),
		'<insufficient privilege> <insufficient privilege> <insufficient privilege> true {"masked": true} <insufficient privilege>',
		"$when: the texts the worker composed from every role's statements are masked, in her own incident too");
	is(as('mallory', qq{SELECT string_agg(r.rolname || ': ' || rtrim(h ->> 'query', E';\n ')
		|| ' ' || coalesce(h ->> 'state', 'null'), ', ' ORDER BY r.rolname)
		FROM pg_contention_incidents AS i, jsonb_array_elements(i.details -> 'holders') AS h
		LEFT JOIN pg_roles AS r ON r.oid = (h ->> 'userid')::oid
		WHERE i.id = $id AND r.rolname IN ('alice', 'mallory')}),
		'alice: <insufficient privilege> null, mallory: SELECT 1 AS mallory_own_marker idle in transaction',
		"$when: of the frozen holders, her own shown, alice's masked (statement and state)");
	is(as('mallory', qq{SELECT count(*) FILTER (WHERE s ->> 'query' <> '<insufficient privilege>' OR s ->> 'query_id' IS NOT NULL)
		FROM pg_contention_incidents AS i, jsonb_array_elements(i.details -> 'statements') AS s
		WHERE (s ->> 'userid')::oid = 'alice'::regrole}), '0',
		"$when: alice's frozen statements masked, their query ids too");
	for my $incident (@ids)
	{
		unlike(as('mallory', "SELECT pg_contention_report(incident => $incident, with_values => true)"),
			qr/\Q$secret\E|371122/, "$when: incident $incident\'s report, with values, has none of alice's");
	}
	my ($rc, $out, $err) = client('mallory', 'report', "--incident=$id", '--with-values');
	is($rc, 0, "$when: mallory's client report --incident --with-values runs") or diag($err);
	unlike($out, qr/\Q$secret\E/, "$when: ... and shows nothing of alice's");
	like($out, qr/mallory_own_marker/, "$when: ... but her own holder's statement");
	($rc, $out, $err) = client('mallory', 'report', "--incident=$id", '--with-values', '--html=-', '--text');
	is($rc, 0, "$when: the same as an HTML page") or diag($err);
	unlike($out, qr/\Q$secret\E/, "$when: ... nothing of alice's in it either");
	return;
}

sub client
{
	my ($user, @args) = @_;
	local $ENV{PGDATABASE} = 'shop';
	local $ENV{PGUSER} = $user;
	return run_client($node, @args);
}

mallory_reads('alice still in her transaction');
like(as('stats', "SELECT details::text FROM pg_contention_incidents WHERE id = $id"), qr/ALTER ROLE alice PASSWORD '\Q$secret\E'/,
	'a member of pg_read_all_stats reads alice\'s frozen statement');

# ---- Reports: normalized unless asked, what the reader may see either way.
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my $report = $node->safe_psql('shop', 'SELECT pg_contention_report()');
unlike($report, qr/\Q$secret\E/, 'the live report: the holders\' statements normalized (no password)');
like($report, qr/ALTER ROLE alice PASSWORD \$1/, '... as ALTER ROLE alice PASSWORD $1');
unlike($report, qr/the worst execution ran with/, '... and the findings without the worst execution\'s constants');
like($report, qr/dead_tuple_index_scan/, '... among them the dead index entries\' finding');
$report = $node->safe_psql('shop', 'SELECT pg_contention_report(with_values => true)');
like($report, qr/PASSWORD '\Q$secret\E'/, 'with_values: the holder\'s statement as it ran');
like($report, qr/the worst execution ran with \$1 = 7/, 'with_values: the worst execution\'s constant');
$report = $node->safe_psql('shop', "SELECT pg_contention_report(incident => $id)");
unlike($report, qr/\Q$secret\E/, 'an incident\'s report: the frozen holders normalized');
like($node->safe_psql('shop', "SELECT pg_contention_report(incident => $id, with_values => true)"),
	qr/\Q$secret\E/, '... with_values: as they were frozen');
my ($rc, $out, $err) = client($superuser, 'report', '--html=-');
is($rc, 0, 'the client\'s HTML report') or diag($err);
unlike($out, qr/371122|\Q$secret\E|the worst execution ran with/,
	'... no constant: overflow events, holders and findings normalized');
like($out, qr/INSERT INTO side VALUES \(\$1\)/, '... the overflow event\'s statement as INSERT INTO side VALUES ($1)');
($rc, $out, $err) = client($superuser, 'report', '--html=-', '--with-values');
like($out, qr/371122/, '--with-values: the overflow event\'s constant');
like($out, qr/\Q$secret\E/, '--with-values: the holder\'s password');
($rc, $out, $err) = client($superuser, 'report', "--incident=$id");
unlike($out, qr/\Q$secret\E/, 'the client\'s report of the incident: normalized');
($rc, $out, $err) = client($superuser, 'report', "--incident=$id", '--with-values');
like($out, qr/\Q$secret\E/, '... with --with-values: as frozen');
($rc, $out, $err) = client('mallory', 'report', '--with-values');
unlike($out, qr/\Q$secret\E|371122/, 'mallory\'s live report with values: none of alice\'s');

# ---- Later: alice's session has ended; the server restarted since.
$alice->query_safe('ROLLBACK');
$alice->quit;
mallory_reads('alice\'s session ended');
$mallory->quit;
$node->restart;
is($node->safe_psql('shop', "SELECT count(*) FROM pg_contention_incidents WHERE id = $id"), '1',
	'the incident is back after the restart');
mallory_reads('after a restart');

$node->stop;
done_testing();
