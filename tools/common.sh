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
	# The server's translations, where it looks for them from the copy
	# (relative to its binaries): linked, not copied.
	d=$("$pgc" --localedir)
	if [ -d "$d" ] && [ ! -e "$stage$d" ]; then
		mkdir -p "$(dirname "$stage$d")"
		ln -s "$d" "$stage$d"
	fi
}

# For the demo and the pictures: build the checkout $1 in $3/src against
# pg_config $2 and install it where the server finds it: into the server
# itself as root (then everything in $3 belongs to postgres, and as_user
# runs commands as postgres) or when its directories are writable,
# otherwise into a private copy of the server in $3/stage (bindir points
# there).  Sets bindir and as_user; says where on stdout.
install_for_throwaway() {
	local top=$1 pg_config=$2 work=$3
	bindir=$("$pg_config" --bindir)
	as_user=()
	copy_checkout "$top" "$work/src"
	make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no >"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; die "build failed"; }
	if [ "$(id -u)" -eq 0 ] ||
		{ [ -w "$("$pg_config" --pkglibdir)" ] && [ -w "$("$pg_config" --sharedir)/extension" ]; }; then
		make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no install >>"$work/build.log" 2>&1 ||
			{ cat "$work/build.log" >&2; die "install failed"; }
		echo "installed into $("$pg_config" --pkglibdir) and $("$pg_config" --sharedir)/extension"
	else
		stage_server "$pg_config" "$work/stage"
		make -s -C "$work/src" PG_CONFIG="$pg_config" with_llvm=no install DESTDIR="$work/stage" >>"$work/build.log" 2>&1 ||
			{ cat "$work/build.log" >&2; die "install failed"; }
		bindir=$work/stage$bindir
		echo "not root: installed into a private copy of the server in $work/stage"
	fi
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || die "user postgres is missing (it comes with the postgresql package)"
		chown -R postgres: "$work"
		as_user=(runuser -u postgres --)
	fi
}

# Start a throwaway cluster in $1/data with pg_contention preloaded, a
# socket in $1 on port 5432 and no TCP, the incidents evaluated every
# second and closed 3 s after their finding is gone (10 s and 1 min by
# default: the short cases open and close theirs), and the settings $2
# (lines of postgresql.conf).
start_throwaway_cluster() {
	local work=$1 extra=${2:-}
	"${as_user[@]}" "$bindir/initdb" -D "$work/data" -A trust -U postgres --no-sync >"$work/initdb.log" 2>&1 ||
		{ cat "$work/initdb.log" >&2; die "initdb failed"; }
	cat >>"$work/data/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_contention'
listen_addresses = ''
unix_socket_directories = '$work'
port = 5432
pg_contention.incident_interval = 1
pg_contention.incident_close_after = 3
$extra
CONF
	"${as_user[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null ||
		{ cat "$work/server.log" >&2; die "the server did not start"; }
}

# The demo's tables (run through the caller's sql function: psql's
# arguments): case 1's contend, 10,000 rows on half-full pages; case 2's
# orders of 10,000 customers with an index on the customer.
create_demo_tables() {
	"$1" -c "CREATE EXTENSION pg_contention" \
		-c "CREATE UNLOGGED TABLE contend (id integer PRIMARY KEY, val integer NOT NULL) WITH (fillfactor = 50)" \
		-c "INSERT INTO contend SELECT i, 0 FROM generate_series(1, 10000) AS i" \
		-c "VACUUM ANALYZE contend" \
		-c "CREATE TABLE orders (id bigserial PRIMARY KEY, customer integer NOT NULL, note text)" \
		-c "CREATE INDEX orders_customer ON orders (customer)" \
		-c "INSERT INTO orders (customer, note) SELECT g % 10000, 'open' FROM generate_series(1, 200000) AS g" \
		-c "VACUUM ANALYZE orders"
}

# Case 1's pgbench script: a transaction of N rounds of SAVEPOINT, a range
# read and an update of four rows of contend, each client on its own rows.
savepoint_script() {
	local n=$1 i
	echo "BEGIN;"
	for ((i = 1; i <= n; i++)); do
		echo "SAVEPOINT a;"
		echo '\set rnd random(1, 990)'
		echo "SELECT count(*) FROM contend WHERE id BETWEEN 10 * :rnd + :client_id + 1 AND 10 * :rnd + :client_id + 101;"
		echo "UPDATE contend SET val = val + 1 WHERE id IN (10 * :rnd + :client_id, 10 * :rnd + :client_id + 10, 10 * :rnd + :client_id + 20, 10 * :rnd + :client_id + 30);"
	done
	echo "COMMIT;"
}

# A throwaway's end: the background commands in pids killed, its server
# stopped at once, its directory $1 removed.
remove_throwaway() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -f "$1/data/postmaster.pid" ]; then
		"${as_user[@]}" "$bindir/pg_ctl" -D "$1/data" -m immediate stop >/dev/null 2>&1 || true
	fi
	rm -rf "$1"
}
