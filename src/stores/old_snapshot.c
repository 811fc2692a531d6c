/*-------------------------------------------------------------------------
 *
 * old_snapshot.c
 *		The old_snapshot_threshold figures since the last reset (PostgreSQL
 *		13-16): what the sampler's probes measured (workers/oldsnapshot.c),
 *		summed for pg_contention_old_snapshot (readers/old_snapshot_view.c).
 *
 * Owns ShmemInitStruct "pg_contention old snapshot" under its own LWLock:
 * written by the sampler once per tick while the setting is on (exclusive),
 * copied by the view (shared), zeroed by reset.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include "storage/shmem.h"

typedef struct OldSnapShared
{
	LWLock	   *lock;
	PgcOldSnapFigures total;	/* since the last reset */
} OldSnapShared;

static OldSnapShared *oldsnap = NULL;

Size
pgc_oldsnap_shmem_size(void)
{
	return sizeof(OldSnapShared);
}

/* Called under AddinShmemInitLock. */
void
pgc_oldsnap_shmem_init(LWLock *lock)
{
	bool		found;

	oldsnap = ShmemInitStruct("pg_contention old snapshot",
							  pgc_oldsnap_shmem_size(), &found);
	if (!found)
	{
		memset(oldsnap, 0, sizeof(OldSnapShared));
		oldsnap->lock = lock;
	}
}

void
pgc_oldsnap_reset(void)
{
	LWLockAcquire(oldsnap->lock, LW_EXCLUSIVE);
	memset(&oldsnap->total, 0, sizeof(PgcOldSnapFigures));
	LWLockRelease(oldsnap->lock);
}

/* Add one set of figures into another (a second's, a window's, a total). */
void
pgc_oldsnap_add(PgcOldSnapFigures *into, const PgcOldSnapFigures *from)
{
	into->active |= from->active;
	into->probes += from->probes;
	into->probe_max_ns = Max(into->probe_max_ns, from->probe_max_ns);
	for (int k = 0; k < PGC_PROBE_HIST_BUCKETS; k++)
		into->probe_hist[k] += from->probe_hist[k];
	into->lock_word_reads += from->lock_word_reads;
	into->lock_word_held += from->lock_word_held;
	into->lock_op_estimate += from->lock_op_estimate;
}

/* The worker adds a tick's (or a second's) figures to the total. */
void
pgc_oldsnap_add_to_total(const PgcOldSnapFigures *figures)
{
	LWLockAcquire(oldsnap->lock, LW_EXCLUSIVE);
	pgc_oldsnap_add(&oldsnap->total, figures);
	LWLockRelease(oldsnap->lock);
}

/* The figures since the last reset, copied under the lock. */
void
pgc_oldsnap_total(PgcOldSnapFigures *total)
{
	LWLockAcquire(oldsnap->lock, LW_SHARED);
	*total = oldsnap->total;
	LWLockRelease(oldsnap->lock);
}
