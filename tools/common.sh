# Shared shell helpers for the tools/ scripts.  Sourced, not run.

log() { printf '%s\n' "pg_contention: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Install Debian packages when root; otherwise say what to install and stop.
apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		die "missing packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}"
	fi
	log "installing ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/tmp/pgc-apt.$$.log 2>&1; then
		apt-get update -qq >/dev/null 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/tmp/pgc-apt.$$.log 2>&1 ||
			{ tail -n 20 /tmp/pgc-apt.$$.log >&2; die "apt-get install ${missing[*]} failed"; }
	fi
	rm -f /tmp/pgc-apt.$$.log
}

# The pg_config of PostgreSQL MAJOR (Debian layout), else the one on PATH.
pg_config_for() {
	local major=$1 pgc=/usr/lib/postgresql/$1/bin/pg_config
	[ -x "$pgc" ] || pgc=$(command -v pg_config || true)
	[ -n "$pgc" ] && "$pgc" --version 2>/dev/null | grep -q "PostgreSQL $major\." ||
		die "no pg_config for PostgreSQL $major: install postgresql-$major and postgresql-server-dev-$major"
	[ -f "$("$pgc" --pgxs)" ] || die "PGXS is missing: install postgresql-server-dev-$major"
	echo "$pgc"
}

# A clean copy of the checkout in DEST: no .git, no earlier build or test
# output.  The checkout itself is never written.
copy_checkout() {
	local src=$1 dest=$2
	mkdir -p "$dest"
	tar -C "$src" --exclude=.git --exclude='tmp_check*' --exclude=results \
		--exclude=output_iso --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=./client/pg_contention \
		-cf - . | tar -C "$dest" -xf -
}

# A private copy of the server installation: its bin, lib and share
# directories at their own paths under STAGE.  PostgreSQL finds its share
# and library directories relative to its binary, so a server started from
# STAGE$bindir loads extensions installed with "make install DESTDIR=STAGE",
# and the system's installation is not modified.
stage_server() {
	local pgc=$1 stage=$2 d
	for d in "$("$pgc" --bindir)" "$("$pgc" --pkglibdir)" "$("$pgc" --sharedir)"; do
		mkdir -p "$stage$d"
		cp -a "$d/." "$stage$d/"
	done
}
