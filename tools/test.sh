#!/usr/bin/env bash
# Run pg_contention's tests and end with "N passed, N failed, N skipped".
#
#   tools/test.sh          the loop to run after a change: the tree checks,
#                          then the whole suite (regression, isolation, TAP)
#                          on this machine's own PostgreSQL (15 on Debian 12);
#                          about 9 minutes on 2 cores
#   tools/test.sh --all    the matrix, which CI runs (.ci/run): the tree
#                          checks, the suite on PostgreSQL 13, 17 and 18 in
#                          Debian chroots and on an assertion-enabled 15 with
#                          sqlsmith, PostgreSQL 15's own regression and
#                          isolation schedules with pg_contention (against a
#                          kept run without it),
#                          and the Debian package built, installed, tested,
#                          removed; two parts at a time, about 27
#                          minutes on 2 cores (about 33 from nothing)
#
#   PGC_PG_VERSIONS="13 17" tools/test.sh --all   only those versions
#   PGC_CORE=0, PGC_CASSERT=0, PGC_PACKAGE=0      --all without that part
#   PGC_RUNNERS=1 tools/test.sh --all             one part at a time (default 2)
#
# The version this machine's Debian release carries runs natively; the
# others run in chroots built with debootstrap under $PGC_CACHE_DIR (default
# ~/.cache/pg_contention), which needs root.  A version whose packages cannot
# be had is SKIPPED with the reason; a part that fails to build or test is
# FAILED and makes this command fail.  With --all, each part's output is
# printed whole when it ends, so the parts' outputs never interleave.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

all=0
case "${1:-}" in
	--all) all=1 ;;
	'') ;;
	*) die "usage: tools/test.sh [--all]" ;;
esac

host_codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
release_for() {
	case "$1" in
		13) echo bullseye ;; 15) echo bookworm ;; 17) echo trixie ;; 18) echo sid ;;
		*) echo unknown ;;
	esac
}
host_version=
for v in 13 15 17 18; do
	[ "$(release_for "$v")" = "$host_codename" ] && host_version=$v
done
if [ "$all" -eq 1 ]; then
	versions=${PGC_PG_VERSIONS:-13 15 17 18}
else
	[ -n "$host_version" ] || die "no PostgreSQL version tested here is native to Debian '$host_codename' (13 bullseye, 15 bookworm, 17 trixie, 18 sid): use --all, which runs them in chroots"
	versions=$host_version
fi
part_timeout=${PGC_VERSION_TIMEOUT:-1500}

results=$(mktemp -d /tmp/pgc-test.XXXXXX)
trap 'rm -rf "$results"' EXIT

# ---- the parts ----
# Each part writes its output to $results/N.log and one line to
# $results/N.result: "PASSED FAILED SKIPPED status".  A part's runner ends
# its output with "KEY: PASSED FAILED SKIPPED"; no such line (a crash, a
# timeout) counts as one failure.
record() {	# N KEY LABEL LOG [STATUS]
	local n=$1 key=$2 label=$3 out=$4 status=${5:-} p f k
	if [ -z "$status" ]; then
		read -r p f k < <(grep -E "^$key: [0-9]+ [0-9]+ [0-9]+\$" "$out" | tail -n 1 | cut -d' ' -f2-)
		p=${p:-0} f=${f:-0} k=${k:-0}
		[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$k" -eq 0 ] && f=1
		if [ "$f" -gt 0 ]; then
			status="FAILED ($p passed, $f failed)"
		elif [ "$p" -eq 0 ]; then
			status="SKIPPED ($(grep -E 'SKIPPED' "$out" | tail -n 1 | sed 's/^pg_contention: //'))"
		else
			status="PASSED ($p passed, $k skipped)"
		fi
	else
		p=0 k=0
		case "$status" in FAILED*) f=1 ;; *) f=0 k=1 ;; esac
	fi
	echo "$p $f $k $label: $status" >"$results/$n.result"
	# What failed, for the summary: the output's tail is what CI shows.
	if [ "$f" -gt 0 ] && [ -f "$out" ]; then
		grep -E '^(not ok [0-9]+|t/[0-9]+_[a-z0-9_]+\.pl +\(Wstat|#   Failed test|FAILED: |test [a-z0-9_]+ +\.\.\. FAILED)' "$out" |
			head -n 20 | sed 's/^/    /' >"$results/$n.failures" || true
	fi
}

