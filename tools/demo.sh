#!/usr/bin/env bash
# The demonstration: build and install pg_contention, start a throwaway
# PostgreSQL cluster with it preloaded, reproduce the problem and show what
# pg_contention says about it.
#
#   tools/demo.sh
#
# As root it installs what is missing with apt-get, installs the extension
# into the system's PostgreSQL, and runs the cluster as the user "postgres".
# As another user it needs the packages already installed, and installs the
# extension into a private copy of the server instead.  The cluster lives in
# a temporary directory with its socket there and no TCP port; it is stopped
# and removed at the end, also on failure or Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/common.sh"

major=${PGC_PG_MAJOR:-15}
if [ "$(id -u)" -eq 0 ]; then
	apt_install "postgresql-$major" "postgresql-server-dev-$major" gcc make
fi
pg_config=$(pg_config_for "$major")

work=$(mktemp -d /tmp/pgc-demo.XXXXXX)
chmod 755 "$work"
bindir=$("$pg_config" --bindir)
as_user=()
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -f "$work/data/postmaster.pid" ]; then
		"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

if [ -t 1 ]; then
	say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi

say "1. Building pg_contention against PostgreSQL $major"
copy_checkout "$top" "$work/src"
make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; die "build failed"; }
if [ "$(id -u)" -eq 0 ]; then
	make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no install >>"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; die "install failed"; }
	echo "installed into $("$pg_config" --pkglibdir) and $("$pg_config" --sharedir)/extension"
	id postgres >/dev/null 2>&1 || die "user postgres is missing (it comes with postgresql-$major)"
	chown -R postgres: "$work"
	as_user=(runuser -u postgres --)
elif [ -w "$("$pg_config" --pkglibdir)" ] && [ -w "$("$pg_config" --sharedir)/extension" ]; then
	make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no install >>"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; die "install failed"; }
	echo "installed into $("$pg_config" --pkglibdir)"
else
	stage_server "$pg_config" "$work/stage"
	make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no install DESTDIR="$work/stage" >>"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; die "install failed"; }
	bindir=$work/stage$bindir
	echo "not root: installed into a private copy of the server in $work/stage"
fi

say "2. Starting a throwaway cluster with shared_preload_libraries = 'pg_contention'"
"${as_user[@]}" "$bindir/initdb" -D "$work/data" -A trust -U postgres --no-sync >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; die "initdb failed"; }
cat >>"$work/data/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_contention'
listen_addresses = ''
unix_socket_directories = '$work'
port = 5432
CONF
"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null ||
	{ cat "$work/server.log" >&2; die "the server did not start"; }
echo "cluster in $work/data, socket in $work"

psql_cmd=("${as_user[@]}" "$bindir/psql" -X -q -h "$work" -p 5432 -U postgres -d postgres -v ON_ERROR_STOP=1)
sql() { "${psql_cmd[@]}" "$@"; }

sql -c "CREATE EXTENSION pg_contention" \
	-c "CREATE TABLE demo_rows (id integer)"

# A session holds N savepoints that each write a row, then waits.
hold_savepoints() {
	local app=$1 n=$2 i
	{
		echo "SET application_name = '$app';"
		echo "BEGIN;"
		for ((i = 1; i <= n; i++)); do
			echo "SAVEPOINT s$i; INSERT INTO demo_rows VALUES ($i);"
		done
		echo "SELECT pg_sleep(600);"
	} | "${psql_cmd[@]}" >/dev/null 2>&1 &
	pids+=($!)
}

say "3. Two sessions open transactions: one with 70 savepoints that each write, one with 10"
hold_savepoints batch_loader_70 70
hold_savepoints careful_app_10 10
for _ in $(seq 1 100); do
	n=$(sql -At -c "SELECT count(*) FROM pg_contention_subxact WHERE application_name IN ('batch_loader_70', 'careful_app_10') AND state = 'active'")
	[ "$n" -eq 2 ] && break
	sleep 0.1
done
[ "$n" -eq 2 ] || die "the demo sessions did not start"

say "4. SELECT ... FROM pg_contention_subxact"
sql -c "SELECT pid, application_name, state, top_xid, subxact_count, subxact_overflowed,
	           left(query, 40) AS query
	      FROM pg_contention_subxact
	     WHERE pid <> pg_backend_pid()
	     ORDER BY subxact_overflowed DESC, subxact_count DESC"

cat <<'TXT'
batch_loader_70 has written in 70 subtransactions: its PGPROC caches only 64
subtransaction XIDs, so the cache has overflowed (subxact_overflowed = true).
While that lasts, every snapshot any session takes is "suboverflowed" and
visibility checks must look XIDs up in pg_subtrans (LWLock:SubtransSLRU).
careful_app_10 stays below the limit and costs nothing.  Advice: keep
transactions under 64 subtransactions, avoid EXCEPTION blocks in per-row
functions, commit batch loads in smaller pieces.
TXT

say "5. Another session queries while batch_loader_70 is overflowed"
sql -c "SET application_name = 'report'" \
	-c "INSERT INTO demo_rows VALUES (0)" \
	-c "SELECT count(*) AS report_rows FROM demo_rows" \
	-c "INSERT INTO demo_rows VALUES (0)" \
	-c "SELECT count(*) AS report_rows FROM demo_rows" >/dev/null
echo "(each INSERT commits, so the next SELECT takes a new snapshot)"

say "6. SELECT ... FROM pg_contention_overflow_events: who overflowed, with which statement"
sql -c "SELECT pid, application_name, nesting_depth, query_id, query
	      FROM pg_contention_overflow_events"

say "7. SELECT ... FROM pg_contention_statements: who paid for it"
sql -c "SELECT query_id, left(query, 46) AS first_text, calls, suboverflowed_calls,
	            max_subxacts, overflow_events
	      FROM pg_contention_statements
	     WHERE suboverflowed_calls > 0 OR overflow_events > 0
	     ORDER BY overflow_events DESC, suboverflowed_calls DESC"

cat <<'TXT'
The event names the INSERT that took batch_loader_70's 65th subtransaction
XID, at nesting depth 65, with the text of that very execution (VALUES (65)).
The statements view has one row per statement (query_id), labelled with the
text of its first execution (VALUES (1) here: the same statement, as the
query_id shows), counting all its executions.  The report's SELECT ran on
suboverflowed snapshots: the overflowed transaction was open and later
transactions (the report's INSERTs) had committed, so each of its
visibility checks of a recent XID could need a pg_subtrans lookup.
TXT

say "8. Ending the sessions and stopping the cluster"
sql -c "SELECT count(pg_terminate_backend(pid)) AS sessions_ended FROM pg_contention_subxact WHERE application_name IN ('batch_loader_70', 'careful_app_10')" >/dev/null
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
n=$(sql -At -c "SELECT count(*) FROM pg_contention_subxact WHERE pid <> pg_backend_pid()")
echo "backends with a transaction open now: $n"
"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null
echo "done: the cluster is stopped and $work is removed"
