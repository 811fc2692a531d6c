#!/usr/bin/env bash
# pg_contention on an assertion-enabled PostgreSQL: build PostgreSQL MAJOR
# from Debian's source package with --enable-cassert --enable-debug (once,
# cached), run pg_contention's whole suite against it, then let sqlsmith
# throw random queries at a server with pg_contention preloaded, as a role
# that can read every view, for a bounded time.  Any failed assertion,
# crash or failed test fails the run.
#
#   tools/cassert.sh [MAJOR]              (default 15)
#   PGC_SQLSMITH_SECONDS=600 tools/cassert.sh   a longer fuzzing run (default 60)
#
# The source comes from tools/core-suites.sh's cache; the build is
# installed under $PGC_CASSERT_DIR (default /var/cache/pg_contention),
# readable by the unprivileged user the tests run as.  Needs root the first
# time.  The last line printed is "cassert: PASSED FAILED SKIPPED".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

major=${1:-15}
seconds=${PGC_SQLSMITH_SECONDS:-60}
prefix=${PGC_CASSERT_DIR:-/var/cache/pg_contention}/cassert-$major
source_cache=${PGC_CACHE_DIR:-$HOME/.cache/pg_contention}/core-$major

skip() {
	log "assertion-enabled run SKIPPED: $*"
	echo "cassert: 0 0 1"
	exit 0
}

# ---- the build, once ----
build() {
	local src
	[ -x "$prefix/bin/postgres" ] && [ -f "$prefix/built" ] &&
		[ -f "$prefix/lib/postgresql/test_decoding.so" ] && return 0
	[ "$(id -u)" -eq 0 ] || skip "building PostgreSQL needs root the first time"
	"$here/core-suites.sh" --fetch-only "$major" >&2 || return 1
	ls "$source_cache"/download/postgresql-"$major"_*.orig.tar.* >/dev/null 2>&1 || return 1
	apt_install gcc make bison flex perl libipc-run-perl
	src=$(mktemp -d /tmp/pgc-cassert-src.XXXXXX)
	tar -C "$src" --strip-components=1 -xf "$source_cache"/download/postgresql-"$major"_*.orig.tar.*
	rm -rf "$prefix" && mkdir -p "$prefix"
	log "building PostgreSQL $major with assertions into $prefix (once)"
	(cd "$src" &&
		./configure --quiet --prefix="$prefix" --enable-cassert --enable-debug --enable-tap-tests \
			--without-readline --without-zlib --without-icu --without-llvm &&
		make -s -j"$(nproc)" && make -s install &&
		make -s -C contrib/pg_stat_statements install &&
		make -s -C contrib/test_decoding install &&
		make -s -C src/test/isolation install) >"$prefix.build.log" 2>&1 ||
		{ tail -n 20 "$prefix.build.log" >&2; rm -rf "$src"; return 1; }
	rm -rf "$src"
	touch "$prefix/built"
}
build || skip "PostgreSQL's source or its build is not available"
pg_config=$prefix/bin/pg_config

passed=0
failed=0

