/*-------------------------------------------------------------------------
 *
 * xmin_since.c
 *		Since when each holder's xmin has had its value: the sampler looks
 *		once a second at every process's xmin (the older of its XID and its
 *		snapshots' xmin) and every replication slot's xmin and catalog_xmin,
 *		and keeps, for each, the earliest the value can date from (the
 *		pass before the one that first saw it) and the same for when it
 *		fell behind the next XID.  The horizon view reads
 *		them (readers/horizon.c): a transaction's xmin is not as old as the
 *		transaction (CREATE INDEX CONCURRENTLY keeps its statement's start
 *		through every phase, and each phase takes a new snapshot), and a
 *		standby's hot_standby_feedback or an active slot's xmin carries no
 *		time at all: it moves at every feedback message, and how long it
 *		has stood still is what its standby's queries hold.
 *
 * Owns the block "pg_contention xmin since": one entry per PGPROC, indexed
 * by its number, and one per replication slot, indexed as the server's
 * slot array; bounded by those, so nothing is ever evicted.  Its LWLock:
 * the sampler (pgc_xmin_since_observe) is the only writer and holds it
 * exclusively once a second, after it has read the proc array and the
 * slots; readers copy the block under it in shared mode.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include "access/transam.h"
#include "miscadmin.h"
#include "replication/slot.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"

typedef struct XminSinceShared
{
	LWLock	   *lock;
	int			nprocs;			/* entries in procs[] */
	int			nslots;			/* entries in slots[] */
	TimestampTz last_pass;		/* the sampler's last pass; 0: none yet */
	/* procs[nprocs] then slots[nslots] follow */
} XminSinceShared;

static XminSinceShared *since_shared = NULL;

#define PROCS(s)	((PgcXminSince *) ((char *) (s) + MAXALIGN(sizeof(XminSinceShared))))
#define SLOTS(s)	((PgcSlotXminSince *) (PROCS(s) + (s)->nprocs))

Size
pgc_xmin_since_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(XminSinceShared));

	size = add_size(size, mul_size(PGC_MAX_PROCS, sizeof(PgcXminSince)));
	size = add_size(size, mul_size(Max(max_replication_slots, 0), sizeof(PgcSlotXminSince)));
	return size;
}

/* Called under AddinShmemInitLock. */
void
pgc_xmin_since_shmem_init(LWLock *lock)
{
	bool		found;

	since_shared = ShmemInitStruct("pg_contention xmin since",
								   pgc_xmin_since_shmem_size(), &found);
	if (!found)
	{
		memset(since_shared, 0, pgc_xmin_since_shmem_size());
		since_shared->lock = lock;
		since_shared->nprocs = PGC_MAX_PROCS;
		since_shared->nslots = Max(max_replication_slots, 0);
	}
}

/*
 * One value's entry after a pass that saw "xmin": kept while the value
 * stays, started afresh when it changes.  A value not there at the
 * previous pass (at "previous") was set after it: previous is the
 * earliest it can date from, and what is kept, so that a hold is never
 * taken to have begun after it did (a holder must have been holding when
 * the lookups it is blamed for ran); the age is at most one pass too
 * long.  A value the first pass meets may be older than any pass: its
 * first_seen is 0 (unknown), its behind_since the pass's time.
 */
static void
note_value(TransactionId xmin, TransactionId next, TimestampTz now, TimestampTz previous,
		   TransactionId *kept, TimestampTz *first_seen, TimestampTz *behind_since)
{
	bool		first_pass = (previous == 0);

	bool		behind = TransactionIdIsNormal(xmin) && TransactionIdIsNormal(next) &&
		TransactionIdPrecedes(xmin, next);

	if (!TransactionIdIsValid(xmin))
	{
		*kept = InvalidTransactionId;
		*first_seen = 0;
		*behind_since = 0;
		return;
	}
	if (*kept != xmin)
	{
		*kept = xmin;
		*first_seen = first_pass ? 0 : previous;
		*behind_since = 0;
	}
	if (behind && *behind_since == 0)
		*behind_since = first_pass ? now : previous;
	else if (!behind)
		*behind_since = 0;
}

/*
 * The sampler's pass, once a second.  Why the reads are safe: the proc
 * array is read under ProcArrayLock in shared mode for one pass, as
 * pgc_collect_procs() does (a transaction cannot end meanwhile; each field
 * is four aligned bytes, read once); the slots under
 * ReplicationSlotControlLock in shared mode, each copied under its own
 * spinlock, as pg_get_replication_slots() does.  Both are read before this
 * store's lock is taken, so no reader of it ever waits on them.
 */
