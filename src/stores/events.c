/*-------------------------------------------------------------------------
 *
 * events.c
 *		The ring of subtransaction-overflow events, each naming the
 *		statement that made a backend's cache overflow: its shared memory,
 *		reset and fill.
 *
 * Owns the event ring (ShmemInitStruct "pg_contention overflow events":
 * a header with the count of events written, then pgc_max_events slots)
 * and its LWLock.  Locking: the ring is written and read under its lock;
 * writers (at most one event per top-level transaction, so rare;
 * capture/overflow.c) take it exclusively, readers in shared mode only to
 * copy the used slots out (the save for the file a bounded batch at a
 * time, writing with the lock released).
 *
 *-------------------------------------------------------------------------
 */
#include "events_store.h"
#include "stores.h"

#include "storage/shmem.h"

EventsShared *events = NULL;
char	   *event_ring = NULL;

Size
pgc_events_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(EventsShared)),
					mul_size(pgc_max_events, event_stride()));
}

/* Called under AddinShmemInitLock. */
void
pgc_events_shmem_init(LWLock *lock)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("pg_contention overflow events",
						   pgc_events_shmem_size(), &found);
	events = (EventsShared *) base;
	event_ring = base + MAXALIGN(sizeof(EventsShared));
	if (!found)
	{
		memset(base, 0, pgc_events_shmem_size());
		events->lock = lock;
	}
}

/* pg_contention_reset(): forget every event and the count of drops. */
void
pgc_events_reset(void)
{
	LWLockAcquire(events->lock, LW_EXCLUSIVE);
	events->written = 0;
	events->resets++;
	LWLockRelease(events->lock);
}

void
pgc_events_info(int64 *written)
{
	LWLockAcquire(events->lock, LW_SHARED);
	*written = events->written;
	LWLockRelease(events->lock);
}
