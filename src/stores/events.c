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
 * time, writing with the lock released).  Also owns each (database,
 * role)'s latest event (event_roles), written with its ring slot under
 * the same lock: a full table gives the slot noted longest ago (counted).
 *
 *-------------------------------------------------------------------------
 */
#include "events_store.h"
#include "stores.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "parser/scansup.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

EventsShared *pgc_events = NULL;
char	   *pgc_event_ring = NULL;
char	   *pgc_event_roles = NULL;

Size
pgc_events_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(EventsShared)),
					mul_size(add_size(pgc_max_events, PGC_EVENT_ROLES), event_stride()));
}

static void
forget_latest(void)
{
	for (int i = 0; i < PGC_EVENT_ROLES; i++)
		pgc_events->role_seq[i] = -1;
	pgc_events->role_evictions = 0;
}

/*
 * Keep ev, the ring's event number seq, as its database and role's latest.
 * Caller holds the lock exclusively.
 */
static void
note_latest(const OverflowEvent *ev, int64 seq)
{
	int			slot = -1;
	int			oldest = 0;

	for (int i = 0; i < PGC_EVENT_ROLES; i++)
	{
		OverflowEvent *e = EVENT_SLOT(pgc_event_roles, i);

		if (pgc_events->role_seq[i] < 0)
		{
			if (slot < 0)
				slot = i;
			continue;
		}
		if (e->dbid == ev->dbid && e->userid == ev->userid)
		{
			slot = i;
			break;
		}
		if (pgc_events->role_seq[i] < pgc_events->role_seq[oldest] || pgc_events->role_seq[oldest] < 0)
			oldest = i;
	}
	if (slot < 0)
	{
		slot = oldest;
		pgc_events->role_evictions++;
	}
	/* Its fields and its text: most of a slot is unused room for text. */
	memcpy(EVENT_SLOT(pgc_event_roles, slot), ev,
		   offsetof(OverflowEvent, query) + strnlen(ev->query, pgc_max_query_length - 1) + 1);
	pgc_events->role_seq[slot] = seq;
}

/*
 * Give the event written at seq (before the reset count resets) by this
 * backend for its transaction top_xid the counts of its statement, if the
 * ring still holds it, and its (database, role)'s latest copy if it is
 * that one.  Once per overflowing transaction, under the lock exclusively.
 */
void
pgc_events_set_statement_counts(int64 seq, uint64 resets, TransactionId top_xid,
								int64 subxacts, int64 rows)
{
	LWLockAcquire(pgc_events->lock, LW_EXCLUSIVE);
	if (pgc_events->resets == resets)
	{
		if (seq < pgc_events->written && pgc_events->written - seq <= pgc_max_events)
		{
			OverflowEvent *ev = EVENT_SLOT(pgc_event_ring, seq % pgc_max_events);

			if (ev->pid == MyProcPid && ev->top_xid == top_xid)
			{
				ev->statement_subxacts = subxacts;
				ev->statement_rows = rows;
			}
		}
		for (int i = 0; i < PGC_EVENT_ROLES; i++)
		{
			if (pgc_events->role_seq[i] == seq)
			{
				OverflowEvent *latest = EVENT_SLOT(pgc_event_roles, i);

				latest->statement_subxacts = subxacts;
				latest->statement_rows = rows;
			}
		}
	}
	LWLockRelease(pgc_events->lock);
}

/* Called under AddinShmemInitLock. */
void
pgc_events_shmem_init(LWLock *lock)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("pg_contention overflow events",
						   pgc_events_shmem_size(), &found);
	pgc_events = (EventsShared *) base;
	pgc_event_ring = base + MAXALIGN(sizeof(EventsShared));
	pgc_event_roles = pgc_event_ring + mul_size(pgc_max_events, event_stride());
	if (!found)
	{
		memset(base, 0, pgc_events_shmem_size());
		pgc_events->lock = lock;
		forget_latest();
	}
}

/* pg_contention_reset(): forget every event and the count of drops. */
void
pgc_events_reset(void)
{
	LWLockAcquire(pgc_events->lock, LW_EXCLUSIVE);
	pgc_events->written = 0;
	pgc_events->resets++;
	forget_latest();
	LWLockRelease(pgc_events->lock);
}

/* Latest events of a (database, role) given to another's. */
int64
pgc_events_role_evictions(void)
{
	int64		n;

	LWLockAcquire(pgc_events->lock, LW_SHARED);
	n = pgc_events->role_evictions;
	LWLockRelease(pgc_events->lock);
	return n;
}

void
pgc_events_info(int64 *written)
{
	LWLockAcquire(pgc_events->lock, LW_SHARED);
	*written = pgc_events->written;
	LWLockRelease(pgc_events->lock);
}

/* What the ring has had written and been reset: what its copies depend on. */
void
pgc_events_version(uint64 version[2])
{
	LWLockAcquire(pgc_events->lock, LW_SHARED);
	version[0] = (uint64) pgc_events->written;
	version[1] = pgc_events->resets;
	LWLockRelease(pgc_events->lock);
}