# What the suite needs on the host for PostgreSQL MAJOR.
suite_packages() {
	echo "postgresql-$1 postgresql-server-dev-$1 libipc-run-perl gcc make locales" \
		"postgresql-$1-pg-wait-sampling postgresql-$1-cron libpq-dev tmux python3-psycopg pgbouncer" \
		"chromium fonts-dejavu-core prometheus-postgres-exporter prometheus"
}

version_part() {	# N MAJOR
	local n=$1 v=$2 release out=$results/$1.log label="PostgreSQL $2"
	release=$(release_for "$v")
	if [ "$release" = unknown ]; then
		record "$n" suite "$label" "$out" "FAILED (not a supported version: use 13, 15, 17 or 18)"
	elif [ "$release" = "$host_codename" ]; then
		[ "$(id -u)" -eq 0 ] && apt_install $(suite_packages "$v") >>"$out" 2>&1
		timeout "$part_timeout" "$here/suite.sh" "$v" >>"$out" 2>&1
		record "$n" suite "$label" "$out"
	elif [ "$(id -u)" -ne 0 ]; then
		record "$n" suite "$label" "$out" "SKIPPED (needs root to build and enter the $release chroot)"
	else
		"$here/chroot.sh" prepare "$v" >>"$out" 2>&1
		case $? in
			0)
				timeout "$part_timeout" "$here/chroot.sh" run "$v" /pgc/tools/suite.sh "$v" >>"$out" 2>&1
				record "$n" suite "$label" "$out" ;;
			3) record "$n" suite "$label" "$out" "SKIPPED (the $release packages could not be downloaded: $(tail -n 1 "$out"))" ;;
			*) record "$n" suite "$label" "$out" "FAILED (the $release chroot could not be built)" ;;
		esac
	fi
}

script_part() {	# N KEY LABEL SCRIPT ARGS...
	local n=$1 key=$2 label=$3 out=$results/$1.log
	shift 3
	timeout "$part_timeout" "$here/$@" >>"$out" 2>&1
	record "$n" "$key" "$label" "$out"
}

# Run part N (a function and its arguments): live with the quick loop; with
# --all its output is printed whole when it ends, under a lock.
started=$(date +%s)
run_part() {	# N FUNCTION ARGS...
	local n=$1 t0=$(date +%s)
	: >"$results/$n.log"
	if [ "$all" -eq 0 ]; then
		tail -n +1 -f "$results/$n.log" >&2 &
		local tailer=$!
		"${@:2}"
		sleep 0.2
		kill "$tailer" 2>/dev/null
		wait "$tailer" 2>/dev/null
	else
		log "started: part $n ($2 ${*:3}) at +$((t0 - started)) s"
		"${@:2}"
		(
			flock 9
			log "=== part $n: $(cut -d' ' -f4- "$results/$n.result") in $(($(date +%s) - t0)) s ==="
			cat "$results/$n.log" >&2
			log "=== end of part $n ==="
		) 9>"$results/print.lock"
	fi
}

# ---- the tree, before any server ----
# The SQL scripts generated from src/sql/ are current and the released ones
# unchanged (tools/sql.sh --check); every link of the manual resolves
# (tools/check-docs.sh).
run_part 01 script_part 01 sql "The SQL scripts: generated ones current, released ones unchanged" sql.sh --check
run_part 02 script_part 02 docs "The manual: every link and anchor resolves, the README under 500 lines" check-docs.sh

if [ "$all" -eq 0 ]; then
	run_part 10 version_part 10 "$host_version"
