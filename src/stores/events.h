/*-------------------------------------------------------------------------
 *
 * events.h
 *		The event ring's door: what the rest of the module may do with the
 *		overflow events (stores/events.c).  Its layout and lock are
 *		events_store.h's, for the store's own files only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_EVENTS_H
#define PGC_EVENTS_H

#include "pg_contention.h"

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

/* Events copied out for a reader (pgc_events_copy). */
typedef struct PgcEventsCopy
{
	char	   *heads;			/* the events' fields, stride bytes apart
								 * (no text: see texts) */
	Size		stride;
	char	   *texts;			/* their texts, each NUL-terminated ... */
	int		   *text_at;		/* ... at these offsets */
} PgcEventsCopy;

/* One statement of a source text, as the ring keeps it (events.c). */
extern void pgc_copy_statement_text(char *dest, int destsize, const char *source_text,
									int stmt_location, int stmt_len);

/* capture/overflow.c: write one event, and later its statement's counts. */
extern void pgc_events_write(const OverflowEvent *ev, const char *text,
							 int location, int len, int64 *seq, uint64 *resets);
extern void pgc_events_set_statement_counts(int64 seq, uint64 resets,
											TransactionId top_xid,
											int64 subxacts, int64 rows);

/* The readers: the events, oldest first, and what they depend on. */
extern void pgc_events_version(uint64 version[2]);
extern int	pgc_events_copy(PgcEventsCopy *copy, uint64 version[2]);
extern void pgc_events_copy_free(PgcEventsCopy *copy);

/* pg_contention_info. */
extern void pgc_events_info(int64 *written);
extern int64 pgc_events_role_evictions(void);

#endif							/* PGC_EVENTS_H */
