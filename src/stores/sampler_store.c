/*-------------------------------------------------------------------------
 *
 * sampler_store.c
 *		The sampler's stores in shared memory: their creation and reset,
 *		the readers' copies of the status, the wait profile and the history
 *		(readers/sampler_views.c, oldsnapshot.c, the statement readers),
 *		and what other processes ask of the worker through it: a save, a
 *		wake-up from its doze.
 *
 * Owns the sampler's shared state (ShmemInitStruct "pg_contention sampler",
 * with the profile and history arrays after it) and its LWLock.  Readers
 * copy under the lock in shared mode; the worker writes under it
 * exclusively (workers/sampler.c).
 *
 *-------------------------------------------------------------------------
 */
#include "sampler_store.h"
#include "stores.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"

SamplerShared *pgc_sampler = NULL;
PgcProfileEntry *pgc_profile = NULL;
PgcHistoryBucket *pgc_history = NULL;

/* Backends read this before shared memory is attached, and never dozing. */
static pg_atomic_uint32 never_dozing;
pg_atomic_uint32 *pgc_sampler_doze_flag = &never_dozing;

/* ---- shared memory ---- */

Size
pgc_sampler_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(SamplerShared));

	size = add_size(size, mul_size(pgc_max_profile_entries, sizeof(PgcProfileEntry)));
	size = add_size(size, mul_size(pgc_history_seconds, sizeof(PgcHistoryBucket)));
	return size;
}

/* Called under AddinShmemInitLock. */
void
pgc_sampler_shmem_init(LWLock *lock)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("pg_contention sampler", pgc_sampler_shmem_size(), &found);
	pgc_sampler = (SamplerShared *) base;
	pgc_profile = (PgcProfileEntry *) (base + MAXALIGN(sizeof(SamplerShared)));
	pgc_history = (PgcHistoryBucket *) (pgc_profile + pgc_max_profile_entries);
	if (!found)
	{
		memset(base, 0, pgc_sampler_shmem_size());
		pgc_sampler->lock = lock;
		pg_atomic_init_u32(&pgc_sampler->save_requested, 0);
		pg_atomic_init_u32(&pgc_sampler->doze, 0);
		pg_atomic_init_u32(&pgc_sampler->woken_by, 0);
	}
	pgc_sampler_doze_flag = &pgc_sampler->doze;
}

/* pg_contention_reset(): empty the profile and the history. */
void
pgc_sampler_reset(void)
{
	LWLockAcquire(pgc_sampler->lock, LW_EXCLUSIVE);
	pgc_sampler->reset_generation++;
	pgc_sampler->status.profile_used = 0;
	pgc_sampler->status.profile_evictions = 0;
	pgc_sampler->status.profile_samples = 0;
	pgc_sampler->status.buckets_written = 0;
	memset(&pgc_sampler->current, 0, sizeof(PgcHistoryBucket));
	LWLockRelease(pgc_sampler->lock);
}

/* ---- readers' copies (sampler_views.c, oldsnapshot.c) ---- */

void
pgc_sampler_copy_status(PgcSamplerStatus *status, bool *named_found)
{
	LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	*status = pgc_sampler->status;
	if (named_found)
		memcpy(named_found, pgc_sampler->named_found, sizeof(pgc_sampler->named_found));
	LWLockRelease(pgc_sampler->lock);
}

