/*-------------------------------------------------------------------------
 *
 * statements.h
 *		The statement store's door: an entry as its readers and the file
 *		know it (PgcStatementEntry, every figure in place), and the copies
 *		the store gives them (statements_copy.c).  Its layout in shared
 *		memory is statements_store.h's, for the store's own files and its
 *		write path.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_STATEMENTS_H
#define PGC_STATEMENTS_H

#include "pg_contention.h"

/* What one statement's scans of one index cost (indexscan.c). */
typedef struct PgcIndexCounters
{
	Oid			indexoid;		/* InvalidOid: slot free */
	int64		scans;			/* executions whose dead visits are measured */
	int64		entries_read;	/* of those: entries returned by the index */
	int64		live_fetched;	/* heap tuples found visible */
	int64		dead_visits;	/* entries_read - live_fetched */
	int64		max_dead_visits;	/* in one execution */
	int64		index_only_scans;	/* executions with an index-only scan */
	int64		bitmap_scans;	/* executions with a bitmap index scan */
	int64		bitmap_lossy_pages; /* heap pages measured bitmaps read whole */
	int64		other_entries_read; /* entries read where dead visits are not measured */
} PgcIndexCounters;

/*
 * One index's executions in a period, one by one: the worst (most dead
 * entries; the first of equals), the most recent, and the bad ones (at
 * least pg_contention.dead_visits_warning dead entries, as set in the
 * backend that ran it).  The buffers and rows are the client statement's
 * (-1: the execution was a nested one, whose own are not measured).
 */
typedef struct PgcPeriodScan
{
	int64		worst_dead;
	int64		worst_entries;
	int64		worst_blks;
	int64		worst_rows;
	TimestampTz worst_at;		/* its statement's start */
	int64		worst_caller;	/* nested: the client statement's query id
								 * it ran in (a function's caller); 0: top
								 * level, or not known */
	int64		last_dead;
	TimestampTz last_at;
	int64		bad_scans;
	int64		bad_dead;		/* the bad executions' dead entries */
	TimestampTz last_bad_at;	/* 0: none */
	TimestampTz clean_since;	/* the first execution below the threshold
								 * after the last bad one; 0: none yet */
} PgcPeriodScan;

/*
 * The fields a period has in both of its forms, in this order: PgcPeriod
 * (a reader's copy, the file's record) and SharedPeriod (shared memory)
 * both start with them, so that one is copied into the other as bytes.
 * Defined once, here.
 */
#define PGC_PERIOD_HEAD \
	TimestampTz start;			/* first count; 0: empty */ \
	TimestampTz end;			/* last count */ \
	int64		calls; \
	int64		suboverflowed_calls; \
	int64		near_overflow_calls; \
	int64		overflow_events; \
	int32		max_subxacts; \
	int64		top_level_calls;	/* executions with buffers measured */ \
	int64		shared_blks		/* their shared buffers hit and read */

/*
 * What a statement did in one period of pg_contention.findings_window: the
 * findings judge recent behaviour, not totals since the last reset.  An
 * entry keeps the current period and the previous one; a period starts at
 * the first count after the previous one has lasted the window.  Index
 * figures are per slot of the entry's indexes[].
 */
typedef struct PgcPeriod
{
	PGC_PERIOD_HEAD;
	int64		index_scans[PGC_INDEX_SLOTS];	/* measured executions */
	int64		index_entries[PGC_INDEX_SLOTS];
	int64		index_dead[PGC_INDEX_SLOTS];
	PgcPeriodScan index_exec[PGC_INDEX_SLOTS];
	int64		literals_dead;	/* max_dead of the execution whose ... */
	char		literals[PGC_LITERALS_LEN]; /* ... constants these are */
} PgcPeriod;

/*
 * The fields an entry has in both of its forms, in this order:
 * PgcStatementEntry (a reader's copy; from usage on, the file's record)
 * and SharedStatement (shared memory) both start with them, so that one is
 * copied into the other as bytes.  Defined once, here.
 */
#define PGC_STATEMENT_HEAD \
	PgcStatementKey key; \
	slock_t		mutex;			/* in shared memory: protects the fields \
								 * below but slot; unused in a copy */ \
	int32		slot;			/* set with the entry, under the lock */ \
	double		usage;			/* calls, decayed at each eviction */ \
	int64		calls; \
	int64		suboverflowed_calls; \
	int64		standby_calls; \
	int64		overflow_events; \
	int64		rows;			/* top-level executions: rows processed */ \
	int64		shared_blks_hit;	/* top-level executions: buffer usage */ \
	int64		shared_blks_read; \
	int32		max_subxacts;	/* most subtransaction XIDs cached at an end */ \
	int64		near_overflow_calls;	/* ended with more than the warn level */ \
	TimestampTz first_seen; \
	TimestampTz last_seen; \
	int64		indexes_untracked	/* index deltas with no slot or record */

/*
 * An entry as the views and the file know it, every figure in place:
 * readers get entries in this form (copy_entry), and a saved statement is
 * its bytes from usage to query.  In shared memory the per-index figures
 * are kept apart (SharedStatement), so that a statement pays for the
 * indexes it scans, not for PGC_INDEX_SLOTS of them.
 */
typedef struct PgcStatementEntry
{
	PGC_STATEMENT_HEAD;
	PgcIndexCounters indexes[PGC_INDEX_SLOTS];
	PgcPeriod	current;		/* this period of findings_window */
	PgcPeriod	previous;		/* the one before */
	char		application_name[NAMEDATALEN];	/* the key's app_hash is of it */
	char		query[FLEXIBLE_ARRAY_MEMBER];	/* first text seen, normalised */
} PgcStatementEntry;

/* A statement's index: what pg_contention_index_scans' view sums over. */
typedef struct IndexGroupKey
{
	Oid			dbid;
	Oid			indexoid;
	int64		query_id;
} IndexGroupKey;

/* The size of one copy (statements.c), and whether a text is a SAVEPOINT's. */
extern Size entry_size(void);
extern bool is_savepoint_text(const char *query);

/*
 * Entries copied out for the readers, entry_size() bytes apart
 * (statements_copy.c): every one; those that ran on suboverflowed
 * snapshots or waited on the waiters; those that met dead index entries,
 * with their (statement, index) groups; those pg_contention_recent can
 * use from the window starting at cutoff.
 */
extern char *copy_entries(long *n);
extern char *copy_subtrans_entries(long *n, const PgcProfileKey *waiters, int nwaiters);
extern char *copy_dead_index_entries(long *n, IndexGroupKey **groups, long *ngroups);
extern bool in_index_groups(const IndexGroupKey *groups, long ngroups, Oid dbid, int64 query_id, Oid indexoid);
extern char *copy_notable_entries(long *n, TimestampTz cutoff);
extern bool entry_is_notable(const PgcStatementEntry *e, TimestampTz cutoff);
extern int	compare_statement_keys(const PgcStatementKey *ka, const PgcStatementKey *kb);

#endif							/* PGC_STATEMENTS_H */
