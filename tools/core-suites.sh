#!/usr/bin/env bash
# PostgreSQL's own regression and isolation schedules, from Debian's source
# package of the installed server, run twice on temporary servers: without
# pg_contention (kept, and run again only when the server, its tests or the
# extension's SQL change), and with it preloaded while a reader queries
# every view in a loop.  The two runs must agree test by test and output by
# output.  Both
# compute query ids (pg_contention turns compute_query_id = auto on, and
# EXPLAIN VERBOSE then prints "Query Identifier:" lines), and those lines
# are removed before comparing.
#
#   tools/core-suites.sh [MAJOR]      (default 15)
#   tools/core-suites.sh --fetch-only [MAJOR]   only fetch and build the source (tools/cassert.sh)
#
# Needs root the first time: the source is fetched with apt-get through a
# private apt configuration whose deb-src entries are derived from this
# machine's own sources (no archive host is named here), unpacked and its
# test programs built under $PGC_CACHE_DIR (default ~/.cache/pg_contention),
# and reused afterwards.  When the installed version's source is not in the
# archive, the nearest one it has is used (said in the log).
#
# The last line printed is "core: PASSED FAILED SKIPPED" for tools/test.sh:
# the tests whose outcome is the same in both runs, those whose outcome or
# output differs.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/common.sh"

fetch_only=
if [ "${1:-}" = --fetch-only ]; then
	fetch_only=1
	shift
fi
major=${1:-15}
pg_config=$(pg_config_for "$major") || exit 1
cache=${PGC_CACHE_DIR:-$HOME/.cache/pg_contention}/core-$major
installed=$(dpkg-query -W -f '${Version}' "postgresql-$major" 2>/dev/null)
[ -n "$installed" ] || die "postgresql-$major is not installed"

# ---- the source, built once ----
fetch_source() {
	local priv=$cache/apt f opts
	if [ -f "$cache/built" ] && [ "$(cat "$cache/built")" = "$installed" ]; then
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "fetching PostgreSQL's source needs root the first time"
	apt_install gcc make bison flex perl
	rm -rf "$cache" && mkdir -p "$priv/sources.list.d" "$priv/lists/partial" \
		"$priv/cache/archives/partial" "$cache/download"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" >"$priv/sources.list.d/$(basename "$f")"
	done
	[ -f /etc/apt/sources.list ] &&
		sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$priv/sources.list.d/pgc-src.list"
	opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$priv/sources.list.d"
		-o "Dir::State::Lists=$priv/lists" -o "Dir::Cache=$priv/cache"
		-o APT::Sandbox::User=root -qq)
	log "fetching the source of postgresql-$major $installed"
	apt-get "${opts[@]}" update >"$cache/apt.log" 2>&1 || { tail -n 5 "$cache/apt.log" >&2; return 1; }
	# The installed version first, then the others the index lists, newest
	# first: an index can name files its archive no longer serves.
	local candidates v got=
	candidates=$( (echo "$installed"
		apt-cache "${opts[@]}" showsrc "postgresql-$major" | sed -n 's/^Version: //p' |
			sort -u | sort -r -V) | awk '!seen[$0]++')
	for v in $candidates; do
		rm -f "$cache/download"/*
		if (cd "$cache/download" && apt-get "${opts[@]}" source --download-only "postgresql-$major=$v") \
			>>"$cache/apt.log" 2>&1; then
			got=$v
			break
		fi
	done
	[ -n "$got" ] || { tail -n 5 "$cache/apt.log" >&2; return 1; }
	[ "$got" = "$installed" ] || log "the source of $installed cannot be downloaded: using $got, the nearest available"
	echo "$got" >"$cache/source-version"
	(cd "$cache" && tar -xf download/postgresql-"${major}"_*.orig.tar.* && mv postgresql-"$major".* src) ||
		return 1
	log "building PostgreSQL $major's test programs"
	(cd "$cache/src" &&
		./configure --quiet --without-readline --without-zlib --without-icu &&
		make -s -j2 -C src/test/regress &&
		make -s -j2 -C src/test/isolation) >"$cache/build.log" 2>&1 ||
		{ tail -n 20 "$cache/build.log" >&2; return 1; }
	echo "$installed" >"$cache/built"
}

# One fetch at a time: the matrix may run this and tools/cassert.sh's
# --fetch-only side by side, and both use the same cache.
mkdir -p "$(dirname "$cache")"
exec 7>"$cache.lock"
flock 7
fetched=0
fetch_source && fetched=1
flock -u 7
if [ "$fetched" -eq 0 ]; then
	log "PostgreSQL's source or its build is not available: core suites SKIPPED"
	echo "core: 0 0 1"
	[ -n "$fetch_only" ] && exit 1
	exit 0
fi
[ -n "$fetch_only" ] && exit 0

# ---- two runs ----
work=$(mktemp -d /tmp/pgc-core.XXXXXX)
if [ -n "${PGC_KEEP:-}" ]; then log "keeping $work"; else trap 'stop_all; rm -rf "$work"' EXIT; fi
chmod 755 "$work"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
	as_user=(runuser -u postgres --)
fi
run() { "${as_user[@]}" env HOME="$work" "$@"; }

copy_checkout "$top" "$work/ext"
stage=$work/stage
stage_server "$pg_config" "$stage"
bindir=$stage$("$pg_config" --bindir)
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$work"
run make -s -C "$work/ext" PG_CONFIG="$pg_config" with_llvm=no >"$work/build.log" 2>&1 &&
	run make -s -C "$work/ext" PG_CONFIG="$pg_config" with_llvm=no install DESTDIR="$stage" >>"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; echo "core: 0 1 0"; exit 1; }

reader_pid=
stop_all() {
	[ -n "$reader_pid" ] && kill "$reader_pid" 2>/dev/null
	for d in "$work"/run-*/data; do
		[ -f "$d/postmaster.pid" ] && run "$bindir/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
	done
	return 0
}

