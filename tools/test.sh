#!/usr/bin/env bash
# Run pg_contention's whole test suite (regression, isolation, TAP) on every
# supported PostgreSQL major version, and end with "N passed, N failed".
#
#   tools/test.sh                     the generated SQL scripts checked against
#                                     src/sql/, then PostgreSQL 13, 15, 17 and 18, then
#                                     PostgreSQL 15's own regression and isolation
#                                     schedules with and without pg_contention, an
#                                     assertion-enabled 15 with sqlsmith, and the
#                                     Debian package built, installed, tested, removed
#   PGC_PG_VERSIONS="15" tools/test.sh    one version only (quick work)
#   PGC_CORE=0 tools/test.sh          without the core schedules
#   PGC_CASSERT=0 tools/test.sh       without the assertion-enabled build and sqlsmith
#   PGC_PACKAGE=0 tools/test.sh       without building, installing and removing the
#                                     Debian package (tools/package.sh)
#
# The version this machine's Debian release carries (15 on bookworm) runs
# natively; the others run in Debian chroots built with debootstrap under
# $PGC_CACHE_DIR (default ~/.cache/pg_contention), which needs root.  A
# version whose packages cannot be had is SKIPPED with the reason; one that
# fails to build or test is FAILED and makes this command fail.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

versions=${PGC_PG_VERSIONS:-13 15 17 18}
per_version_timeout=${PGC_VERSION_TIMEOUT:-1500}
host_codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")

release_for() {
	case "$1" in
		13) echo bullseye ;; 15) echo bookworm ;; 17) echo trixie ;; 18) echo sid ;;
		*) echo unknown ;;
	esac
}

total_passed=0
total_failed=0
total_skipped=0
summary=()
bad=0

# Checks of the tree itself, before any server: the SQL scripts generated
# from src/sql/ are current and the released ones unchanged (tools/sql.sh
# --check); every link of the manual resolves (tools/check-docs.sh).  Each
# ends with "KEY: PASSED FAILED SKIPPED".
tree_check() {	# KEY LABEL COMMAND...
	local key=$1 label=$2 out p f k
	shift 2
	out=$(mktemp /tmp/pgc-test.XXXXXX)
	log "=== $label ==="
	"$@" 2>&1 | tee "$out" >&2
	read -r p f k < <(grep -E "^$key: [0-9]+ [0-9]+ [0-9]+\$" "$out" | tail -n 1 | cut -d' ' -f2-)
	p=${p:-0}
	f=${f:-0}
	[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + f))
	if [ "$f" -gt 0 ]; then
		summary+=("$label: FAILED ($p passed, $f failed)")
		bad=1
	else
		summary+=("$label: PASSED ($p passed)")
	fi
	rm -f "$out"
}
tree_check sql "The SQL scripts: generated ones current, released ones unchanged" "$here/sql.sh" --check
tree_check docs "The manual: every link and anchor resolves, the README under 500 lines" "$here/check-docs.sh"

for v in $versions; do
	release=$(release_for "$v")
	out=$(mktemp /tmp/pgc-test.XXXXXX)
	status=
	if [ "$release" = unknown ]; then
		summary+=("PostgreSQL $v: FAILED (not a supported version: use 13, 15, 17 or 18)")
		bad=1
		continue
	fi
	log "=== PostgreSQL $v ==="
	if [ "$release" = "$host_codename" ]; then
		if [ "$(id -u)" -eq 0 ]; then
			apt_install "postgresql-$v" "postgresql-server-dev-$v" libipc-run-perl gcc make \
				"postgresql-$v-pg-wait-sampling" "postgresql-$v-cron" libpq-dev tmux python3-psycopg pgbouncer \
				chromium fonts-dejavu-core prometheus-postgres-exporter prometheus
		fi
		timeout "$per_version_timeout" "$here/suite.sh" "$v" 2>&1 | tee "$out" >&2
	elif [ "$(id -u)" -ne 0 ]; then
		status="SKIPPED (needs root to build and enter the $release chroot)"
	else
		"$here/chroot.sh" prepare "$v" 2>&1 | tee "$out" >&2
		case "${PIPESTATUS[0]}" in
			0) timeout "$per_version_timeout" "$here/chroot.sh" run "$v" /pgc/tools/suite.sh "$v" 2>&1 | tee "$out" >&2 ;;
			3) status="SKIPPED (the $release packages could not be downloaded: $(tail -n 1 "$out"))" ;;
			*) status="FAILED (the $release chroot could not be built)"; bad=1 ;;
		esac
	fi
	if [ -z "$status" ]; then
		read -r p f k < <(grep -E '^suite: [0-9]+ [0-9]+ [0-9]+$' "$out" | tail -n 1 | cut -d' ' -f2-)
		p=${p:-0}
		f=${f:-0}
		k=${k:-0}
		if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
			f=1		# no result line: the suite crashed or timed out
		fi
		total_passed=$((total_passed + p))
		total_failed=$((total_failed + f))
		total_skipped=$((total_skipped + k))
		if [ "$f" -eq 0 ]; then
			status="PASSED ($p passed, $k skipped)"
		else
			status="FAILED ($p passed, $f failed)"
			bad=1
		fi
	fi
	summary+=("PostgreSQL $v: $status")
	rm -f "$out"
done

# Parts beyond pg_contention's own suite, on the version this machine runs
# natively (15 on bookworm): PostgreSQL's own regression and isolation
# schedules with and without pg_contention (tools/core-suites.sh), and
# pg_contention's suite plus sqlsmith on an assertion-enabled build
# (tools/cassert.sh).  PGC_CORE=0 and PGC_CASSERT=0 leave them out.
extra_part() {	# KEY SCRIPT LABEL
	local key=$1 script=$2 label=$3 out p f k
	out=$(mktemp /tmp/pgc-test.XXXXXX)
	log "=== $label ==="
	timeout "$per_version_timeout" "$here/$script" 15 2>&1 | tee "$out" >&2
	read -r p f k < <(grep -E "^$key: [0-9]+ [0-9]+ [0-9]+\$" "$out" | tail -n 1 | cut -d' ' -f2-)
	p=${p:-0}
	f=${f:-0}
	k=${k:-0}
	[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$k" -eq 0 ] && f=1
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + f))
	total_skipped=$((total_skipped + k))
	if [ "$f" -gt 0 ]; then
		summary+=("$label: FAILED ($p passed, $f failed)")
		bad=1
	elif [ "$k" -gt 0 ]; then
		summary+=("$label: SKIPPED ($(grep -E 'SKIPPED' "$out" | tail -n 1 | sed 's/^pg_contention: //'))")
	else
		summary+=("$label: PASSED ($p passed)")
	fi
	rm -f "$out"
}
if [[ " $versions " == *" 15 "* ]] && [ "$host_codename" = bookworm ]; then
	[ "${PGC_CORE:-1}" != 0 ] &&
		extra_part core core-suites.sh "PostgreSQL 15's own schedules, with and without pg_contention"
	[ "${PGC_CASSERT:-1}" != 0 ] &&
		extra_part cassert cassert.sh "PostgreSQL 15 with assertions: pg_contention's suite and sqlsmith"
	[ "${PGC_PACKAGE:-1}" != 0 ] &&
		extra_part package package.sh "The Debian package and the PGXN metadata, on PostgreSQL 15"
fi

echo
for line in "${summary[@]}"; do
	echo "$line"
done
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$bad" -eq 0 ] && [ "$total_failed" -eq 0 ]
