/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		pg_contention's shared memory: the stores' sizes and creation at
 *		postmaster start (module.c then has persist.c load the file into
 *		them), the check that every SQL entry point makes before using
 *		them, and their reset, all of them in the registry's order
 *		(pg_contention_reset(), readers/info.c).
 *
 * Owns the LWLock tranche "pg_contention" (one lock per store that needs
 * one, handed to the store at creation) and a small header
 * (ShmemInitStruct "pg_contention": when the stores were created and last
 * reset, under its own spinlock).  Each store owns its block, its lock and
 * its reset; this file only calls them, walking the registry (stores.c)
 * in its order.  persist.c reads and restores the reset time here, which
 * the file carries.
 *
 * Size, all from PGC_POSTMASTER settings:
 *   max_events * MAXALIGN(sizeof(event) + max_query_length)
 *   + hash_estimate_size(max_statements,
 *                        MAXALIGN(sizeof(entry) + max_query_length))
 *   + max_profile_entries * 32 + history_seconds * sizeof(bucket)
 *   + processes * 24 (published statements)
 *   + max_incidents * sizeof(Incident) (about 24 kB each)
 *   + 256 kB (the incidents worker's last findings, for check)
 *   + processes * 24 + max_replication_slots * 88 (xmin since)
 * (BENCHMARKS.md measures the total at the defaults: 2.4 MB of it for
 * the incidents and 0.25 MB for the last findings; pg_shmem_allocations
 * lists each block).
 *
 * Locking: the blocks are created once under AddinShmemInitLock.
 * pgc_shared is set in every process that attached them; it stays NULL
 * when the library was not preloaded, which is how pgc_require_loaded()
 * tells.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/builtins.h"

typedef struct RegistryHeader
{
	slock_t		mutex;
	TimestampTz started_at;
	TimestampTz stats_reset;	/* last pg_contention_reset(), or start */
	int			own_pids[PGC_NUM_WORKERS];	/* 0: not running */
} RegistryHeader;

void	   *pgc_shared = NULL;

#define PGC_TRANCHE_NAME "pg_contention"

static int
lock_count(void)
{
	int			n = 0;

	for (int i = 0; i < pgc_num_stores; i++)
		n += pgc_stores[i].needs_lock;
	return n;
}

static Size
pgc_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(RegistryHeader));

	for (int i = 0; i < pgc_num_stores; i++)
		if (pgc_stores[i].shmem_size)
			size = add_size(size, MAXALIGN(pgc_stores[i].shmem_size()));
	return size;
}

/*
 * Ask for our shared memory and LWLocks.  Called from shmem_request_hook on
 * PG15+, from _PG_init on older releases.
 */
void
pgc_shmem_request(void)
{
	Size		size = pgc_shmem_size();
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page_size = sysconf(_SC_PAGESIZE);

	/*
	 * Settings that ask for more than the machine has would fail later
	 * with the server's generic message about shared memory: say which
	 * settings, and how much they need.
	 */
	if (pages > 0 && page_size > 0 && size / page_size > (Size) pages)
		ereport(FATAL,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("pg_contention needs %zu MB of shared memory, more than this machine's %ld MB",
						size / (1024 * 1024), pages / (1024 * 1024 / page_size)),
				 errdetail("pg_contention.max_events = %d, max_statements = %d, max_profile_entries = %d and history_seconds = %d, each with up to max_query_length = %d bytes of text for events and statements.",
						   pgc_max_events, pgc_max_statements, pgc_max_profile_entries,
						   pgc_history_seconds, pgc_max_query_length),
				 errhint("Lower pg_contention.max_events, pg_contention.max_statements or pg_contention.max_query_length.")));
	RequestAddinShmemSpace(size);
	RequestNamedLWLockTranche(PGC_TRANCHE_NAME, lock_count());
}

