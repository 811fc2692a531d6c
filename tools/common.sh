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