# ---- pg_contention's suite on it ----
log "pg_contention's suite on the assertion-enabled PostgreSQL $major"
out=$(mktemp /tmp/pgc-cassert.XXXXXX)
# The client's own output tests (paging, hostile text, the incidents'
# pages, the pooler) run on every other build: the server's assertions
# add nothing to what the client prints.  (t/015, whose HTML rendering
# only the host runs, and t/016, whose exporter only the host runs, stay.)
if [ -z "${PROVE_TESTS:-}" ]; then
	PROVE_TESTS=$(cd "$here/.." && ls t/*.pl | grep -vE '^t/0(24|25|31|35)_' | tr '\n' ' ')
	export PROVE_TESTS
fi
PGC_PG_CONFIG=$pg_config PGC_NO_NEIGHBOURS=1 "$here/suite.sh" "$major" 2>&1 | tee "$out" >&2
read -r p f k < <(grep -E '^suite: [0-9]+ [0-9]+ [0-9]+$' "$out" | tail -n 1 | cut -d' ' -f2-)
passed=$((passed + ${p:-0}))
failed=$((failed + ${f:-1}))
rm -f "$out"

# ---- sqlsmith ----
if ! command -v sqlsmith >/dev/null; then
	if [ "$(id -u)" -eq 0 ]; then apt_install sqlsmith; else log "sqlsmith is missing: not fuzzed"; fi
fi
if command -v sqlsmith >/dev/null; then
	work=$(mktemp -d /tmp/pgc-sqlsmith.XXXXXX)
	chmod 755 "$work"
	as_user=()
	[ "$(id -u)" -eq 0 ] && { chown postgres: "$work"; as_user=(runuser -u postgres --); }
	run() { "${as_user[@]}" env HOME="$work" "$@"; }
	stage=$work/stage
	stage_server "$pg_config" "$stage"
	ext=$work/ext
	copy_checkout "$(cd "$here/.." && pwd)" "$ext"
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$work"
	run make -s -C "$ext" PG_CONFIG="$pg_config" with_llvm=no >"$work/build.log" 2>&1 &&
		run make -s -C "$ext" PG_CONFIG="$pg_config" with_llvm=no install DESTDIR="$stage" >>"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; failed=$((failed + 1)); }
	bindir=$stage$prefix/bin
	run "$bindir/initdb" -D "$work/data" -U postgres -A trust --no-sync >/dev/null 2>&1
	cat >>"$work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
port = 54703
shared_preload_libraries = 'pg_contention'
pg_contention.sample_period = 1
statement_timeout = '5s'
CONF
	run "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null
	psql_() { run "$bindir/psql" -X -q -h "$work" -p 54703 -U postgres -d postgres "$@"; }
	# The fuzzing role reads every view (pg_read_all_stats) and may call the
	# functions, not reset them; a table or two gives the views something.
	psql_ -c "CREATE EXTENSION pg_contention" \
		-c "CREATE ROLE smith LOGIN IN ROLE pg_read_all_stats" \
		-c "CREATE TABLE smith_rows AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 1000) AS g" \
		-c "CREATE INDEX ON smith_rows (k)" -c "GRANT SELECT ON smith_rows TO smith" >/dev/null
	log "sqlsmith for $seconds seconds (as a pg_read_all_stats role, pg_contention preloaded, 1 ms sampling)"
	log "  sqlsmith --target='host=$work port=54703 dbname=postgres user=smith' --verbose"
	(cd "$work" && timeout "$seconds" "${as_user[@]}" sqlsmith \
		--target="host=$work port=54703 dbname=postgres user=smith" --verbose \
		>"$work/sqlsmith.out" 2>"$work/sqlsmith.err")
	# --verbose prints one character per query executed ("." fine, "e" an
	# error the server reported, "t" a timeout, "C" a lost connection).
	queries=$(grep -E '^[.a-zA-Z]+$' "$work/sqlsmith.err" | tr -d '\n' | wc -c)
	alive=$(psql_ -At -c "SELECT 1" 2>/dev/null)
	crashes=$(grep -cE 'TRAP:|PANIC:|was terminated by signal|server process .* exited with exit code [^01]' "$work/server.log")
	log "sqlsmith: ${queries:-0} queries; server alive: ${alive:-no}; crashes or assertion failures: $crashes"
	if [ "$crashes" -gt 0 ] || [ "$alive" != 1 ] || [ "${queries:-0}" -eq 0 ]; then
		grep -E -B2 -A5 'TRAP:|PANIC:|terminated by signal' "$work/server.log" | head -n 40 >&2
		tail -n 5 "$work/sqlsmith.err" >&2
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
	fi
	run "$bindir/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1
	[ -n "${PGC_KEEP:-}" ] && log "keeping $work" || rm -rf "$work"
fi

echo "cassert: $passed $failed 0"
[ "$failed" -eq 0 ]