else
	# Everything the host needs, installed before the parts start (one apt
	# at a time): the suite's, the package's, the assertion build's and the
	# chroots' debootstrap.
	if [ "$(id -u)" -eq 0 ] && [ -n "$host_version" ]; then
		apt_install $(suite_packages "$host_version") \
			dpkg-dev debhelper postgresql-server-dev-all bison flex perl sqlsmith debootstrap
	fi
	# The runners.  Servers of different parts never meet: each server's
	# socket is in a directory of its own.  The one TCP port a test opens
	# (t/016's exporter, on the host only) is reserved in a directory the
	# host's parts share (PG_TEST_PORT_DIR), so two parts never pick it at
	# once.
	export PG_TEST_PORT_DIR=$results/portlock
	mkdir -p "$PG_TEST_PORT_DIR" && chmod 1777 "$PG_TEST_PORT_DIR" "$results"
	# Two runners take the parts from one queue, longest first, each
	# running its TAP scripts one at a time (PGC_PROVE_JOBS=1): two scripts
	# at a time on the machine, as the quick loop runs them.  (A third
	# runner does not shorten it: two scripts at a time keep both cores
	# busy, and three made every part about a third slower.)
	# PostgreSQL 15's suite runs on the assertion-enabled build (the same
	# tests, and the server's assertions besides); Debian's own 15 is what
	# the package part and PostgreSQL's schedules run against, and what
	# tools/test.sh runs.  PGC_CASSERT=0 runs Debian's 15 in its place.
	export PGC_PROVE_JOBS=${PGC_PROVE_JOBS:-1}
	runners=${PGC_RUNNERS:-2}
	[[ "$runners" =~ ^[1-9][0-9]*$ ]] || die "PGC_RUNNERS must be a number of runners (1 or more), not '$runners'"
	queue=()	# N:MAJOR or N:PART, in the order taken
	cassert_item=
	run_item() {	# N:MAJOR or N:PART
		local item=$1
		case "${item#*:}" in
			core) run_part "${item%%:*}" script_part "${item%%:*}" core "PostgreSQL 15's own schedules, with and without pg_contention" core-suites.sh 15 ;;
			cassert) run_part "${item%%:*}" script_part "${item%%:*}" cassert "PostgreSQL 15 with assertions: pg_contention's suite and sqlsmith" cassert.sh 15 ;;
			package) run_part "${item%%:*}" script_part "${item%%:*}" package "The Debian package and the PGXN metadata, on PostgreSQL 15" package.sh 15 ;;
			*) run_part "${item%%:*}" version_part "${item%%:*}" "${item#*:}" ;;
		esac
	}
	# A runner takes the next part under a lock: the queue's position is a
	# file the runners share.
	echo 0 >"$results/next"
	runner() {
		local i
		while :; do
			i=$(
				exec 8>"$results/queue.lock"
				flock 8
				read -r i <"$results/next"
				echo $((i + 1)) >"$results/next"
				echo "$i"
			)
			[ "$i" -lt ${#queue[@]} ] || return 0
			run_item "${queue[$i]}"
		done
	}
	native15=0
	[ "$host_version" = 15 ] && native15=1
	# Longest first: the assertion build, then the versions up to 16
	# (they run the old_snapshot_threshold cases too, about 80 s more),
	# then the others newest first.  One runner then takes the assertion
	# build and 17, the other 13, 18, PostgreSQL's schedules and the
	# package: measured from nothing on 2026-12-06, 993 + 615 s and
	# 750 + 656 + 142 + 37 s (newest first, the runner of the assertion
	# build took 13: 993 + 750 s).
	n=10
	for v in $versions; do
		n=$((n + 1))
		if [ "$v" = 15 ] && [ "$native15" -eq 1 ] && [ "${PGC_CASSERT:-1}" != 0 ]; then
			cassert_item="$n:cassert"
		else
			queue+=("$n:$v")
		fi
	done
	[ ${#queue[@]} -gt 0 ] && mapfile -t queue < <(printf '%s\n' "${queue[@]}" |
		awk -F: '{ print ($2 <= 16 ? 0 : 1) ":" (100 - $2) ":" $0 }' | sort -t: -k1,1n -k2,2n | cut -d: -f3-)
	[ -n "${cassert_item:-}" ] && queue=("$cassert_item" "${queue[@]}")
	if [[ " $versions " == *" 15 "* ]] && [ "$native15" -eq 1 ]; then
		[ "${PGC_CORE:-1}" != 0 ] && queue+=("20:core")
		[ "${PGC_PACKAGE:-1}" != 0 ] && queue+=("22:package")
	fi
	for ((r = 0; r < runners; r++)); do
		runner &
	done
	wait
	log "all parts ended in $(($(date +%s) - started)) s"
fi

# ---- the summary ----
echo
total_passed=0 total_failed=0 total_skipped=0
for r in "$results"/*.result; do
	read -r p f k line <"$r"
	echo "$line"
	[ -s "${r%.result}.failures" ] && cat "${r%.result}.failures"
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + f))
	total_skipped=$((total_skipped + k))
done
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
