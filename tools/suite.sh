#!/usr/bin/env bash
# Build pg_contention against one PostgreSQL major version and run its whole
# test suite (regression, isolation, TAP) on temporary servers.
#
#   tools/suite.sh MAJOR
#
# Runs natively or inside a chroot made by tools/chroot.sh.  The checkout is
# copied to a scratch directory and never written.  The extension is
# installed into a private copy of the server's installation ("stage"), so
# the system's PostgreSQL is not modified and no root is needed for it.
# When run as root, the build and the servers run as the unprivileged user
# "postgres" (initdb refuses root).
#
# The last line printed is "suite: PASSED FAILED SKIPPED" for tools/test.sh.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/common.sh"

major=${1:?usage: tools/suite.sh MAJOR}
# PGC_PG_CONFIG: another installation of that major version (tools/cassert.sh).
pg_config=${PGC_PG_CONFIG:-$(pg_config_for "$major")} || exit 1
perl -MIPC::Run -e 1 2>/dev/null || die "Perl's IPC::Run is missing: install libipc-run-perl"

work=$(mktemp -d /tmp/pgc-suite.XXXXXX)
if [ -n "${PGC_KEEP:-}" ]; then log "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
chmod 755 "$work"

copy_checkout "$top" "$work/src"
stage=$work/stage
bindir=$("$pg_config" --bindir)
stage_server "$pg_config" "$stage"

as_user=()
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || die "user postgres is missing (it comes with the postgresql-$major package)"
	chown -R postgres: "$work"
	as_user=(runuser -u postgres --)
	# A non-English locale for t/051 (messages in German), where the
	# locales' sources are installed; else that test skips.
	if ! locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$' && [ -e /usr/share/i18n/locales/de_DE ]; then
		localedef -i de_DE -f UTF-8 de_DE.UTF-8 >/dev/null 2>&1 || log "de_DE.UTF-8 could not be made: t/051 skips"
	fi
fi
run() { (cd "$work/src" && "${as_user[@]}" env HOME="$work" "$@"); }

make_vars=(PG_CONFIG="$pg_config" with_llvm=no)

log "PostgreSQL $("$pg_config" --version | awk '{print $2}'): building with -Werror"
# The extension, and the test-only module (into the private copy only).
spin=test/modules/pgc_spin_test
if ! run make -s "${make_vars[@]}" PGC_WERROR=-Werror >"$work/build.log" 2>&1 ||
	! run make -s "${make_vars[@]}" install DESTDIR="$stage" >>"$work/build.log" 2>&1 ||
	! run make -s -C "$spin" "${make_vars[@]}" PG_CFLAGS=-Werror >>"$work/build.log" 2>&1 ||
	! run make -s -C "$spin" "${make_vars[@]}" install DESTDIR="$stage" >>"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	echo "suite: 0 1 0"
	exit 1
fi

passed=0
failed=0
skipped=0

# pg_regress and pg_isolation_regress end with "All N tests passed." or
# "M of N tests failed." (prefixed with "# " from PG16 on).
count_regress() {
	local out=$1 n m
	if n=$(grep -Eo 'All [0-9]+ tests passed' "$out" | grep -Eo '[0-9]+'); then
		passed=$((passed + n))
		return 0
	fi
	if m=$(grep -Eo '[0-9]+ of [0-9]+ tests failed' "$out"); then
		n=$(echo "$m" | awk '{print $3}')
		m=$(echo "$m" | awk '{print $1}')
		passed=$((passed + n - m))
		failed=$((failed + m))
	else
		failed=$((failed + 1))	# the runner itself failed
	fi
	return 1
}

# prove -v prints each TAP line; count "ok"/"not ok", and one more failure
# for every script that died or exited badly.
count_tap() {
	local out=$1 ok nok bad skip
	skip=$(grep -Eic '^ok [0-9]+ # skip' "$out")
	ok=$(($(grep -Ec '^ok [0-9]+' "$out") - skip))
	nok=$(grep -Ec '^not ok [0-9]+' "$out")
	bad=$(grep -Ec '\(Wstat: [0-9]+ Tests: [0-9]+ Failed: 0\)' "$out")
	passed=$((passed + ok))
	skipped=$((skipped + skip))
	failed=$((failed + nok + bad))
	if [ "$ok" -eq 0 ] || ! grep -q '^Result: PASS' "$out"; then
		[ "$nok" -eq 0 ] && [ "$bad" -eq 0 ] && failed=$((failed + 1))
		return 1
	fi
	return 0
}

show_failure() {
	local f
	for f in "$work"/src/regression.diffs "$work"/src/output_iso/regression.diffs; do
		[ -s "$f" ] && { echo "---- $f" >&2; head -n 200 "$f" >&2; }
	done
	for f in "$work"/src/tmp_check/log/regress_log_* "$work"/src/tmp_check/log/*.log; do
		[ -s "$f" ] && { echo "---- $f (last lines)" >&2; tail -n 40 "$f" >&2; }
	done
}

# The TAP scripts spend most of their time waiting for their servers, so
# they run PGC_PROVE_JOBS (default 2) at a time where the server's test
# library reserves each node's port with a lock file ("portlock": in
# PostgreSQL/Test/Cluster.pm from 15 on, in PostgresNode.pm in the later
# minor releases of 13 and 14, whose Cluster.pm only renames it); without
# it two scripts could pick the same free port, so they run one by one.
prove_jobs() {
	local perl_lib
	[[ "${PGC_PROVE_JOBS:-2}" =~ ^[1-9][0-9]*$ ]] ||
		die "PGC_PROVE_JOBS must be a number of scripts at a time (1 or more), not '${PGC_PROVE_JOBS}'"
	perl_lib=$(dirname "$(dirname "$("$pg_config" --pgxs)")")/test/perl
	if grep -qs portlock "$perl_lib/PostgreSQL/Test/Cluster.pm" "$perl_lib/PostgresNode.pm"; then
		echo "-j${PGC_PROVE_JOBS:-2}"
	fi
}

jobs=$(prove_jobs) || { echo "suite: 0 1 0"; exit 1; }
if [ -n "$jobs" ]; then
	log "TAP scripts: ${jobs#-j} at a time"
else
	log "TAP scripts: one at a time (the server's test library reserves no ports)"
fi
ok=1
run make "${make_vars[@]}" bindir="$stage$bindir" regresscheck >"$work/regress.out" 2>&1
count_regress "$work/regress.out" || ok=0
run make "${make_vars[@]}" bindir="$stage$bindir" isolationcheck >"$work/isolation.out" 2>&1
count_regress "$work/isolation.out" || ok=0
run make "${make_vars[@]}" bindir="$stage$bindir" PROVE_FLAGS="-v --timer $jobs" tapcheck >"$work/tap.out" 2>&1
count_tap "$work/tap.out" || ok=0

cat "$work/regress.out" "$work/isolation.out" | grep -E '^(test |     |ok |not ok |# |parallel group)' | grep -v '^# (using|initializing|running)' >&2 || true
grep -E '^(\[[0-9:]+\] )?t/|^(ok |not ok |Result:|Files=)' "$work/tap.out" >&2 || true
[ "$ok" -eq 1 ] || show_failure
echo "suite: $passed $failed $skipped"
[ "$ok" -eq 1 ] && [ "$failed" -eq 0 ]
