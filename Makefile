# pg_contention: PGXS build.
#
#   make && make install                 build and install against $(PG_CONFIG):
#                                        the extension, and the client program
#                                        (client/, its own PGXS Makefile, since
#                                        one builds a module or a program)
#   make installcheck                    regression + isolation + TAP tests on
#                                        temporary servers (needs the install;
#                                        not as root: initdb refuses it; the
#                                        tests of the spinlock need the test
#                                        module test/modules/pgc_spin_test
#                                        installed, else they are skipped)
#   make regresscheck | isolationcheck | tapcheck   one kind only
#
#   make sql                             regenerate the current version's
#                                        install and update scripts from the
#                                        SQL sources in src/sql/ (tools/sql.sh)
#
# PGC_WERROR=-Werror turns warnings into errors (the test suite does).

EXTENSION = pg_contention
MODULE_big = pg_contention
# src/ holds the module's entry, the shared header and the compat files;
# each subsystem is a folder with its private header (doc/internals.md).
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))
DATA = $(wildcard pg_contention--*.sql)
PGFILEDESC = "pg_contention - names the causes of contention"

PGC_WERROR ?=
PG_CPPFLAGS = -I$(srcdir)/src
# Hidden by default: only what the server looks up is exported (compat.h).
# Link-time optimisation lets the statement path, spread over files by
# responsibility (hooks.c, indexscan.c, statements.c, current_statement.c),
# compile as one: the executor hooks are flattened (pg_contention.h,
# PGC_FLATTEN), which saves about 120 instructions per statement
# (BENCHMARKS.md, issue 23).  -fno-plt: calls into the server go through
# the GOT, resolved when the library is loaded (the server loads it with
# RTLD_NOW anyway), without a PLT stub's jump each: 7 instructions per
# statement (issue 26).  The bitcode for the server's JIT is built apart
# and is not affected.
PG_CFLAGS = -Wall -Wmissing-prototypes -fvisibility=hidden -flto -fno-plt $(PGC_WERROR)

# Every test server is a temporary one with the library preloaded.
REGRESS = $(sort $(notdir $(basename $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-config=$(srcdir)/pg_contention.conf --temp-instance=./tmp_check_regress
ISOLATION = $(sort $(notdir $(basename $(wildcard specs/*.spec))))
ISOLATION_OPTS = --temp-config=$(srcdir)/pg_contention.conf --temp-instance=./tmp_check_iso
TAP_TESTS = 1

EXTRA_CLEAN = tmp_check_regress tmp_check_iso output_iso results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The link step of the link-time optimisation; with GCC in one partition
# (a small library: no warning about serial jobs).
ifneq (,$(findstring gcc,$(notdir $(CC))))
SHLIB_LINK += -flto -flto-partition=one
else
SHLIB_LINK += -flto
endif

.PHONY: sql regresscheck isolationcheck tapcheck
sql:
	$(srcdir)/tools/sql.sh

# Every test starts servers of its own, and initdb refuses to run as root.
ifeq ($(shell id -u),0)
installcheck regresscheck isolationcheck tapcheck: refuse-root
endif
.PHONY: refuse-root
refuse-root:
	@echo 'make installcheck starts its own servers, and initdb refuses to run as root: run it as the user who owns the build tree, or run tools/test.sh, which runs the tests as the user postgres' >&2
	@exit 1

regresscheck:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
isolationcheck:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
tapcheck:
	$(prove_installcheck)

# PGXS does not track header dependencies for extensions.
$(OBJS): src/pg_contention.h src/compat.h $(wildcard src/*/*.h)

# The client program, after PGXS's own targets (the first rule is the default).
.PHONY: client-all client-install client-uninstall client-clean
all: client-all
install: client-install
uninstall: client-uninstall
clean: client-clean
client-all:
	$(MAKE) -C client PG_CONFIG='$(PG_CONFIG)'
client-install: client-all
	$(MAKE) -C client PG_CONFIG='$(PG_CONFIG)' install
	@$(srcdir)/client/on-path.sh install '$(DESTDIR)' '$(bindir)'
client-uninstall:
	$(MAKE) -C client PG_CONFIG='$(PG_CONFIG)' uninstall
	@$(srcdir)/client/on-path.sh uninstall '$(DESTDIR)' '$(bindir)'
client-clean:
	$(MAKE) -C client PG_CONFIG='$(PG_CONFIG)' clean
