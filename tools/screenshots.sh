#!/usr/bin/env bash
# The manual's two pictures, doc/top.png and doc/report.png, from the demo's
# workload on a throwaway cluster (built, installed and started as
# tools/demo.sh does; incidents evaluated every second and closed 3 s after
# their finding is gone):
#
# 1. the demo's case 2 on a server taking 50 orders a second: the billing
#    session idle in transaction, 100,000 dead versions of customer 42's
#    orders, two clients looking them up; its fix (the billing session
#    ends, VACUUM orders) closes both incidents;
# 2. the demo's case 1 (four pgbench clients, 90 savepoints per
#    transaction); while its two incidents are open:
#
#    top.png     pg_contention top in a 160x58 tmux pane (the incidents
#                panel: two open, two closed), its escape sequences turned
#                into HTML
#    report.png  pg_contention report --incident N --html of case 2's
#                closed dead_tuple_index_scan incident
#
#    both rendered by headless Chromium at the height of their page.
#
#   tools/screenshots.sh [DIR]     # DIR: where to write them, doc/ by default
#
# About a minute and a half on two cores.  As root it installs what is
# missing with apt-get (also tmux, chromium, fonts-dejavu-core, optipng) and the
# extension into the system's PostgreSQL, as tools/demo.sh does; as another
# user it needs them installed and uses a private copy of the server.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/common.sh"

out=$(cd "${1:-$top/doc}" && pwd)
major=${PGC_PG_MAJOR:-15}
if [ "$(id -u)" -eq 0 ]; then
	apt_install "postgresql-$major" "postgresql-server-dev-$major" gcc make tmux chromium fonts-dejavu-core optipng
fi
for p in tmux chromium optipng perl; do
	command -v "$p" >/dev/null || die "$p is missing"
done
pg_config=$(pg_config_for "$major")

work=$(mktemp -d /tmp/pgc-shots.XXXXXX)
chmod 755 "$work"
bindir=$("$pg_config" --bindir)
as_user=()
pids=()
tmux_cmd=(tmux -u -S "$work/tmux.sock")
cleanup() {
	"${tmux_cmd[@]}" kill-server >/dev/null 2>&1 || true
	remove_throwaway "$work"
}
trap cleanup EXIT INT TERM
step() { printf '== %s\n' "$*"; }

step "building and installing pg_contention for PostgreSQL $major"
install_for_throwaway "$top" "$pg_config" "$work" >/dev/null

step "starting a throwaway cluster"
# As in the demo, and a horizon held for 5 s reported.
start_throwaway_cluster "$work" "pg_contention.horizon_min_age = '5s'"

export PGHOST=$work PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
psql_cmd=("${as_user[@]}" "$bindir/psql" -X -q -v ON_ERROR_STOP=1)
sql() { "${psql_cmd[@]}" "$@"; }
pgbench_cmd=("${as_user[@]}" "$bindir/pgbench" -n)
create_demo_tables sql

# Polls the incidents until QUERY over them returns "t" (60 s at most).
incidents_until() {
	local what=$1 query=$2
	for _ in $(seq 1 600); do
		[ "$(sql -At -c "SELECT $query FROM pg_contention_incidents")" = t ] && return 0
		sleep 0.1
	done
	die "timed out waiting for $what"
}
render() {	# HTML PNG WIDTH HEIGHT
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/chromium" \
		--force-device-scale-factor=1 --window-size="$3,$4" --screenshot="$2" "file://$1" >/dev/null 2>&1
	[ -s "$2" ] || die "chromium rendered nothing for $1"
	optipng -quiet -o2 "$2"	# lossless, a tenth smaller than Chromium's
}
# The height of the page HTML laid out WIDTH pixels wide (a copy of it
# with a script that writes it in the title, read back from Chromium's DOM).
page_height() {	# HTML WIDTH
	{ cat "$1"; echo '<script>document.title = "height " + document.documentElement.scrollHeight;</script>'; } >"$1.measure.html"
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/chromium" \
		--force-device-scale-factor=1 --window-size="$2,100" --dump-dom "file://$1.measure.html" 2>/dev/null |
		sed -n 's/.*<title>height \([0-9]*\)<\/title>.*/\1/p'
}