views="pg_contention_subxact pg_contention_overflow_events pg_contention_statements
	pg_contention_index_scans pg_contention_horizon pg_contention_waits pg_contention_history
	pg_contention_sampler_status pg_contention_old_snapshot pg_contention_info pg_contention_findings"

# run_suites LABEL PRELOAD: a fresh server, then the regression and
# isolation schedules against it; each test's status and normalised
# output go to $work/run-LABEL.
run_suites() {
	local label=$1 preload=$2 dir=$work/run-$1 port=$3 v
	mkdir -p "$dir"
	cp -a "$cache/src" "$dir/pg"
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
	run "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; return 1; }
	cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
fsync = off
shared_preload_libraries = '$preload'
max_prepared_transactions = 2
# pg_contention asks for query ids; both runs compute them, so that
# EXPLAIN VERBOSE prints the same lines (the row counts included).
compute_query_id = on
CONF
	run "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null ||
		{ cat "$dir/server.log" >&2; return 1; }
	# Both runs create the extension (it installs without the library):
	# the same OIDs then go to the tests' objects, and query ids, which
	# depend on them, come out the same.
	run "$bindir/psql" -X -q -h "$dir" -p "$port" -U postgres -d postgres \
		-c "CREATE EXTENSION pg_contention" >/dev/null || return 1
	if [ -n "$preload" ]; then
		for v in $views; do echo "SELECT count(*) FROM $v;"; done >"$dir/reader.sql"
		echo "SELECT length(pg_contention_report());" >>"$dir/reader.sql"
		chmod 644 "$dir/reader.sql"
		run "$bindir/pgbench" -n -c 1 -T 100000 -f "$dir/reader.sql" -h "$dir" -p "$port" -U postgres postgres \
			>"$dir/reader.log" 2>&1 &
		reader_pid=$!
	fi
	local vars=(bindir="$bindir" PGHOST="$dir" PGPORT="$port" PGUSER=postgres)
	log "core suites, $label: regression schedule"
	run make -C "$dir/pg/src/test/regress" installcheck-parallel "${vars[@]}" >"$dir/regress.out" 2>&1
	log "core suites, $label: isolation schedule"
	run make -C "$dir/pg/src/test/isolation" installcheck "${vars[@]}" >"$dir/isolation.out" 2>&1
	if [ -n "$preload" ]; then
		kill "$reader_pid" 2>/dev/null
		wait "$reader_pid" 2>/dev/null
		reader_pid=
		grep -q 'pgbench: error' "$dir/reader.log" && { log "the reader failed:"; grep 'error' "$dir/reader.log" | head -5 >&2; }
	fi
	run "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	# "name status" per test, both schedules.
	cat "$dir/regress.out" "$dir/isolation.out" |
		sed -nE 's/^(test |     |ok [0-9]+ +[-+] |not ok [0-9]+ +[-+] )? *([a-z0-9_-]+) +\.\.\. +(ok|FAILED|failed \(ignored\)).*/\2 \3/p' |
		sort >"$dir/status"
	for v in regress isolation; do
		mkdir -p "$dir/outputs/$v"
		for f in "$dir/pg/src/test/$v"/results/*.out "$dir/pg/src/test/$v"/output_iso/results/*.out; do
			# Without its "Query Identifier:" lines (ids depend on OIDs,
			# which a temporary schema's slot can shift), a plan's header
			# and rule lose the width that line gave them.
			[ -f "$f" ] && grep -v 'Query Identifier: ' "$f" |
				sed -E 's/^ +QUERY PLAN +$/QUERY PLAN/; s/^-+$/-/' >"$dir/outputs/$v/$(basename "$f")"
		done
	done
	grep -q 'pg_contention' "$dir/server.log" && grep -E 'TRAP:|PANIC:|server process .* was terminated' "$dir/server.log" >&2
	return 0
}

# The run without pg_contention depends only on the server, the source of
# its tests, this script's run and the extension's SQL (which creates
# objects, and so moves the tests' OIDs): it is kept under $cache, keyed
# by those, and run again when any of them changes.
baseline_key=$( { echo "$installed"; cat "$cache/source-version" 2>/dev/null; declare -f run_suites
	echo "$views"; cat "$stage$("$pg_config" --sharedir)"/extension/pg_contention--*.sql; } |
	sha256sum | cut -c1-16)
baseline=$cache/baseline-$baseline_key
if [ -f "$baseline/status" ] && [ -d "$baseline/outputs" ]; then
	log "core suites, without: the run kept in $baseline (the same server, tests and extension SQL)"
	mkdir -p "$work/run-without" && cp -a "$baseline/status" "$baseline/regress.out" "$baseline/outputs" "$work/run-without/"
else
	run_suites without "" 54701 || { echo "core: 0 1 0"; exit 1; }
	rm -rf "$cache"/baseline-* "$baseline.tmp" && mkdir -p "$baseline.tmp" &&
		cp -a "$work/run-without/status" "$work/run-without/regress.out" "$work/run-without/outputs" "$baseline.tmp/" &&
		mv "$baseline.tmp" "$baseline"
fi
run_suites with pg_contention 54702 || { echo "core: 0 1 0"; exit 1; }

total=$(wc -l <"$work/run-without/status")
differ=$(diff "$work/run-without/status" "$work/run-with/status" | grep -c '^[<>]')
outputs=$(diff -rq "$work/run-without/outputs" "$work/run-with/outputs" | wc -l)
crashes=$(grep -cE 'TRAP:|PANIC:|was terminated by signal' "$work/run-with/server.log")
log "core suites: $total tests; outcome differences: $differ; output differences: $outputs; crashes with pg_contention: $crashes"
if [ "$differ" -gt 0 ] || [ "$outputs" -gt 0 ]; then
	diff "$work/run-without/status" "$work/run-with/status" >&2
	diff -ru "$work/run-without/outputs" "$work/run-with/outputs" | head -n 100 >&2
fi
if [ "$total" -lt 100 ]; then
	log "too few tests ran: see the logs"
	tail -n 30 "$work/run-without/regress.out" >&2
	echo "core: 0 1 0"
	exit 1
fi
bad=$((differ > 0 ? (differ + 1) / 2 : 0))
[ "$outputs" -gt "$bad" ] && bad=$outputs
[ "$crashes" -gt 0 ] && bad=$((bad + crashes))
echo "core: $((total - bad)) $bad 0"
[ "$bad" -eq 0 ]
