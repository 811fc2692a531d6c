#!/bin/sh
# The client on the PATH after make install, as the package puts it
# (debian/pg-contention.postinst.in): on a Debian-style install (the
# server's bin directory under /usr/lib/postgresql/, postgresql-common's
# pg_wrapper present), /usr/bin/pg_contention becomes a link to pg_wrapper,
# which runs the default cluster's version of the client, as it does psql.
# Anywhere else, it says where the client went and how to reach it.  A
# staged install (DESTDIR) touches nothing outside the stage.
#
#   on-path.sh install|uninstall DESTDIR BINDIR
set -e
action=$1 destdir=$2 bindir=$3
link=/usr/bin/pg_contention
wrapper=/usr/share/postgresql-common/pg_wrapper
target=../share/postgresql-common/pg_wrapper

[ -z "$destdir" ] || exit 0
case $action in
	install)
		if [ "$(readlink "$link" 2>/dev/null)" = "$target" ]; then
			echo "pg_contention: the client is $bindir/pg_contention, on the PATH as $link (pg_wrapper, as psql)"
		elif [ -e "$link" ] || [ -L "$link" ]; then
			echo "pg_contention: the client is $bindir/pg_contention ($link is another program: left alone)"
		elif [ -x "$wrapper" ] && [ -w /usr/bin ] && case $bindir in /usr/lib/postgresql/*/bin) true ;; *) false ;; esac; then
			ln -s "$target" "$link"
			echo "pg_contention: the client is $bindir/pg_contention, on the PATH as $link (pg_wrapper, as psql)"
		else
			echo "pg_contention: the client is $bindir/pg_contention: add $bindir to PATH (or link it into a directory on it)"
		fi
		;;
	uninstall)
		# The link goes with the last client of any version.
		if [ "$(readlink "$link" 2>/dev/null)" = "$target" ] &&
			! ls /usr/lib/postgresql/*/bin/pg_contention >/dev/null 2>&1; then
			rm -f "$link"
		fi
		;;
esac
