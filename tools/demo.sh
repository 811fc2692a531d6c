#!/usr/bin/env bash
# The demonstration: build and install pg_contention, start a throwaway
# PostgreSQL cluster with it preloaded, reproduce the README's three
# incidents one after another and print pg_contention's findings after
# each (with the rows behind them), then run a healthy pgbench workload
# that produces none, and end with the incidents the server itself opened
# and closed meanwhile.  About two minutes on two cores.
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
# The cluster's commands run as postgres, who may not enter the checkout
# (a root-only temporary clone): they start from /, and every path here
# is absolute.
cd /
bindir=$("$pg_config" --bindir)
as_user=()
pids=()
cleanup() { remove_throwaway "$work"; }
trap cleanup EXIT INT TERM

if [ -t 1 ]; then
	say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi

say "1. Building pg_contention against PostgreSQL $major"
install_for_throwaway "$top" "$pg_config" "$work"

say "2. Starting a throwaway cluster with shared_preload_libraries = 'pg_contention'"
start_throwaway_cluster "$work" "log_line_prefix = '%m [%p] '"
echo "cluster in $work/data, socket in $work"

psql_cmd=("${as_user[@]}" "$bindir/psql" -X -q -h "$work" -p 5432 -U postgres -d postgres -v ON_ERROR_STOP=1)
sql() { "${psql_cmd[@]}" "$@"; }

pgbench_cmd=("${as_user[@]}" "$bindir/pgbench" -h "$work" -p 5432 -U postgres)
restart() {
	"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w -m fast restart >/dev/null ||
		{ cat "$work/server.log" >&2; die "the server did not restart"; }
}

# The findings as a DBA reads them, one block each; then what backs them.
findings() {
	sql -c '\x on' -c "SELECT severity, problem, subject, evidence, advice, since
	                     FROM pg_contention_findings $*" | sed 's/^-\[ RECORD \([0-9]*\) \]-*.*$/-[ finding \1 ]/'
}
# The findings' windows start afresh before each case (the incidents
# too: the server's log keeps them, and where each case's lines start).
start_case() {
	printf '%s\t%s\n' "$(wc -l <"$work/server.log")" "$1" >>"$work/cases"
	sql -c "SELECT pg_contention_reset()" >/dev/null
}
# The server closes an incident incident_close_after (3 s here) after its
# cause is gone: wait for the case's incidents (30 s at most), then list
# them as the client does.
incidents_after_fix() {
	local n
	for _ in $(seq 1 300); do
		n=$(sql -At -c "SELECT count(*) FROM pg_contention_incidents WHERE closed IS NULL")
		[ "$n" -eq 0 ] && break
		sleep 0.1
	done
	if [ "$n" -eq 0 ]; then
		echo "$1 (pg_contention incidents):"
	else
		echo "$n of the incidents are still open 30 s after the fix, which the demo expected closed (pg_contention incidents):"
	fi
	"${as_user[@]}" "$bindir/pg_contention" incidents -h "$work" -p 5432 -U postgres -d postgres | fold -s -w 160
}
# pg_stat_slru reaches the history once the clients have exited and the
# sampler has closed the next second.
settle() { sleep 2.2; }
tps() { sed -n 's/^tps = \([0-9]*\)\..*(without initial connection time)$/\1/p'; }
# Lines longer than $1 characters cut at a word, marked "...", never mid-word.
shorten() {
	awk -v w="$1" '{ if (length($0) > w) { s = substr($0, 1, w - 4); sub(/ [^ ]*$/, "", s); print s " ..." } else print }'
}

create_demo_tables sql
"${pgbench_cmd[@]}" -i -s 5 -q postgres >"$work/pgbench-init.log" 2>&1 ||
	{ cat "$work/pgbench-init.log" >&2; die "pgbench -i failed"; }

