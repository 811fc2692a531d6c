#!/usr/bin/env bash
# Prepare and enter a Debian chroot that carries one PostgreSQL major version.
#
#   tools/chroot.sh prepare MAJOR       build (or reuse) the chroot for MAJOR
#   tools/chroot.sh run MAJOR CMD...    run CMD inside it, the checkout bound at /pgc
#
# The chroots live under $PGC_CACHE_DIR (default ~/.cache/pg_contention) and are
# reused between runs; one that fails its health check is rebuilt.  Nothing
# outside the checkout and that cache is modified.  Needs root (debootstrap,
# mount, chroot).  Exit status 3 means "packages could not be had" (the
# caller reports SKIPPED), anything else non-zero is a failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

cache_dir=${PGC_CACHE_DIR:-$HOME/.cache/pg_contention}

release_for() {
	case "$1" in
		13) echo bullseye ;;
		15) echo bookworm ;;
		17) echo trixie ;;
		18) echo sid ;;
		*) die "no Debian release known for PostgreSQL $1 (supported: 13 15 17 18)" ;;
	esac
}

chroot_dir() { echo "$cache_dir/chroots/$(release_for "$1")"; }

# A chroot is healthy when the marker exists and its pg_config reports MAJOR.
healthy() {
	local major=$1 dir
	dir=$(chroot_dir "$major")
	[ -f "$dir/.pgc-ready-$major" ] || return 1
	chroot "$dir" /usr/lib/postgresql/"$major"/bin/pg_config --version 2>/dev/null |
		grep -q "PostgreSQL $major\." || return 1
}

mounted=()
cleanup_mounts() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[$i]}" 2>/dev/null || true
	done
	mounted=()
}

# /proc, a tmpfs /dev/shm (PostgreSQL's dynamic shared memory) and a
# private devpts instance (pseudo-terminals, for tmux in the client's test)
# inside the chroot; cleanup_mounts undoes them, also on failure (trap in
# the caller).
mount_chroot() {
	local dir=$1
	trap cleanup_mounts EXIT INT TERM
	mkdir -p "$dir/proc" "$dir/dev/shm" "$dir/dev/pts"
	mount -t proc proc "$dir/proc" && mounted+=("$dir/proc")
	mount -t tmpfs -o size=1g,mode=1777 tmpfs "$dir/dev/shm" && mounted+=("$dir/dev/shm")
	if mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$dir/dev/pts"; then
		mounted+=("$dir/dev/pts")
		# /dev/ptmx opens this instance's multiplexer.
		[ -e "$dir/dev/ptmx" ] || touch "$dir/dev/ptmx"
		mount --bind "$dir/dev/pts/ptmx" "$dir/dev/ptmx" && mounted+=("$dir/dev/ptmx")
	fi
}

