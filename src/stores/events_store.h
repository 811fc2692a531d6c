/*-------------------------------------------------------------------------
 *
 * events_store.h
 *		The ring of subtransaction-overflow events' layout, private to the
 *		ring (events.c) and its section of the stores' file
 *		(events_file.c).  Everyone else uses its door, events.h.
 *
 * The locking rules are events.c's (its header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_EVENTS_STORE_H
#define PGC_EVENTS_STORE_H

#include "stores.h"
#include "events.h"

/*
 * Besides the ring, each (database, role)'s latest event, in memory only:
 * one role's flood of overflows between two evaluations overwrites the
 * ring, never another role's latest event, which the reader gives with
 * the ring's when the ring no longer holds it.
 */
#define PGC_EVENT_ROLES 64

typedef struct EventsShared
{
	LWLock	   *lock;
	int64		written;		/* events ever written since reset */
	uint64		resets;			/* resets since start, for a save's batches */
	int64		role_evictions; /* latest events given to another role's */
	int64		role_seq[PGC_EVENT_ROLES];	/* each latest event's place in
											 * the ring's sequence, -1: free */
} EventsShared;


/*
 * The header, then pgc_max_events slots of event_stride() bytes, then
 * PGC_EVENT_ROLES slots of the latest events (events.c).
 */
extern EventsShared *pgc_events;
extern char *pgc_event_ring;
extern char *pgc_event_roles;

static inline Size
event_stride(void)
{
	return MAXALIGN(offsetof(OverflowEvent, query) + pgc_max_query_length);
}

#define EVENT_SLOT(ring, i) ((OverflowEvent *) ((ring) + (i) * event_stride()))



#endif							/* PGC_EVENTS_STORE_H */
