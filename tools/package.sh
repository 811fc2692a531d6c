#!/usr/bin/env bash
# pg_contention as DBAs install it: the Debian package and the PGXN
# metadata, on the PostgreSQL version this machine's Debian carries (15 on
# bookworm).
#
#   tools/package.sh
#
#   1. META.json: valid JSON, every field the PGXN meta spec 1.0.0 requires,
#      its version that of pg_contention.control, the files it names present.
#   2. dpkg-buildpackage -us -uc -b on a scratch copy of the checkout
#      (debian/control regenerated first with pg_buildext updatecontrol).
#      The build keeps what it did not build: a client built in the tree
#      (client/pg_contention) is there after it.
#   3. apt-get install ./postgresql-N-pg-contention_*.deb: the extension, its
#      SQL files and the client in the server's directories.  A file of the
#      package's that no package owns (a make install of a checkout) is
#      kept aside first, and put back after the purge (or when this script
#      stops early): the server is never left without its library.
#   4. debian/tests/installcheck (the regression and isolation suites) on
#      the installed package, as the user postgres, and the packaged client.
#   5. apt-get purge: every file of the package gone, and what it replaced
#      back, byte for byte.  (When no such file is there, a marker in the
#      client's place stands for one, so that this is always tested.)
#
# Needs root (it installs packages); as another user it is SKIPPED.  The last
# line printed is "package: PASSED FAILED SKIPPED" for tools/test.sh.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/common.sh"

passed=0
failed=0
step() {	# NAME COMMAND...: run one step, count it
	local name=$1
	shift
	if "$@"; then
		log "ok: $name"
		passed=$((passed + 1))
	else
		log "FAILED: $name"
		failed=$((failed + 1))
	fi
}
finish() { echo "package: $passed $failed ${1:-0}"; exit $((failed > 0)); }