/*
 * Copy the events out for a reader, oldest first: the latest events of the
 * (database, role)s that the ring no longer holds (another role's flood
 * overwrote them), then the ring's used slots in ring order.  Each event's
 * fields and the text it holds, not its whole slot: a slot has room for
 * pg_contention.max_query_length bytes of text, most of it unused.  Under
 * the lock in shared mode (palloc under it: an error releases it at
 * abort); version gets what pgc_events_version gives at that moment.
 * Returns the number of events.
 */
int
pgc_events_copy(PgcEventsCopy *copy, uint64 version[2])
{
	Size		head = MAXALIGN(offsetof(OverflowEvent, query));
	StringInfoData texts;
	int64		written;
	int			n;
	int			oldest;
	int			order[PGC_EVENT_ROLES];
	int			extra = 0;

	memset(copy, 0, sizeof(*copy));
	copy->stride = head;
	initStringInfo(&texts);
	LWLockAcquire(pgc_events->lock, LW_SHARED);
	written = pgc_events->written;
	version[0] = (uint64) written;
	version[1] = pgc_events->resets;
	n = (int) Min(written, (int64) pgc_max_events);
	oldest = (int) ((written - n) % pgc_max_events);

	/* The latest events the ring no longer holds, by their place in it. */
	for (int j = 0; j < PGC_EVENT_ROLES; j++)
	{
		int64		seq = pgc_events->role_seq[j];
		int			at = extra++;

		if (seq < 0 || seq >= written - n)
		{
			extra--;
			continue;
		}
		while (at > 0 && pgc_events->role_seq[order[at - 1]] > seq)
		{
			order[at] = order[at - 1];
			at--;
		}
		order[at] = j;
	}
	if (n + extra > 0)
	{
		copy->heads = palloc_extended(mul_size(n + extra, head), MCXT_ALLOC_HUGE);
		copy->text_at = palloc_extended(mul_size(n + extra, sizeof(int)), MCXT_ALLOC_HUGE);
	}
	for (int i = 0; i < n + extra; i++)
	{
		OverflowEvent *ev = i < extra ? EVENT_SLOT(pgc_event_roles, order[i]) :
			EVENT_SLOT(pgc_event_ring, (oldest + i - extra) % pgc_max_events);

		memcpy(copy->heads + i * head, ev, offsetof(OverflowEvent, query));
		copy->text_at[i] = texts.len;
		appendBinaryStringInfo(&texts, ev->query,
							   strnlen(ev->query, pgc_max_query_length - 1));
		appendStringInfoChar(&texts, '\0');
	}
	LWLockRelease(pgc_events->lock);
	copy->texts = texts.data;
	return n + extra;
}

void
pgc_events_copy_free(PgcEventsCopy *copy)
{
	if (copy->heads)
		pfree(copy->heads);
	if (copy->text_at)
		pfree(copy->text_at);
	if (copy->texts)
		pfree(copy->texts);
}

/*
 * Write one overflow event: its fields from *ev (its time is set here, its
 * text is the client string's slice, pgc_copy_statement_text's), noted as
 * its (database, role)'s latest.  Gives its place in the ring's sequence
 * and the reset count it was written under (for
 * pgc_events_set_statement_counts).  At most once per top-level
 * transaction (capture/overflow.c): takes the lock exclusively.
 */
void
pgc_events_write(const OverflowEvent *ev, const char *text, int location, int len,
				 int64 *seq, uint64 *resets)
{
	OverflowEvent *slot;

	LWLockAcquire(pgc_events->lock, LW_EXCLUSIVE);
	slot = EVENT_SLOT(pgc_event_ring, pgc_events->written % pgc_max_events);
	memcpy(slot, ev, offsetof(OverflowEvent, query));
	slot->event_time = GetCurrentTimestamp();
	pgc_copy_statement_text(slot->query, pgc_max_query_length, text,
							location, len);
	note_latest(slot, pgc_events->written);
	*seq = pgc_events->written;
	*resets = pgc_events->resets;
	pgc_events->written++;
	LWLockRelease(pgc_events->lock);
}

/*
 * Copy one statement out of a source text that may hold several (a
 * multi-statement simple query): the stmt_location/stmt_len slice, without
 * leading white space, truncated at a character boundary to fit destsize
 * bytes with its terminator.  A NULL source gives an empty string.
 */
void
pgc_copy_statement_text(char *dest, int destsize, const char *source_text,
						int stmt_location, int stmt_len)
{
	const char *start;
	int			len;

	if (source_text == NULL)
	{
		dest[0] = '\0';
		return;
	}
	if (stmt_location < 0)
	{
		stmt_location = 0;
		stmt_len = 0;
	}
	start = source_text + stmt_location;
	len = (stmt_len > 0) ? stmt_len : (int) strlen(start);
	while (len > 0 && scanner_isspace(*start))
	{
		start++;
		len--;
	}
	if (len > destsize - 1)
		len = pg_mbcliplen(start, len, destsize - 1);
	memcpy(dest, start, len);
	dest[len] = '\0';
}
