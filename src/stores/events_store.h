/*-------------------------------------------------------------------------
 *
 * events_store.h
 *		The ring of subtransaction-overflow events, private to the ring
 *		(events.c), the backends that write it (capture/overflow.c), its
 *		reader (readers/subxact.c) and its section of the stores' file
 *		(events_file.c).
 *
 * The locking rules are events.c's (its header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_EVENTS_STORE_H
#define PGC_EVENTS_STORE_H

#include "stores.h"

/* One overflow event (a ring slot); query[] has max_query_length bytes. */
typedef struct OverflowEvent
{
	TimestampTz event_time;
	int			pid;
	Oid			dbid;
	Oid			userid;
	TransactionId top_xid;
	int64		query_id;		/* top-level statement */
	int64		nested_query_id;	/* innermost statement, 0 if the same */
	int			nesting_depth;	/* subtransaction nesting at the event */
	char		application_name[NAMEDATALEN];
	char		query[FLEXIBLE_ARRAY_MEMBER];	/* NUL-terminated */
} OverflowEvent;

typedef struct EventsShared
{
	LWLock	   *lock;
	int64		written;		/* events ever written since reset */
	uint64		resets;			/* resets since start, for a save's batches */
} EventsShared;


/* The header, then pgc_max_events slots of event_stride() bytes (events.c). */
extern EventsShared *events;
extern char *event_ring;

static inline Size
event_stride(void)
{
	return MAXALIGN(offsetof(OverflowEvent, query) + pgc_max_query_length);
}

#define EVENT_SLOT(ring, i) ((OverflowEvent *) ((ring) + (i) * event_stride()))

#endif							/* PGC_EVENTS_STORE_H */