echo "SELECT * FROM orders WHERE customer = 42;" >"$work/lookup.sql"
{
	echo '\set c random(1, 10000)'
	echo "INSERT INTO orders (customer, note) VALUES (:c, 'open');"
} >"$work/order.sql"
savepoint_script 90 >"$work/savepoints90.sql"
[ ${#as_user[@]} -eq 0 ] || chown postgres: "$work"/*.sql

step "the demo's case 2, on a server taking orders: an idle transaction, 100,000 dead entries, lookups"
# New orders, 50 a second, from the start: the xmin horizon's age grows
# while the billing session holds it (the report's history before the peak).
"${pgbench_cmd[@]}" -c 1 -R 50 -T 300 -f "$work/order.sql" >/dev/null 2>&1 &
orders=$!
pids+=("$orders")
sleep 8
mkfifo "$work/billing.fifo"
[ ${#as_user[@]} -eq 0 ] || chown postgres: "$work/billing.fifo"
"${psql_cmd[@]}" -f "$work/billing.fifo" >/dev/null 2>&1 &
pids+=($!)
exec 3>"$work/billing.fifo"
echo "SET application_name = 'billing'; BEGIN; SELECT txid_current();" >&3
sleep 8
sql -c "INSERT INTO orders (customer, note) SELECT 42, 'cancelled' FROM generate_series(1, 100000)" \
	-c "DELETE FROM orders WHERE note = 'cancelled'"
# Two clients looking up customer 42's orders, 20 times a second each
# (not holding the billing session's pipe open: 3>&-).
"${pgbench_cmd[@]}" -c 2 -j 2 -R 20 -T 300 -f "$work/lookup.sql" >/dev/null 2>&1 3>&- &
lookups=$!
pids+=("$lookups")
incidents_until "case 2's two incidents to open" \
	"count(*) FILTER (WHERE closed IS NULL AND problem IN ('dead_tuple_index_scan', 'xmin_horizon_held')) = 2"
sleep 3

step "the demo's fix: the billing session ends, then VACUUM orders"
exec 3>&-
incidents_until "the held horizon's incident to close" \
	"count(*) FILTER (WHERE problem = 'xmin_horizon_held' AND closed IS NULL) = 0"
sql -c "VACUUM orders"
incidents_until "the index's incident to close" \
	"count(*) FILTER (WHERE closed IS NULL) = 0"
kill "$orders" "$lookups" 2>/dev/null || true
wait "$orders" "$lookups" 2>/dev/null || true

step "the demo's case 1: four clients, 90 savepoints per transaction"
"${pgbench_cmd[@]}" -M prepared -c 4 -j 2 -T 120 -f "$work/savepoints90.sql" >/dev/null 2>&1 &
overflow=$!
pids+=("$overflow")
incidents_until "case 1's two incidents to open" \
	"count(*) FILTER (WHERE closed IS NULL AND problem IN ('subxact_overflow', 'subtrans_slru_contention')) = 2"

step "top.png: pg_contention top in a 160x58 tmux pane"
"${tmux_cmd[@]}" -f /dev/null new-session -d -s pgc -x 160 -y 58 \
	env LANG=C.UTF-8 TERM=xterm-256color "$bindir/pg_contention" top
# The first frame reads the incidents; a few more fill the sparklines.
for _ in $(seq 1 600); do
	screen=$("${tmux_cmd[@]}" capture-pane -p -t pgc)
	grep -q '^Incidents: 2 open, 2 closed' <<<"$screen" && grep -q ' 64 ovfl ' <<<"$screen" && break
	sleep 0.1
done
grep -q '^Incidents: 2 open, 2 closed' <<<"$screen" || { printf '%s\n' "$screen" >&2; die "top did not show the incidents"; }
sleep 4
# The pane with its escape sequences as a page that looks like the
# terminal, as tall as its lines down to the last that is not blank.
"${tmux_cmd[@]}" capture-pane -p -e -t pgc >"$work/top.txt"
"${tmux_cmd[@]}" send-keys -t pgc q
kill "$overflow" 2>/dev/null || true
wait "$overflow" 2>/dev/null || true
lines=$(sed 's/\x1b\[[0-9;]*m//g' "$work/top.txt" | awk 'NF { n = NR } END { print n }')
head -n "$lines" "$work/top.txt" | perl -e '
	my @palette = qw(#1e1e1e #e06c75 #98c379 #e5c07b #61afef #c678dd #56b6c2 #d0d0d0);
	my (%state, $out);
	local $/;
	binmode STDIN, ":utf8";
	binmode STDOUT, ":utf8";
	for my $part (split /(\e\[[0-9;]*m)/, <STDIN>)
	{
		if ($part =~ /^\e\[([0-9;]*)m$/)
		{
			for my $code (split /;/, ($1 eq "" ? "0" : $1))
			{
				if    ($code == 0)                 { %state = () }
				elsif ($code == 1)                 { $state{bold} = 1 }
				elsif ($code == 4)                 { $state{underline} = 1 }
				elsif ($code == 7)                 { $state{reverse} = 1 }
				elsif ($code == 22)                { delete $state{bold} }
				elsif ($code == 24)                { delete $state{underline} }
				elsif ($code == 27)                { delete $state{reverse} }
				elsif ($code >= 30 && $code <= 37) { $state{fg} = $palette[ $code - 30 ] }
				elsif ($code == 39)                { delete $state{fg} }
				elsif ($code >= 40 && $code <= 47) { $state{bg} = $palette[ $code - 40 ] }
				elsif ($code == 49)                { delete $state{bg} }
			}
			next;
		}
		$part =~ s/&/&amp;/g;
		$part =~ s/</&lt;/g;
		$part =~ s/>/&gt;/g;
		my ($fg, $bg) = ($state{fg} // "#d0d0d0", $state{bg} // "#1e1e1e");
		($fg, $bg) = ($bg, $fg) if $state{reverse};
		my $style = "color:$fg;background:$bg";
		$style .= ";font-weight:bold" if $state{bold};
		$style .= ";text-decoration:underline" if $state{underline};
		$out .= qq{<span style="$style">$part</span>};
	}
	print qq{<!DOCTYPE html><html><head><meta charset="utf-8"><style>}
	  . qq{body{margin:0;background:#1e1e1e}pre{margin:8px;font:13px/1.2 "DejaVu Sans Mono",monospace;color:#d0d0d0}}
	  . qq{</style></head><body><pre>$out</pre></body></html>};
' >"$work/top.html"
height=$(page_height "$work/top.html" 1330)
[ -n "$height" ] || die "could not measure top's page"
render "$work/top.html" "$work/top.png" 1330 "$height"

id=$(sql -At -c "SELECT id FROM pg_contention_incidents WHERE problem = 'dead_tuple_index_scan'")
step "report.png: pg_contention report --incident $id --html"
"$bindir/pg_contention" report --incident "$id" --html "$work/report.html"
height=$(page_height "$work/report.html" 1000)
[ -n "$height" ] || die "could not measure the report's height"
render "$work/report.html" "$work/report.png" 1000 "$height"

cp "$work/top.png" "$work/report.png" "$out/"
ls -l "$out/top.png" "$out/report.png"