# Remove a chroot, first undoing any mount left inside it by a run that was
# killed, and never crossing into another file system (the bound checkout).
remove_chroot() {
	local dir=$1 m
	[ -e "$dir" ] || return 0
	for m in $(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf --one-file-system "$dir"
}

# What the tests use beyond the server: the extensions they preload beside
# pg_contention (t/010_neighbours.pl), libpq's headers for the client and
# tmux to drive its top (t/015_client.pl), PgBouncer to put it behind a
# transaction pooler (t/035_pooler.pl).  Chromium, which renders the
# client's HTML report, is installed on the host only.
# psycopg 3 (t/021's importer) is packaged from bookworm on, not in bullseye.
psycopg_package() { [ "$(release_for "$1")" = bullseye ] || echo python3-psycopg; }
extra_packages() { echo "postgresql-$1-pg-wait-sampling postgresql-$1-cron libpq-dev tmux pgbouncer $(psycopg_package "$1")"; }
has_extra_packages() {
	[ -f "$1/usr/lib/postgresql/$2/lib/pg_wait_sampling.so" ] &&
		[ -f "$1/usr/lib/postgresql/$2/lib/pg_cron.so" ] &&
		[ -f "$1/usr/include/postgresql/libpq-fe.h" ] && [ -x "$1/usr/bin/tmux" ] &&
		[ -x "$1/usr/sbin/pgbouncer" ] &&
		{ [ -z "$(psycopg_package "$2")" ] || [ -d "$1/usr/lib/python3/dist-packages/psycopg" ]; }
}

# Debian packages pg_isolation_regress and isolationtester with the server
# development files from PostgreSQL 14 on.  For older versions, build the
# two programs from Debian's own source package of that server, and put them
# where PGXS looks for them.  The deb-src line is derived from the chroot's
# own sources.list, so no archive host is named here.
provide_isolation_tester() {
	local dir=$1 major=$2 apt=$3 target
	target=/usr/lib/postgresql/$major/lib/pgxs/src/test/isolation
	[ -x "$dir$target/pg_isolation_regress" ] && return 0
	log "building isolationtester for PostgreSQL $major from its Debian source package"
	chroot "$dir" env DEBIAN_FRONTEND=noninteractive LC_ALL=C sh -ec "
		sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/pgc-src.list
		$apt update
		$apt install --no-install-recommends dpkg-dev xz-utils bzip2
		rm -rf /opt/pgc-pgsrc && mkdir -p /opt/pgc-pgsrc && cd /opt/pgc-pgsrc
		apt-get source --download-only postgresql-$major
		tar -xf postgresql-${major}_*.orig.tar.*
		cd postgresql-$major.*/
		./configure --quiet --without-readline --without-zlib --without-icu
		make -s -j2 -C src/test/isolation
		mkdir -p $target
		cp src/test/isolation/pg_isolation_regress src/test/isolation/isolationtester $target/
		cd / && rm -rf /opt/pgc-pgsrc && $apt clean" >"$dir.isolation.log" 2>&1
}

prepare() {
	# sid's Release file can be past its Valid-Until date in the archive.
	local major=$1 release dir apt_opts=()
	release=$(release_for "$major")
	dir=$(chroot_dir "$major")
	[ "$(id -u)" -eq 0 ] || die "building a chroot needs root"
	[ "$release" = sid ] && apt_opts=(-o Acquire::Check-Valid-Until=false)
	local apt="apt-get ${apt_opts[*]} -qq -y -o Dpkg::Options::=--force-confold"
	if healthy "$major"; then
		[ -x "$dir/usr/lib/postgresql/$major/lib/pgxs/src/test/isolation/pg_isolation_regress" ] &&
			has_extra_packages "$dir" "$major" && return 0
		mount_chroot "$dir"
		provide_isolation_tester "$dir" "$major" "$apt" ||
			{ cleanup_mounts; tail -n 20 "$dir.isolation.log" >&2; return 1; }
		has_extra_packages "$dir" "$major" ||
			chroot "$dir" env DEBIAN_FRONTEND=noninteractive LC_ALL=C sh -c \
				"$apt update && $apt install --no-install-recommends $(extra_packages "$major") && $apt clean" \
				>>"$dir.apt.log" 2>&1 ||
			{ cleanup_mounts; tail -n 20 "$dir.apt.log" >&2; return 1; }
		cleanup_mounts
		return 0
	fi

	log "building the $release chroot for PostgreSQL $major in $dir"
	command -v debootstrap >/dev/null || apt_install debootstrap
	remove_chroot "$dir"
	mkdir -p "$(dirname "$dir")"
	if ! debootstrap --variant=minbase "$release" "$dir" >"$dir.debootstrap.log" 2>&1; then
		tail -n 5 "$dir.debootstrap.log" >&2
		remove_chroot "$dir"
		return 3
	fi
	# Never start services inside the chroot, and create no default cluster.
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 755 "$dir/usr/sbin/policy-rc.d"
	mkdir -p "$dir/etc/postgresql-common"
	echo "create_main_cluster = false" >"$dir/etc/postgresql-common/createcluster.conf"
	# Downloading is what can fail for reasons outside the project (the
	# archive unreachable or missing a package): that is exit 3, SKIPPED.
	# A package that downloads but does not install is a real failure.
	local pkgs="postgresql-$major postgresql-server-dev-$major libipc-run-perl gcc make libc6-dev $(extra_packages "$major")"
	mount_chroot "$dir"
	if ! chroot "$dir" env DEBIAN_FRONTEND=noninteractive LC_ALL=C sh -c \
		"$apt update && $apt install --no-install-recommends --download-only $pkgs" \
		>"$dir.apt.log" 2>&1; then
		cleanup_mounts
		tail -n 3 "$dir.apt.log" >&2
		remove_chroot "$dir"
		return 3
	fi
	if ! chroot "$dir" env DEBIAN_FRONTEND=noninteractive LC_ALL=C sh -c \
		"$apt install --no-install-recommends $pkgs && $apt clean" \
		>>"$dir.apt.log" 2>&1; then
		cleanup_mounts
		tail -n 20 "$dir.apt.log" >&2
		remove_chroot "$dir"
		return 1
	fi
	if ! provide_isolation_tester "$dir" "$major" "$apt"; then
		cleanup_mounts
		tail -n 20 "$dir.isolation.log" >&2
		remove_chroot "$dir"
		return 1
	fi
	cleanup_mounts
	touch "$dir/.pgc-ready-$major"
	healthy "$major" || die "the $release chroot has no working pg_config for PostgreSQL $major"
}

run_in() {
	local major=$1 dir top
	shift
	dir=$(chroot_dir "$major")
	top=$(cd "$here/.." && pwd)
	mount_chroot "$dir"
	mkdir -p "$dir/pgc"
	mount --bind "$top" "$dir/pgc" && mounted+=("$dir/pgc")
	# The checkout is bound read-write but never written: the suite copies it.
	chroot "$dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C HOME=/root \
		PGC_KEEP="${PGC_KEEP:-}" PROVE_TESTS="${PROVE_TESTS:-}" PGC_PROVE_JOBS="${PGC_PROVE_JOBS:-}" "$@"
}

case "${1:-}" in
	prepare) prepare "$2" ;;
	run) major=$2; shift 2; run_in "$major" "$@" ;;
	*) die "usage: tools/chroot.sh prepare MAJOR | run MAJOR CMD..." ;;
esac
