/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		pg_contention's shared memory: its size, its creation at postmaster
 *		start, and the check that every SQL entry point makes before using it.
 *
 * Owns PgcSharedState (the ShmemInitStruct block "pg_contention") and the
 * LWLock tranche "pg_contention"; the statement hash (statements.c), the
 * event ring (subxact.c) and the sampler's stores (sampler.c) create their
 * own blocks from here.
 *
 * Size, all from PGC_POSTMASTER settings:
 *   header + max_events * MAXALIGN(sizeof(event) + max_query_length)
 *          + hash_estimate_size(max_statements,
 *                               MAXALIGN(sizeof(entry) + max_query_length))
 *          + max_profile_entries * sizeof(profile entry)
 *          + history_seconds * sizeof(history bucket)
 *          + processes * 8 (current query ids)
 * (about 9.2 MB with the defaults).
 *
 * Locking: the blocks are created once under AddinShmemInitLock.
 * pgc_shared is set in every process that attached them; it stays NULL
 * when the library was not preloaded, which is how pgc_require_loaded()
 * tells.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

PgcSharedState *pgc_shared = NULL;

#define PGC_TRANCHE_NAME "pg_contention"
#define PGC_NUM_LOCKS 3

static Size
pgc_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(PgcSharedState));

	size = add_size(size, pgc_events_shmem_size());
	size = add_size(size, pgc_statements_shmem_size());
	size = add_size(size, pgc_sampler_shmem_size());
	return size;
}

/*
 * Ask for our shared memory and LWLocks.  Called from shmem_request_hook on
 * PG15+, from _PG_init on older releases.
 */
void
pgc_shmem_request(void)
{
	RequestAddinShmemSpace(pgc_shmem_size());
	RequestNamedLWLockTranche(PGC_TRANCHE_NAME, PGC_NUM_LOCKS);
}

/*
 * Create or attach the shared state.  Called from shmem_startup_hook in the
 * postmaster (and in every backend under EXEC_BACKEND).
 */
void
pgc_shmem_startup(void)
{
	bool		found;
	PgcSharedState *shared;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("pg_contention", sizeof(PgcSharedState), &found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche(PGC_TRANCHE_NAME);

		memset(shared, 0, sizeof(PgcSharedState));
		shared->statements_lock = &locks[0].lock;
		shared->events_lock = &locks[1].lock;
		shared->sampler_lock = &locks[2].lock;
		shared->started_at = GetCurrentTimestamp();
		shared->stats_reset = shared->started_at;
		pg_atomic_init_u64(&shared->statements_generation, 0);
	}
	pgc_events_shmem_init();
	pgc_statements_shmem_init(!found);
	pgc_sampler_shmem_init();
	LWLockRelease(AddinShmemInitLock);

	/* Only now is everything usable. */
	pgc_shared = shared;
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

PG_FUNCTION_INFO_V1(pg_contention_reset);
PG_FUNCTION_INFO_V1(pg_contention_info);

/*
 * pg_contention_reset(): forget every statement and event, and the counts
 * of evictions and drops.  EXECUTE is revoked from PUBLIC in the install
 * script.  Takes each store's lock exclusively, one after the other.
 */
Datum
pg_contention_reset(PG_FUNCTION_ARGS)
{
	pgc_require_loaded();

	LWLockAcquire(pgc_shared->statements_lock, LW_EXCLUSIVE);
	pgc_statements_reset();
	LWLockRelease(pgc_shared->statements_lock);

	LWLockAcquire(pgc_shared->events_lock, LW_EXCLUSIVE);
	pgc_events_reset();
	pgc_shared->stats_reset = GetCurrentTimestamp();
	LWLockRelease(pgc_shared->events_lock);

	pgc_sampler_reset();

	PG_RETURN_VOID();
}

#define INFO_COLS 7

/*
 * pg_contention_info(): capacities, fill and the eviction and drop counters
 * of the bounded stores, and when they were last reset.
 */
Datum
pg_contention_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[INFO_COLS];
	bool		nulls[INFO_COLS] = {0};
	int64		statements;
	int64		evictions;
	int64		written;
	TimestampTz reset;

	pgc_require_loaded();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(pgc_shared->statements_lock, LW_SHARED);
	statements = pgc_statements_count();
	evictions = pgc_shared->statement_evictions;
	LWLockRelease(pgc_shared->statements_lock);
	LWLockAcquire(pgc_shared->events_lock, LW_SHARED);
	written = pgc_shared->events_written;
	reset = pgc_shared->stats_reset;
	LWLockRelease(pgc_shared->events_lock);

	values[0] = TimestampTzGetDatum(reset);
	values[1] = Int32GetDatum(pgc_max_statements);
	values[2] = Int32GetDatum((int32) statements);
	values[3] = Int64GetDatum(evictions);
	values[4] = Int32GetDatum(pgc_max_events);
	values[5] = Int64GetDatum(written);
	values[6] = Int64GetDatum(Max(written - pgc_max_events, 0));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
