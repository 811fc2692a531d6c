/*-------------------------------------------------------------------------
 *
 * module.c
 *		The module's entry point, _PG_init: the settings defined, the
 *		shared memory requested, the hooks installed, the two workers
 *		registered.
 *
 * Owns nothing.  Everything here runs in the postmaster at start-up, so
 * there is no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "storage/ipc.h"

PGC_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);

#ifdef PGC_HAVE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

#ifdef PGC_HAVE_SHMEM_REQUEST_HOOK
static void
pgc_shmem_request_hook(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	pgc_shmem_request();
}
#endif

static void
pgc_shmem_startup_hook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	/*
	 * The postmaster creating the stores (at start, or after a crash) fills
	 * them from the file the last save left, before any other process
	 * exists to see them.
	 */
	if (pgc_shmem_startup() && !IsUnderPostmaster)
		pgc_persist_load();
}

void
_PG_init(void)
{
	/*
	 * Without shared_preload_libraries there is no shared memory to work
	 * with.  Do not error: CREATE EXTENSION must still succeed, and every
	 * SQL function then explains what is missing (pgc_require_loaded).
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	pgc_define_settings();

	/*
	 * Statements are identified by the server's query id; with
	 * compute_query_id = auto (the default) it is computed only when a
	 * module asks, as pg_stat_statements does.  PG13 gets a fallback.
	 */
	pgc_compat_init();

#ifdef PGC_HAVE_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pgc_shmem_request_hook;
#else
	pgc_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pgc_shmem_startup_hook;

	pgc_hooks_install();
	pgc_current_statement_init();
	pgc_subxact_init();
	pgc_sampler_register();
	pgc_incidents_register();
}