savepoint_script 30 >"$work/savepoints30.sql"
savepoint_script 90 >"$work/savepoints90.sql"
[ ${#as_user[@]} -eq 0 ] || chown postgres: "$work"/*.sql

say "3. Case 1: four clients, 30 savepoints per transaction, 15 seconds"
start_case "case 1, 30 savepoints"
tps30=$("${pgbench_cmd[@]}" -n -M prepared -c 4 -j 2 -T 15 -f "$work/savepoints30.sql" postgres 2>&1 | tps)
settle
lookups30=$(sql -At -c "SELECT coalesce(sum(subtrans_reader_lookups), 0) FROM pg_contention_history")
accesses30=$(sql -At -c "SELECT coalesce(sum(subtrans_lookups), 0) FROM pg_contention_history")
echo "throughput: $tps30 transactions/s ($((tps30 * 60)) SELECT and UPDATE statements/s); pg_subtrans lookups by readers: $lookups30 (Subtrans accesses, the savepoints' parent records included: $accesses30)"
findings
echo "(no finding: 30 subtransactions fit in each backend's cache of 64)"

say "4. Case 1: the same clients, 90 savepoints per transaction, 15 seconds"
start_case "case 1, 90 savepoints"
tps90=$("${pgbench_cmd[@]}" -n -M prepared -c 4 -j 2 -T 15 -f "$work/savepoints90.sql" postgres 2>&1 | tps)
settle
lookups90=$(sql -At -c "SELECT coalesce(sum(subtrans_reader_lookups), 0) FROM pg_contention_history")
accesses90=$(sql -At -c "SELECT coalesce(sum(subtrans_lookups), 0) FROM pg_contention_history")
echo "throughput: $tps90 transactions/s ($((tps90 * 180)) SELECT and UPDATE statements/s); pg_subtrans lookups by readers: $lookups90 (Subtrans accesses: $accesses90)"
# What the case shows on this machine, said plainly: a transaction of 90
# savepoints is three of 30, so statements per second compare, not
# transactions.
stmts30=$((tps30 * 60))
stmts90=$((tps90 * 180))
echo "What it cost here: $stmts90 statements/s against $stmts30 with 30 savepoints ($(( (stmts90 - stmts30) * 100 / (stmts30 > 0 ? stmts30 : 1) ))%), and pg_subtrans lookups by readers $lookups90 against $lookups30."
echo "(On $(nproc) cores four clients keep every core busy either way, so the throughput hides most of the cost: the 60% the README's case lost came from many cores whose readers queued on the SubtransSLRU lock.  The lookups above, and the waits in the table below, are the cost this machine shows.)"
findings
echo
echo "What backs them: the overflow events, who ran on suboverflowed snapshots, the cost per second"
sql -c "SELECT count(*) AS overflow_events_kept, count(DISTINCT pid) AS backends, min(nesting_depth) AS nesting_depth,
	           min(left(query, 40)) AS statement
	      FROM pg_contention_overflow_events" \
	-c "SELECT left(query, 40) AS statement, calls, suboverflowed_calls, max_subxacts, overflow_events
	      FROM pg_contention_statements
	     WHERE suboverflowed_calls > 0 OR overflow_events > 0
	     ORDER BY suboverflowed_calls DESC" \
	-c "SELECT count(*) AS seconds, max(max_overflowed_backends) AS overflowed_backends,
	           sum(subtrans_reader_lookups) AS subtrans_reader_lookups,
	           sum(subtrans_lookups) AS subtrans_accesses, sum(xids_assigned) AS xids_assigned,
	           sum(subtrans_slru_samples + subtrans_buffer_samples) AS subtrans_wait_samples,
	           round(avg(avg_active_backends)::numeric, 2) AS avg_active_backends
	      FROM pg_contention_history WHERE max_overflowed_backends > 0 OR subtrans_reader_lookups > 0"
echo
incidents_after_fix "pgbench's sessions have ended: the server closed the case's incidents by itself (the findings, still in their window, turn to info 'Ended at ...' 10 s after the overflow ended)"

say "5. Case 2: 100,000 dead versions of one customer's orders behind an open transaction"
start_case "case 2"
sql -c "ALTER SYSTEM SET pg_contention.horizon_min_age = '5s'" -c "SELECT pg_reload_conf()" >/dev/null
# The billing session reads its commands from a pipe the demo keeps open:
# it stays idle in transaction, as an application that forgot to commit.
mkfifo "$work/billing.fifo"
[ ${#as_user[@]} -eq 0 ] || chown postgres: "$work/billing.fifo"
"${psql_cmd[@]}" -f "$work/billing.fifo" >/dev/null 2>&1 &
pids+=($!)
# (Read-write: an open that cannot block, should psql have failed.)
exec 3<>"$work/billing.fifo"
echo "SET application_name = 'billing'; BEGIN; SELECT txid_current();" >&3
for _ in $(seq 1 100); do
	n=$(sql -At -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'billing' AND backend_xid IS NOT NULL")
	[ "$n" -eq 1 ] && break
	sleep 0.1
done
[ "$n" -eq 1 ] || die "the billing session did not start"
sql -c "INSERT INTO orders (customer, note) SELECT 42, 'cancelled' FROM generate_series(1, 100000)" \
	-c "DELETE FROM orders WHERE note = 'cancelled'"
echo "SELECT * FROM orders WHERE customer = 42;" >"$work/lookup.sql"
[ ${#as_user[@]} -eq 0 ] || chown postgres: "$work/lookup.sql"
"${pgbench_cmd[@]}" -n -c 2 -j 2 -T 5 -f "$work/lookup.sql" postgres >/dev/null 2>&1
echo "two clients looked up customer 42's orders for 5 seconds (the plan the server picks: $(sql -At -c "EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE customer = 42" | head -1))"
echo "the demo lowers pg_contention.horizon_min_age from 1 min to 5 s for this case (ALTER SYSTEM, and for the server's own evaluations), so as not to wait a minute"
sql -c "SET pg_contention.horizon_min_age = '5s'" -c '\x on' \
	-c "SELECT severity, problem, subject, evidence, advice, since FROM pg_contention_findings" |
	sed 's/^-\[ RECORD \([0-9]*\) \]-*.*$/-[ finding \1 ]/'
echo
echo "What backs them: the index scans and the holder of the horizon"
sql -c "SELECT indexrelname, left(query, 40) AS statement, scans, entries_read, dead_visits,
	           round(dead_ratio::numeric, 4) AS dead_ratio
	      FROM pg_contention_index_scans WHERE dead_visits > 0 ORDER BY dead_visits DESC LIMIT 3" \
	-c "SELECT left(query, 40) AS statement, calls, rows, round(blks_per_row::numeric, 1) AS blks_per_row
	      FROM pg_contention_statements WHERE query LIKE 'SELECT * FROM orders%'" \
	-c "SET pg_contention.horizon_min_age = '5s'" \
	-c "SELECT kind, holder, application_name, state, xmin_age, held_for, blocks_cleanup
	      FROM pg_contention_horizon"
echo
echo "The client, as a monitoring system runs it (exit code 0 ok, 1 warning, 2 critical):"
check_rc=0
"${as_user[@]}" "$bindir/pg_contention" check -h "$work" -p 5432 -U postgres -d postgres \
	>"$work/check.out" || check_rc=$?
fold -s -w 120 "$work/check.out"
echo "(exit code $check_rc)"
exec 3>&-	# the billing session reads the end of its input and exits
while [ "$(sql -At -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'billing'")" -ne 0 ]; do
	sleep 0.1
done
# The held horizon's incident closes by itself once the session is gone
# (the index's stays open until VACUUM removes its dead entries, below).
for _ in $(seq 1 300); do
	n=$(sql -At -c "SELECT count(*) FROM pg_contention_incidents
	                 WHERE problem = 'xmin_horizon_held' AND closed IS NULL")
	[ "$n" -eq 0 ] && break
	sleep 0.1
done
echo
echo "The incidents the server opened meanwhile, with no client polling (pg_contention incidents):"
"${as_user[@]}" "$bindir/pg_contention" incidents -h "$work" -p 5432 -U postgres -d postgres | fold -s -w 160
closed_id=$(sql -At -c "SELECT max(id) FROM pg_contention_incidents WHERE closed IS NOT NULL")
if [ -n "$closed_id" ]; then
	echo
	echo "The frozen report of the closed one (pg_contention report --incident $closed_id, its first lines):"
	"${as_user[@]}" "$bindir/pg_contention" report --incident "$closed_id" -h "$work" -p 5432 -U postgres \
		-d postgres >"$work/incident.txt"
	sed -n 4,9p "$work/incident.txt" | shorten 200
fi
echo
# Back to the default: case 3's and the healthy case's sessions are not
# judged by it.
sql -c "ALTER SYSTEM RESET pg_contention.horizon_min_age" -c "SELECT pg_reload_conf()" >/dev/null
sql -c "VACUUM orders"
echo
incidents_after_fix "after VACUUM orders the index's lookups visit no dead entries: its incident closed too"
echo
start_case "case 2, after the fix"
"${pgbench_cmd[@]}" -n -c 2 -j 2 -T 2 -f "$work/lookup.sql" postgres >/dev/null 2>&1
echo "after ending the billing session and VACUUM orders, the same lookup:"
sql -c "SELECT left(query, 40) AS statement, calls, rows, round(blks_per_row::numeric, 1) AS blks_per_row
	      FROM pg_contention_statements WHERE query LIKE 'SELECT * FROM orders%'" \
	-c "SELECT count(*) AS findings FROM pg_contention_findings"

version_num=$(sql -At -c "SHOW server_version_num")
if [ "$version_num" -lt 170000 ]; then
	say "6. Case 3: old_snapshot_threshold = 1min (a restart), four read-only clients for 10 seconds"
	echo "old_snapshot_threshold = '1min'" >>"$work/data/postgresql.conf"
	restart
	start_case "case 3"
	tps_on=$("${pgbench_cmd[@]}" -n -S -c 4 -j 2 -T 10 postgres 2>&1 | tps)
	settle
	echo "throughput: $tps_on transactions/s"
	findings
	echo
	echo "What backs it: the spinlock probes over the last 60 seconds"
	sql -c "SELECT probes, probe_p50_us, probe_p99_us, probe_max_us, lock_held_pct,
	               round(lock_ops_per_sec_estimate) AS ops_per_sec, round(cpu_share_of_active::numeric, 2) AS cpu_share
	          FROM pg_contention_old_snapshot"
	cat <<'TXT'
On two cores the spinlock is not contended: the finding is "info", a
configuration risk, with the measured pressure in its evidence; on the
field's 64-core server the same setting spent 61% of the CPU spinning,
which the probes and the lock-word occupancy measure, and the finding
turns into a warning or critical (thresholds: pg_contention.old_snapshot_*).
TXT
	sed -i "/^old_snapshot_threshold = '1min'$/d" "$work/data/postgresql.conf"
	restart
else
	say "6. Case 3: old_snapshot_threshold does not exist in PostgreSQL $major (removed in 17): nothing to show"
fi

say "7. A healthy server: pgbench's default TPC-B, eight clients for 15 seconds, an idle session beside"
start_case "the healthy server"
# An idle session, as an application's pool keeps them: connected, no
# transaction, no snapshot (it reads a pipe the demo keeps open).  A
# statement that runs all along, such as a SELECT pg_sleep(600), would
# not be idle: its snapshot holds back the pruning of the branches'
# updated rows, and within 15 seconds their lookups read a hundred
# buffers each, which hot_chain_scan rightly reports.
mkfifo "$work/idle.fifo"
[ ${#as_user[@]} -eq 0 ] || chown postgres: "$work/idle.fifo"
"${psql_cmd[@]}" -f "$work/idle.fifo" >/dev/null 2>&1 &
pids+=($!)
exec 5<>"$work/idle.fifo"
echo "SET application_name = 'idle_session';" >&5
tps_ok=$("${pgbench_cmd[@]}" -n -c 8 -j 2 -T 15 postgres 2>&1 | tps)
settle
echo "throughput: $tps_ok transactions/s"
sql -c "SELECT count(*) AS findings FROM pg_contention_findings" \
	-c "SELECT count(*) AS incidents FROM pg_contention_incidents" \
	-c "SELECT sum(calls) AS statements_measured, sum(rows) AS rows FROM pg_contention_statements"

say "8. The report for a ticket: SELECT pg_contention_report() (its first lines)"
sql -At -c "SELECT pg_contention_report()" | sed -n 1,12p	# reads it all: no "Broken pipe" from psql

say "9. The incidents the cases opened and closed, as the server logged them"
# Each case above starts with pg_contention_reset(), which empties the
# incidents too (their ids start again at 1); the server's log keeps one
# line per open, escalation and close.
echo "(each case starts with pg_contention_reset(), which empties pg_contention_incidents and starts its ids at 1 again; the server's log keeps them)"
printf '%s\t%s\n' "$(wc -l <"$work/server.log")" "end" >>"$work/cases"
while IFS=$'\t' read -r from label && IFS=$'\t' read -r to next <&4; do
	echo "$label:"
	# (sed prints one line of a range that ends before it starts.)
	[ "$to" -gt "$from" ] && sed -n "$((from + 1)),${to}p" "$work/server.log" | grep 'LOG:  pg_contention: incident ' |
		sed 's/^[0-9-]* \([0-9:]*\)[.0-9]* [^ ]* \[[0-9]*\] LOG:  pg_contention: /  \1 /' | shorten 200 ||
		echo "  (none)"
done <"$work/cases" 4< <(tail -n +2 "$work/cases")

say "10. Ending the sessions and stopping the cluster"
exec 5>&-	# the idle session reads the end of its input and exits
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
sql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'idle_session'" >/dev/null
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null
echo "done: the cluster is stopped and $work is removed"