void
pgc_xmin_since_observe(TimestampTz now)
{
	int			nprocs = since_shared->nprocs;
	int			nslots = since_shared->nslots;
	int		   *pids = palloc0(sizeof(int) * Max(nprocs, 1));
	TransactionId *xmins = palloc0(sizeof(TransactionId) * Max(nprocs, 1));
	PgcSlotXminSince *seen = palloc0(sizeof(PgcSlotXminSince) * Max(nslots, 1));
	TransactionId next = XidFromFullTransactionId(ReadNextFullTransactionId());
	uint32		count = Min((uint32) nprocs, ProcGlobal->allProcCount);
	TimestampTz previous;

	LWLockAcquire(ProcArrayLock, LW_SHARED);
	for (uint32 i = 0; i < count; i++)
	{
		volatile PGPROC *proc = &ProcGlobal->allProcs[i];
		TransactionId xid = PGC_PROC_XID(proc);
		TransactionId xmin = PGC_PROC_XMIN(proc);

		pids[i] = proc->pid;
		if (pids[i] == 0 || proc->procLatch.owner_pid == 0)
		{
			pids[i] = 0;
			continue;
		}
		if (TransactionIdIsValid(xid) &&
			(!TransactionIdIsValid(xmin) || TransactionIdPrecedes(xid, xmin)))
			xmin = xid;
		xmins[i] = xmin;
	}
	LWLockRelease(ProcArrayLock);

	if (nslots > 0 && ReplicationSlotCtl != NULL)
	{
		LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
		for (int i = 0; i < nslots; i++)
		{
			ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];

			if (!s->in_use)
				continue;
			SpinLockAcquire(&s->mutex);
			seen[i].name = s->data.name;
			seen[i].xmin = s->effective_xmin;
			seen[i].catalog_xmin = s->effective_catalog_xmin;
			SpinLockRelease(&s->mutex);
		}
		LWLockRelease(ReplicationSlotControlLock);
	}

	LWLockAcquire(since_shared->lock, LW_EXCLUSIVE);
	previous = since_shared->last_pass;
	for (int i = 0; i < nprocs; i++)
	{
		PgcXminSince *e = &PROCS(since_shared)[i];

		if (e->pid != pids[i])
		{
			e->pid = pids[i];
			e->xmin = InvalidTransactionId;
		}
		note_value(pids[i] != 0 ? xmins[i] : InvalidTransactionId, next, now,
				   previous, &e->xmin, &e->first_seen, &e->behind_since);
	}
	for (int i = 0; i < nslots; i++)
	{
		PgcSlotXminSince *e = &SLOTS(since_shared)[i];
		TimestampTz ignored = 0;

		if (strcmp(NameStr(e->name), NameStr(seen[i].name)) != 0)
		{
			e->name = seen[i].name;
			e->xmin = InvalidTransactionId;
			e->catalog_xmin = InvalidTransactionId;
		}
		note_value(seen[i].xmin, next, now, previous,
				   &e->xmin, &ignored, &e->xmin_behind_since);
		note_value(seen[i].catalog_xmin, next, now, previous,
				   &e->catalog_xmin, &ignored, &e->catalog_behind_since);
	}
	since_shared->last_pass = now;
	LWLockRelease(since_shared->lock);

	pfree(pids);
	pfree(xmins);
	pfree(seen);
}

/*
 * A copy of the block (palloc'd) for a reader: the processes' entries, the
 * slots' in *slots, the last pass's time in *last_pass; NULL when the sampler has made no pass in the last
 * 5 seconds (it passes once a second, dozing too: it is off or stopped,
 * and what it saw last says nothing of now).
 */
PgcXminSince *
pgc_xmin_since_copy(int *nprocs, PgcSlotXminSince **slots, int *nslots,
					TimestampTz *last_pass)
{
	PgcXminSince *procs = NULL;

	*last_pass = 0;
	*nprocs = 0;
	*nslots = 0;
	*slots = NULL;
	LWLockAcquire(since_shared->lock, LW_SHARED);
	if (since_shared->last_pass != 0 &&
		!TimestampDifferenceExceeds(since_shared->last_pass, GetCurrentTimestamp(), 5000))
	{
		*last_pass = since_shared->last_pass;
		*nprocs = since_shared->nprocs;
		*nslots = since_shared->nslots;
		procs = palloc(sizeof(PgcXminSince) * Max(*nprocs, 1));
		memcpy(procs, PROCS(since_shared), sizeof(PgcXminSince) * *nprocs);
		*slots = palloc(sizeof(PgcSlotXminSince) * Max(*nslots, 1));
		memcpy(*slots, SLOTS(since_shared), sizeof(PgcSlotXminSince) * *nslots);
	}
	LWLockRelease(since_shared->lock);
	return procs;
}
