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
	int64		statement_subxacts; /* subtransactions with an XID its
									 * top-level statement opened, -1 unknown */
	int64		statement_rows; /* rows that statement processed, -1 unknown */
	char		application_name[NAMEDATALEN];
	char		query[FLEXIBLE_ARRAY_MEMBER];	/* NUL-terminated */
} OverflowEvent;

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

extern void pgc_events_note_latest(const OverflowEvent *ev, int64 seq);

extern void pgc_events_set_statement_counts(int64 seq, uint64 resets,
											TransactionId top_xid,
											int64 subxacts, int64 rows);

#endif							/* PGC_EVENTS_STORE_H */