/* The profile entries (palloc'd), their count and the samples they share. */
PgcProfileEntry *
pgc_sampler_copy_profile(int *n, int64 *total)
{
	PgcProfileEntry *copy;

	copy = palloc_extended(mul_size(Max(pgc_max_profile_entries, 1), sizeof(PgcProfileEntry)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	*n = pgc_sampler->status.profile_used;
	*total = pgc_sampler->status.profile_samples;
	memcpy(copy, pgc_profile, *n * sizeof(PgcProfileEntry));
	LWLockRelease(pgc_sampler->lock);
	return copy;
}

static int
compare_keys(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(PgcProfileKey));
}

/*
 * The (database, role, query id) of every profile entry waiting on
 * pg_subtrans (LWLock SubtransSLRU or SubtransBuffer), sorted, once each,
 * with wait_event_info 0 (palloc'd; *n the count): the statements that
 * pg_contention_statements(subtrans_only) shows besides those that ran on
 * suboverflowed snapshots.  Before the worker has found the wait events
 * (named_info is 0 then, and named_found false) there are none.
 */
PgcProfileKey *
pgc_sampler_subtrans_keys(int *n)
{
	PgcProfileKey *keys;
	uint32		slru,
				buffer;
	int			k = 0;

	keys = palloc_extended(mul_size(Max(pgc_max_profile_entries, 1), sizeof(PgcProfileKey)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	slru = pgc_sampler->named_found[PGC_NAMED_SUBTRANS_SLRU] ?
		pgc_sampler->named_info[PGC_NAMED_SUBTRANS_SLRU] : UINT32_MAX;
	buffer = pgc_sampler->named_found[PGC_NAMED_SUBTRANS_BUFFER] ?
		pgc_sampler->named_info[PGC_NAMED_SUBTRANS_BUFFER] : UINT32_MAX;
	for (int i = 0; i < pgc_sampler->status.profile_used; i++)
	{
		uint32		info = pgc_profile[i].key.wait_event_info;

		if (info == UINT32_MAX || (info != slru && info != buffer))
			continue;
		keys[k] = pgc_profile[i].key;
		keys[k++].wait_event_info = 0;
	}
	LWLockRelease(pgc_sampler->lock);
	if (k > 1)
	{
		int			unique = 1;

		qsort(keys, k, sizeof(PgcProfileKey), compare_keys);
		for (int i = 1; i < k; i++)
			if (compare_keys(&keys[i], &keys[unique - 1]) != 0)
				keys[unique++] = keys[i];
		k = unique;
	}
	*n = k;
	return keys;
}

/*
 * The completed one-second buckets that start at since or later (all of
 * them with DT_NOBEGIN), oldest first (palloc'd), and which named wait
 * events this server has.  Only those are copied: top asks for the few
 * seconds completed since its last refresh, not the whole ring.
 */
PgcHistoryBucket *
pgc_sampler_copy_history(TimestampTz since, int *n, bool *named_found)
{
	PgcHistoryBucket *copy;
	int64		written;
	int			count,
				wanted = 0;

	LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	written = pgc_sampler->status.buckets_written;
	count = (int) Min(written, (int64) pgc_history_seconds);
	for (int i = 0; i < count; i++)
		if (pgc_history[(written - count + i) % pgc_history_seconds].bucket_start >= since)
			wanted++;
	/* palloc raises no interrupt; an error would release the lock. */
	copy = palloc_extended(mul_size(Max(wanted, 1), sizeof(PgcHistoryBucket)),
						   MCXT_ALLOC_HUGE);
	wanted = 0;
	for (int i = 0; i < count; i++)
	{
		PgcHistoryBucket *b = &pgc_history[(written - count + i) % pgc_history_seconds];

		if (b->bucket_start >= since)
			copy[wanted++] = *b;
	}
	if (named_found)
		memcpy(named_found, pgc_sampler->named_found, sizeof(pgc_sampler->named_found));
	LWLockRelease(pgc_sampler->lock);
	*n = wanted;
	return copy;
}

/*
 * Ask the worker to save the stores' file at its next wake-up rather than
 * at the next save_interval (the incidents worker does, after an incident
 * opened, escalated or closed, so that a crash soon after loses none of
 * it).  The latch pointer is read under the lock; a latch whose worker has
 * just exited is a PGPROC's, and setting it wakes at most some other
 * process once, which latches allow.
 */
void
pgc_sampler_request_save(void)
{
	Latch	   *latch;

	pg_atomic_write_u32(&pgc_sampler->save_requested, 1);
	LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	latch = pgc_sampler->worker_latch;
	LWLockRelease(pgc_sampler->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * A client's statement or connection starts while the worker dozes
 * (pgc_sampler_wake_if_dozing() found the flag set).  The first process to
 * clear the flag sets the worker's latch; the others have nothing to do.
 * The latch pointer is read without the lock, as an aligned pointer: a
 * latch whose worker has just exited is a PGPROC's, and setting it wakes
 * at most some other process once, which latches allow.
 */
void
pgc_sampler_wake(void)
{
	Latch	   *latch;

	if (pg_atomic_exchange_u32(&pgc_sampler->doze, 0) == 0)
		return;
	pg_atomic_write_u32(&pgc_sampler->woken_by, (uint32) MyProcPid);
	latch = *(Latch *volatile *) &pgc_sampler->worker_latch;
	if (latch)
		SetLatch(latch);
}
