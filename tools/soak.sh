#!/usr/bin/env bash
# The soak: many short-lived connections running savepoint workloads for a
# set time against a server with pg_contention sampling every millisecond;
# then every count must add up and the log must be clean.  Not part of
# tools/test.sh (it takes minutes and loads the machine); its figures go to
# BENCHMARKS.md.
#
#   tools/soak.sh                    200 connections, 300 seconds
#   PGC_SOAK_CLIENTS=50 PGC_SOAK_SECONDS=60 tools/soak.sh
#
# pgbench -C opens a new connection for every transaction, spread over
# three scripts: a transaction that overflows its subtransaction cache (70
# writing savepoints: one overflow event each), one that stays under it (10
# savepoints), and a lookup.  Checked afterwards: overflow events written =
# overflowing transactions run; calls of each statement = the executions
# pgbench reports; no ERROR, FATAL, PANIC or failed assertion in the log
# (apart from the clients' own disconnections); the sampler still runs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/common.sh"

major=${PGC_PG_MAJOR:-15}
clients=${PGC_SOAK_CLIENTS:-200}
seconds=${PGC_SOAK_SECONDS:-300}
[ "$(id -u)" -eq 0 ] && apt_install "postgresql-$major" "postgresql-server-dev-$major" gcc make
pg_config=$(pg_config_for "$major")

work=$(mktemp -d /tmp/pgc-soak.XXXXXX)
chmod 755 "$work"
as_user=()
bindir=$work/stage$("$pg_config" --bindir)
cleanup() {
	[ -f "$work/data/postmaster.pid" ] &&
		"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1
	[ -n "${PGC_KEEP:-}" ] && log "keeping $work" || rm -rf "$work"
}
trap cleanup EXIT INT TERM

copy_checkout "$top" "$work/src"
stage_server "$pg_config" "$work/stage"
if [ "$(id -u)" -eq 0 ]; then
	chown -R postgres: "$work"
	as_user=(runuser -u postgres --)
fi
run() { "${as_user[@]}" env HOME="$work" "$@"; }
run make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no >"$work/build.log" 2>&1 &&
	run make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no install DESTDIR="$work/stage" >>"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; die "build failed"; }

run "$bindir/initdb" -D "$work/data" -U postgres -A trust --no-sync >/dev/null
cat >>"$work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
port = 54704
max_connections = $((clients + 20))
shared_preload_libraries = 'pg_contention'
pg_contention.sample_period = 1
fsync = off
synchronous_commit = off
CONF
run "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null
psql_() { run "$bindir/psql" -X -q -At -h "$work" -p 54704 -U postgres -d postgres "$@"; }
psql_ -c "CREATE EXTENSION pg_contention" -c "CREATE TABLE soak (id integer, v integer)" \
	-c "CREATE TABLE lookup AS SELECT g AS id FROM generate_series(1, 10000) AS g" \
	-c "CREATE INDEX ON lookup (id)" -c "ANALYZE lookup" >/dev/null

{
	echo "BEGIN;"
	for i in $(seq 1 70); do echo "SAVEPOINT s; INSERT INTO soak VALUES ($i, 70);"; done
	echo "COMMIT;"
} >"$work/overflow.sql"
{
	echo "BEGIN;"
	for i in $(seq 1 10); do echo "SAVEPOINT s; INSERT INTO soak VALUES ($i, 10);"; done
	echo "COMMIT;"
} >"$work/under.sql"
{
	echo '\set id random(1, 10000)'
	echo "SELECT * FROM lookup WHERE id = :id;"
} >"$work/lookup.sql"
chmod 644 "$work"/*.sql

sampler_pid=$(psql_ -c "SELECT pid FROM pg_contention_sampler_status")
cpu_before=$(awk '{print $1}' "/proc/$sampler_pid/schedstat")
log "soak: $clients clients, a new connection per transaction, for $seconds s, sampling every 1 ms"
run "$bindir/pgbench" -n -C -c "$clients" -j 2 -T "$seconds" \
	-f "$work/overflow.sql@1" -f "$work/under.sql@1" -f "$work/lookup.sql@8" \
	-h "$work" -p 54704 -U postgres postgres >"$work/pgbench.out" 2>&1 || true
cpu_after=$(awk '{print $1}' "/proc/$sampler_pid/schedstat" 2>/dev/null || echo 0)

# pgbench's per-script transaction counts ("SQL script N: ... - N transactions").
txns() { sed -n "/^SQL script $1:/,/^SQL script/p" "$work/pgbench.out" | sed -n 's/^ - \([0-9]*\) transactions.*/\1/p' | head -n 1; }
overflow_txns=$(txns 1)
under_txns=$(txns 2)
lookup_txns=$(txns 3)
failed_txns=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.out")
[ -n "$overflow_txns" ] || { cat "$work/pgbench.out" >&2; die "pgbench reported nothing"; }

events=$(psql_ -c "SELECT events_written FROM pg_contention_info")
inserts=$(psql_ -c "SELECT coalesce(sum(calls), 0) FROM pg_contention_statements WHERE query LIKE 'INSERT INTO soak%'")
lookups=$(psql_ -c "SELECT coalesce(sum(calls), 0) FROM pg_contention_statements WHERE query LIKE 'SELECT * FROM lookup%'")
rows=$(psql_ -c "SELECT count(*) FROM soak")
running=$(psql_ -c "SELECT running AND pid = $sampler_pid FROM pg_contention_sampler_status")
ticks=$(psql_ -c "SELECT ticks || ' ticks, mean ' || round(mean_tick_us::numeric, 1) || ' us, max ' || round(max_tick_us::numeric) || ' us' FROM pg_contention_sampler_status")
problems=$(grep -E 'ERROR|FATAL|PANIC|TRAP:|terminated by signal' "$work/server.log" |
	grep -vE 'connection to client lost|could not receive data from client|unexpected EOF on client connection' || true)

expected_inserts=$((overflow_txns * 70 + under_txns * 10))
echo "soak: $clients clients, $seconds s, a new connection per transaction, 1 ms sampling"
echo "  transactions: $overflow_txns overflowing, $under_txns under the cache, $lookup_txns lookups (failed: ${failed_txns:-0})"
echo "  overflow events written: $events (expected $overflow_txns)"
echo "  INSERT calls counted: $inserts (expected $expected_inserts; rows in the table: $rows)"
echo "  lookup calls counted: $lookups (expected $lookup_txns)"
echo "  sampler: same process throughout: $running; $ticks; CPU $(( (cpu_after - cpu_before) / 1000000 )) ms over the run"
echo "  log lines with ERROR, FATAL, PANIC or a crash: $(printf '%s' "$problems" | grep -c . || true)"
ok=1
[ "$events" = "$overflow_txns" ] || ok=0
[ "$inserts" = "$expected_inserts" ] || ok=0
[ "$lookups" = "$lookup_txns" ] || ok=0
[ "$rows" = "$expected_inserts" ] || ok=0
[ "$running" = t ] || ok=0
[ -z "$problems" ] || { printf '%s\n' "$problems" | head -n 20 >&2; ok=0; }
if [ "$ok" -eq 1 ]; then echo "soak: PASSED"; else echo "soak: FAILED"; exit 1; fi
