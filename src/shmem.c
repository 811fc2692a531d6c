/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		pg_contention's shared memory: its size, its creation at postmaster
 *		start, and the check that every SQL entry point makes before using it.
 *
 * Owns PgcSharedState (one ShmemInitStruct block named "pg_contention") and
 * the LWLock tranche "pg_contention".
 *
 * Locking: the block is created once under AddinShmemInitLock.  pgc_shared
 * is set in every process that attached it; it stays NULL when the library
 * was not preloaded, which is how pgc_require_loaded() tells.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

PgcSharedState *pgc_shared = NULL;

#define PGC_TRANCHE_NAME "pg_contention"

static Size
pgc_shmem_size(void)
{
	return MAXALIGN(sizeof(PgcSharedState));
}

/*
 * Ask for our shared memory and LWLocks.  Called from shmem_request_hook on
 * PG15+, from _PG_init on older releases.
 */
void
pgc_shmem_request(void)
{
	RequestAddinShmemSpace(pgc_shmem_size());
	RequestNamedLWLockTranche(PGC_TRANCHE_NAME, 1);
}

/*
 * Create or attach the shared state.  Called from shmem_startup_hook in the
 * postmaster (and in every backend under EXEC_BACKEND).
 */
void
pgc_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pgc_shared = ShmemInitStruct("pg_contention", pgc_shmem_size(), &found);
	if (!found)
	{
		memset(pgc_shared, 0, pgc_shmem_size());
		pgc_shared->lock = &(GetNamedLWLockTranche(PGC_TRANCHE_NAME))->lock;
		pgc_shared->started_at = GetCurrentTimestamp();
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Every SQL-callable function starts here: without shared_preload_libraries
 * there is no shared state and no hook, so nothing it reports would be true.
 */
void
pgc_require_loaded(void)
{
	if (pgc_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_contention must be loaded via shared_preload_libraries"),
				 errhint("Add pg_contention to shared_preload_libraries in postgresql.conf and restart the server.")));
}