# 1. PGXN metadata: the spec's required fields, checked here (Debian has no
# PGXN validator).
check_meta() {
	perl -MJSON::PP -e '
		my ($file, $control) = @ARGV;
		local $/;
		open(my $fh, "<", $file) or die "$file: $!\n";
		my $meta = JSON::PP->new->decode(<$fh>);
		open($fh, "<", $control) or die "$control: $!\n";
		my ($default) = <$fh> =~ /^default_version\s*=\s*\x27([^\x27]+)\x27/m;
		my @errors;
		for my $field (qw(name abstract maintainer version license provides meta-spec)) {
			push @errors, "missing $field" unless defined $meta->{$field};
		}
		my $semver = qr/^\d+\.\d+\.\d+$/;
		push @errors, "version $meta->{version} is not semantic (x.y.z)"
			unless ($meta->{version} // "") =~ $semver;
		push @errors, "meta-spec version must be 1.0.0"
			unless ($meta->{"meta-spec"}{version} // "") eq "1.0.0";
		push @errors, "version $meta->{version} is not the control file\x27s $default"
			unless ($meta->{version} // "") eq "$default.0";
		my $ext = $meta->{provides}{pg_contention};
		push @errors, "provides has no pg_contention" unless $ext;
		for my $p (values %{ $meta->{provides} // {} }) {
			push @errors, "a provided extension lacks file or version"
				unless $p->{file} && ($p->{version} // "") =~ $semver;
			push @errors, "$p->{file} does not exist" if $p->{file} && !-f $p->{file};
			push @errors, "$p->{docfile} does not exist" if $p->{docfile} && !-f $p->{docfile};
		}
		push @errors, "maintainer must be a string or a list"
			unless !ref $meta->{maintainer} || ref $meta->{maintainer} eq "ARRAY";
		my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd
			freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0
			mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib open_source
			restricted unrestricted unknown);
		push @errors, "license $meta->{license} is not one the spec names"
			unless ref $meta->{license} || $licenses{ $meta->{license} // "" };
		print map { "META.json: $_\n" } @errors;
		exit(@errors ? 1 : 0);
	' "$top/META.json" "$top/pg_contention.control"
}
(cd "$top" && step "META.json meets the PGXN meta spec 1.0.0" check_meta)

if [ "$(id -u)" -ne 0 ]; then
	log "SKIPPED: building and installing the Debian package needs root"
	finish 1
fi

major=$(/usr/share/postgresql-common/supported-versions 2>/dev/null | tail -n 1)
[ -n "$major" ] || { apt_install postgresql-common; major=$(/usr/share/postgresql-common/supported-versions | tail -n 1); }
apt_install dpkg-dev debhelper postgresql-server-dev-all libpq-dev gcc make \
	"postgresql-$major" libipc-run-perl
package=postgresql-$major-pg-contention
# A package installed already is somebody's: this script would replace it
# and purge it, leaving the server without the library.
if dpkg -s "$package" 2>/dev/null | grep -q '^Status: install ok installed'; then
	log "SKIPPED: $package is installed on this machine; remove it first (this script installs its own build and purges it)"
	finish 1
fi

work=$(mktemp -d /tmp/pgc-package.XXXXXX)
# What the package replaced (files no package owns), kept aside under
# $work/replaced until the purge; put back whenever this script ends.
installed_here=0
planted=
restore_replaced() {
	local f d mode owner group failed=0
	if [ "$installed_here" -eq 1 ] && dpkg -s "$package" >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "$package" >/dev/null 2>&1
	fi
	[ -f "$work/replaced.list" ] || return 0
	# File by file: never a directory's attributes copied onto the
	# system's.  A directory the purge removed with the package's files (a
	# make install's own, such as the bitcode's) is made again, as it was.
	while IFS= read -r f; do
		d=$(dirname "$f")
		if [ ! -d "$d" ]; then
			mkdir -p "$d"
			read -r mode owner group _ < <(awk -v d="$d" '$4 == d { print; exit }' "$work/dirs.before") &&
				chmod "$mode" "$d" && chown "$owner:$group" "$d"
		fi
		cp -a "$work/replaced$f" "$f" || { log "could not put back $f"; failed=1; }
	done <"$work/replaced.list"
	# The marker that stood for a make-installed client is not one.
	[ -z "$planted" ] || rm -f "$planted"
	if [ "$failed" -eq 0 ]; then
		rm -f "$work/replaced.list"
	else
		keep_work=1
		log "what could not be put back is kept in $work/replaced"
		return 1
	fi
}
keep_work=0
trap 'restore_replaced; [ "$keep_work" -eq 1 ] || rm -rf "$work"' EXIT
chmod 755 "$work"
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
src=$work/pg-contention-$version
copy_checkout "$top" "$src"

# 2. Build, with a client built in the tree beforehand (a marker).
in_tree_client='#!/bin/sh
echo "a client built in the tree"'
build() {
	printf '%s\n' "$in_tree_client" >"$src/client/pg_contention"
	(cd "$src" && pg_buildext updatecontrol && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
		{ tail -n 40 "$work/build.log" >&2; return 1; }
	ls "$work/${package}_${version}_"*.deb >/dev/null 2>&1 ||
		{ log "no ${package} package was built"; ls "$work" >&2; return 1; }
}
step "dpkg-buildpackage builds $package $version" build || finish
kept_in_tree() {
	[ "$(cat "$src/client/pg_contention" 2>/dev/null)" = "$in_tree_client" ] ||
		{ log "the build removed or replaced client/pg_contention, which it did not build"; return 1; }
	rm -f "$src/client/pg_contention"
}
step "the build keeps a client built in the tree" kept_in_tree

# 3. Install, and see the files where the server looks for them.
pg_config=/usr/lib/postgresql/$major/bin/pg_config
install_package() {
	local f
	# Keep aside every file of the package that is there and no package
	# owns: a make install of a checkout, which the purge would remove.
	if [ ! -e "$("$pg_config" --bindir)/pg_contention" ]; then
		planted=$("$pg_config" --bindir)/pg_contention
		printf '#!/bin/sh\necho "a make-installed client"\n' >"$planted"
	fi
	: >"$work/replaced.list"
	for f in $(dpkg-deb --fsys-tarfile "$work/${package}_${version}_"*.deb | tar -t | sed 's|^\.||'); do
		[ -f "$f" ] && ! dpkg -S "$f" >/dev/null 2>&1 || continue
		mkdir -p "$work/replaced$(dirname "$f")" && cp -a "$f" "$work/replaced$f" || return 1
		echo "$f" >>"$work/replaced.list"
	done
	while IFS= read -r f; do sha256sum "$f"; done <"$work/replaced.list" >"$work/replaced.sha256"
	# The modes of the directories it installs into, to compare after.
	dpkg-deb --fsys-tarfile "$work/${package}_${version}_"*.deb | tar -t | sed 's|^\.||; s|/$||' |
		while IFS= read -r f; do [ -d "$f" ] && stat -c '%a %u %g %n' "$f"; done >"$work/dirs.before"
	log "kept aside, to put back after the purge: $(wc -l <"$work/replaced.list") file(s) no package owns"
	# The link to pg_wrapper that a make install may have made already.
	link_before=$(readlink /usr/bin/pg_contention 2>/dev/null || true)
	installed_here=1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$work/${package}_${version}_"*.deb \
		>"$work/install.log" 2>&1 || { tail -n 20 "$work/install.log" >&2; return 1; }
	local f
	for f in "$("$pg_config" --pkglibdir)/pg_contention.so" \
		"$("$pg_config" --sharedir)/extension/pg_contention.control" \
		"$("$pg_config" --sharedir)/extension/pg_contention--1.4.sql" \
		"$("$pg_config" --bindir)/pg_contention"; do
		dpkg -S "$f" 2>/dev/null | grep -q "^$package:" || { log "$f is not from $package"; return 1; }
	done
}
step "apt-get install ./${package}_${version}_*.deb puts the module, the SQL and the client in place" \
	install_package || finish

# 4. The package's own test (debian/tests/installcheck) as postgres, in
# the built tree (cleaned by the build): the suites use what is installed.
installcheck() {
	chown -R postgres: "$src"
	(cd "$src" && runuser -u postgres -- env HOME="$work" debian/tests/installcheck) \
		>"$work/installcheck.log" 2>&1 || { tail -n 40 "$work/installcheck.log" >&2; return 1; }
	grep -Eq 'All [0-9]+ tests passed' "$work/installcheck.log"
}
step "debian/tests/installcheck passes against the installed package" installcheck
client_version() {
	"$("$pg_config" --bindir)/pg_contention" --version | grep -q "^pg_contention (client) $version"
}
step "the packaged client answers --version" client_version
on_path() {
	[ "$(readlink /usr/bin/pg_contention)" = ../share/postgresql-common/pg_wrapper ] ||
		{ log "/usr/bin/pg_contention is not the link to pg_wrapper"; return 1; }
	(cd / && PATH=/usr/bin:/bin pg_contention --version 2>/dev/null) | grep -q "^pg_contention (client) $version" ||
		{ log "pg_contention on the PATH does not answer --version"; return 1; }
}
step "the client is on the PATH: pg_contention --version, through pg_wrapper as psql" on_path

# 5. Remove it: nothing of it left.
purge() {
	local files
	files=$(dpkg -L "$package" | while read -r f; do [ -f "$f" ] && echo "$f"; done)
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "$package" >"$work/purge.log" 2>&1 ||
		{ tail -n 20 "$work/purge.log" >&2; return 1; }
	for f in $files; do
		[ ! -e "$f" ] || { log "$f is left after purge"; return 1; }
	done
	# The link goes with the last client (none is left: the one a make
	# install put there is kept aside until put_back).
	[ ! -L /usr/bin/pg_contention ] || ls /usr/lib/postgresql/*/bin/pg_contention >/dev/null 2>&1 ||
		{ log "/usr/bin/pg_contention is left after purge"; return 1; }
	! dpkg -s "$package" >/dev/null 2>&1
}
step "apt-get purge $package removes every file it installed" purge
put_back() {
	local marker=$planted rc=0
	planted=	# checked below, then removed whatever the checks say
	restore_replaced || rc=1
	if [ "$rc" -eq 0 ]; then
		[ -s "$work/replaced.sha256" ] || { log "nothing was kept aside"; rc=1; }
		sha256sum --quiet -c "$work/replaced.sha256" || rc=1
		while IFS=' ' read -r _ _ _ f; do stat -c '%a %u %g %n' "$f"; done <"$work/dirs.before" >"$work/dirs.after"
		diff "$work/dirs.before" "$work/dirs.after" >&2 || { log "a directory's mode or owner changed"; rc=1; }
	fi
	[ -z "$marker" ] || rm -f "$marker"
	# A make install's link, taken away with the last client by the purge.
	if [ -n "${link_before:-}" ] && [ ! -L /usr/bin/pg_contention ]; then
		ln -s "$link_before" /usr/bin/pg_contention || rc=1
	fi
	return "$rc"
}
step "what the package replaced is back after the purge, byte for byte, every directory as it was" put_back
finish