/*
 * Create or attach every store.  Called from shmem_startup_hook in the
 * postmaster (and in every backend under EXEC_BACKEND).  Returns whether
 * it created them (they are empty).
 */
bool
pgc_shmem_startup(void)
{
	bool		found;
	RegistryHeader *header;
	LWLockPadded *locks;
	int			next_lock = 0;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	header = ShmemInitStruct("pg_contention", sizeof(RegistryHeader), &found);
	if (!found)
	{
		SpinLockInit(&header->mutex);
		header->started_at = GetCurrentTimestamp();
		header->stats_reset = header->started_at;
		memset(header->own_pids, 0, sizeof(header->own_pids));
	}
	locks = GetNamedLWLockTranche(PGC_TRANCHE_NAME);
	for (int i = 0; i < pgc_num_stores; i++)
		if (pgc_stores[i].shmem_init)
			pgc_stores[i].shmem_init(pgc_stores[i].needs_lock ?
									 &locks[next_lock++].lock : NULL);
	pgc_shared = header;
	LWLockRelease(AddinShmemInitLock);
	return !found;
}

/* When the stores were last reset (kept across restarts by persist.c). */
TimestampTz
pgc_stats_reset_time(void)
{
	RegistryHeader *header = (RegistryHeader *) pgc_shared;
	TimestampTz reset;

	SpinLockAcquire(&header->mutex);
	reset = header->stats_reset;
	SpinLockRelease(&header->mutex);
	return reset;
}

void
pgc_set_stats_reset_time(TimestampTz when)
{
	RegistryHeader *header = (RegistryHeader *) pgc_shared;

	SpinLockAcquire(&header->mutex);
	header->stats_reset = when;
	SpinLockRelease(&header->mutex);
}

/*
 * Every SQL-callable function starts here: without shared_preload_libraries
 * there is no shared state and no hook, so nothing it reports would be true.
 */
void
pgc_require_loaded(void)
{
	if (pgc_shared == NULL)
	{
		/*
		 * The one thing to say: the CONTEXT of the PL/pgSQL rules and SQL
		 * functions this was reached through (hundreds of lines of their
		 * text) would bury it.  Every PG_TRY that catches the error, and
		 * error recovery, restores the stack it saved.
		 */
		error_context_stack = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_contention must be loaded via shared_preload_libraries"),
				 errhint("Add pg_contention to shared_preload_libraries in postgresql.conf and restart the server.")));
	}
}

/*
 * Empty every store (statements, events, the sampler's profile and
 * history, the old-snapshot totals, ...) and their eviction and drop
 * counters, each under its own lock, one after the other, and note when
 * (pg_contention_reset()).
 */
void
pgc_reset_stores(void)
{
	RegistryHeader *header = (RegistryHeader *) pgc_shared;

	for (int i = 0; i < pgc_num_stores; i++)
		if (pgc_stores[i].reset)
			pgc_stores[i].reset();
	SpinLockAcquire(&header->mutex);
	header->stats_reset = GetCurrentTimestamp();
	SpinLockRelease(&header->mutex);
}

/*
 * Which process runs one of pg_contention's workers (0: none).  Read
 * without a lock by anyone, written only by the worker itself at its start
 * and exit: an aligned int, so a reader sees the old pid or the new one,
 * and a pid seen a moment late only leaves one sample of the worker in or
 * out.
 */
int
pgc_own_pid(PgcWorker which)
{
	RegistryHeader *header = (RegistryHeader *) pgc_shared;

	if (header == NULL)
		return 0;
	return *((volatile int *) &header->own_pids[which]);
}

void
pgc_set_own_pid(PgcWorker which, int pid)
{
	RegistryHeader *header = (RegistryHeader *) pgc_shared;

	Assert(which >= 0 && which < PGC_NUM_WORKERS);
	Assert(pid == 0 || pid == MyProcPid);
	if (header != NULL)
		*((volatile int *) &header->own_pids[which]) = pid;
}
