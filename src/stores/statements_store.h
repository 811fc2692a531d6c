/*-------------------------------------------------------------------------
 *
 * statements_store.h
 *		The statement store's layout and state, private to the files that
 *		make it: the store itself (statements.c), the counting in every
 *		backend's executor (capture/statement_count.c), the readers' copies
 *		(statements_copy.c), its section of the stores' file
 *		(statements_file.c) and the SQL readers (readers/statements_views.c,
 *		readers/recent.c).  Nothing else includes it: the rest of the module
 *		sees the store through pg_contention.h.
 *
 * The locking rules are statements.c's (its header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_STATEMENTS_STORE_H
#define PGC_STATEMENTS_STORE_H

#include "stores.h"

#include "miscadmin.h"
#include "utils/hsearch.h"

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
 * What a statement did in one period of pg_contention.findings_window: the
 * findings judge recent behaviour, not totals since the last reset.  An
 * entry keeps the current period and the previous one; a period starts at
 * the first count after the previous one has lasted the window.  Index
 * figures are per slot of the entry's indexes[].
 */
typedef struct PgcPeriod
{
	TimestampTz start;			/* first count; 0: empty */
	TimestampTz end;			/* last count */
	int64		calls;
	int64		suboverflowed_calls;
	int64		near_overflow_calls;
	int64		overflow_events;
	int32		max_subxacts;
	int64		top_level_calls;	/* executions with buffers measured */
	int64		shared_blks;	/* their shared buffers hit and read */
	int64		index_scans[PGC_INDEX_SLOTS];	/* measured executions */
	int64		index_entries[PGC_INDEX_SLOTS];
	int64		index_dead[PGC_INDEX_SLOTS];
	PgcPeriodScan index_exec[PGC_INDEX_SLOTS];
	int64		literals_dead;	/* max_dead of the execution whose ... */
	char		literals[PGC_LITERALS_LEN]; /* ... constants these are */
} PgcPeriod;

typedef struct StatementsShared
{
	LWLock	   *lock;
	int64		evictions;		/* entries evicted to make room, under lock */
	pg_atomic_uint64 generation;	/* bumped before entries move */
	int			nfree;			/* slots free, on free_slots[], under lock */
	int			nfree_records;	/* index records free, on free_records[],
								 * under the lock exclusively */
} StatementsShared;

/*
 * An entry as the views and the file know it, every figure in place:
 * readers get entries in this form (copy_entry), and a saved statement is
 * its bytes from usage to query.  In shared memory the per-index figures
 * are kept apart (SharedStatement), so that a statement pays for the
 * indexes it scans, not for PGC_INDEX_SLOTS of them.
 */
typedef struct PgcStatementEntry
{
	PgcStatementKey key;
	slock_t		mutex;			/* unused in a copy */
	int32		slot;
	double		usage;			/* calls, decayed at each eviction */
	int64		calls;
	int64		suboverflowed_calls;
	int64		standby_calls;
	int64		overflow_events;
	int64		rows;			/* top-level executions: rows processed */
	int64		shared_blks_hit;	/* top-level executions: buffer usage */
	int64		shared_blks_read;
	int32		max_subxacts;	/* most subtransaction XIDs cached at an end */
	int64		near_overflow_calls;	/* ended with more than the warn level */
	TimestampTz first_seen;
	TimestampTz last_seen;
	int64		indexes_untracked;	/* index deltas with no slot or record */
	PgcIndexCounters indexes[PGC_INDEX_SLOTS];
	PgcPeriod	current;		/* this period of findings_window */
	PgcPeriod	previous;		/* the one before */
	char		application_name[NAMEDATALEN];	/* the key's app_hash is of it */
	char		query[FLEXIBLE_ARRAY_MEMBER];	/* first text seen, normalised */
} PgcStatementEntry;

/*
 * A period in shared memory: PgcPeriod's fields up to its per-index
 * arrays (the same layout, copied as bytes), then its constants; the
 * per-index figures are in the entry's index records.
 */
typedef struct SharedPeriod
{
	TimestampTz start;			/* first count; 0: empty */
	TimestampTz end;			/* last count */
	int64		calls;
	int64		suboverflowed_calls;
	int64		near_overflow_calls;
	int64		overflow_events;
	int32		max_subxacts;
	int64		top_level_calls;
	int64		shared_blks;
	int64		literals_dead;
	char		literals[PGC_LITERALS_LEN];
} SharedPeriod;

#define PERIOD_HEAD_SIZE	offsetof(PgcPeriod, index_scans)

/* One index's figures in one period: PgcPeriod's arrays, for one slot. */
typedef struct IndexPeriod
{
	int64		scans;
	int64		entries;
	int64		dead;
	PgcPeriodScan exec;
} IndexPeriod;

/*
 * One statement's figures for one index.  Records come from a pool of
 * INDEX_RECORDS_PER_STATEMENT for each statement the store can hold
 * (most statements scan one or two indexes, a few up to PGC_INDEX_SLOTS),
 * are taken under the exclusive lock the first time a statement meets an
 * index, and are given back with the entry.  The entry's spinlock guards
 * them, as it guards the entry's counters.
 */
typedef struct IndexRecord
{
	PgcIndexCounters counters;
	IndexPeriod current;
	IndexPeriod previous;
} IndexRecord;

#define INDEX_RECORDS_PER_STATEMENT 2
#define NO_RECORD	(-1)		/* none was free: the index goes untracked */

/*
 * An entry in shared memory: PgcStatementEntry's fields up to its index
 * counters (the same layout, copied as bytes), then each index slot's
 * index and record, the periods without their per-index arrays, the
 * application and the text.
 */
typedef struct SharedStatement
{
	PgcStatementKey key;
	slock_t		mutex;			/* protects the fields below but slot */
	int32		slot;			/* set with the entry, under the lock */
	double		usage;
	int64		calls;
	int64		suboverflowed_calls;
	int64		standby_calls;
	int64		overflow_events;
	int64		rows;
	int64		shared_blks_hit;
	int64		shared_blks_read;
	int32		max_subxacts;
	int64		near_overflow_calls;
	TimestampTz first_seen;
	TimestampTz last_seen;
	int64		indexes_untracked;
	Oid			index_oid[PGC_INDEX_SLOTS]; /* InvalidOid: slot free */
	int32		index_record[PGC_INDEX_SLOTS];	/* with an index: its record,
												 * or NO_RECORD */
	SharedPeriod current;
	SharedPeriod previous;
	char		application_name[NAMEDATALEN];
	char		query[FLEXIBLE_ARRAY_MEMBER];
} SharedStatement;

#define ENTRY_HEAD_SIZE		offsetof(PgcStatementEntry, indexes)

StaticAssertDecl(offsetof(SharedStatement, index_oid) == ENTRY_HEAD_SIZE,
				 "SharedStatement must start as PgcStatementEntry does");
StaticAssertDecl(offsetof(SharedPeriod, literals_dead) == PERIOD_HEAD_SIZE,
				 "SharedPeriod must start as PgcPeriod does");

/*
 * Every live entry has a slot, a number below pgc_max_statements, taken
 * and given back under the exclusive lock with the entry.  Per slot: the
 * entry, its query id, and flags its counters set the first time they
 * become non-zero (under the entry's spinlock, so a remover, which takes
 * that spinlock, clears them after; SLOT_SAVEPOINT at creation, under the
 * exclusive lock): the readers that want only such entries (top's tables,
 * the metrics, the findings) read the flags and query ids instead of every
 * entry of a full store.  These arrays, with the free slots' stack, follow
 * the header in its shared memory (slot_arrays_at).
 */
#define SLOT_SUBOVERFLOWED	0x01	/* suboverflowed_calls > 0 */
#define SLOT_DEAD_VISITS	0x02	/* dead_visits > 0 on an index */
#define SLOT_NEAR_OVERFLOW	0x04	/* near_overflow_calls > 0 */
#define SLOT_OVERFLOW_EVENTS 0x08	/* overflow_events > 0 */
#define SLOT_SAVEPOINT		0x10	/* a SAVEPOINT (is_savepoint_text) */
/* What can make an entry notable (entry_is_notable) in any window. */
#define SLOT_NOTABLE		0x1f


/* The slots' arrays and the index records' pool (statements.c). */
extern int *pgc_free_slots;
extern SharedStatement **pgc_slot_entry;
extern int64 *pgc_slot_query_id;	/* its entry's, to find a statement's */
extern pg_atomic_uint32 *pgc_slot_flags;

/* The index records' pool, and the stack of the free ones (under the lock). */
extern IndexRecord *pgc_index_records;
extern int32 *pgc_free_records;


/*
 * A sorted set of query ids: the walks that want a few statements' other
 * entries (other users, other applications) test each slot's query id
 * against it, and look at an entry only when it is one of them.
 */
typedef struct QueryIdSet
{
	int64	   *ids;
	long		n;
} QueryIdSet;

#define USAGE_DECAY_FACTOR	0.99
#define EVICT_PERCENT		5
#define EVICT_MIN			10

/*
 * Entries, slots and index records are taken and given back under the
 * store's lock held exclusively, or by the postmaster loading the file at
 * start, alone, before any backend exists (it has no PGPROC to take an
 * LWLock with).
 */
#define AssertStoreChangeAllowed() \
	Assert(!IsUnderPostmaster || LWLockHeldByMeInMode(pgc_stmts->lock, LW_EXCLUSIVE))

/* The store's header and hash (statements.c). */
extern StatementsShared *pgc_stmts;
extern HTAB *pgc_statements;

/* statements.c: the store */
extern Size entry_size(void);
extern Size shared_entry_size(void);
extern void flag_slot(SharedStatement *entry, uint32 flag);
extern int32 take_index_record(void);
extern bool pgc_statement_take_slot(SharedStatement *entry);
extern void evict_least_used(SharedStatement *keep);
extern bool is_savepoint_text(const char *query);
extern int	compare_int64(const void *a, const void *b);
extern void query_id_set_finish(QueryIdSet *set);

/*
 * The record of an entry's index slot k, or NULL when the slot has no
 * index or its index found no record.  Under the entry's spinlock, or
 * the lock exclusively, for the record's figures; the slot's index and
 * record number change only under the lock exclusively.
 */
static inline IndexRecord *
slot_record(const SharedStatement *entry, int k)
{
	if (entry->index_oid[k] == InvalidOid || entry->index_record[k] == NO_RECORD)
		return NULL;
	return &pgc_index_records[entry->index_record[k]];
}

/* Is slot i live and its statement's query id in the set?  (Under the lock.) */
static inline bool
slot_in_set(int i, const QueryIdSet *set)
{
	return pgc_slot_entry[i] != NULL && set->n > 0 &&
		bsearch(&pgc_slot_query_id[i], set->ids, set->n, sizeof(int64), compare_int64) != NULL;
}

/*
 * A growing palloc'd array of entry copies, for the walks that keep only
 * some entries (under the LWLock, as copy_entry says).
 */
typedef struct EntryCopies
{
	char	   *data;
	long		n;
	long		capacity;
	Size		size;			/* of one copy: entry_size() */
} EntryCopies;

/* A statement's index: what pg_contention_index_scans' view sums over. */
typedef struct IndexGroupKey
{
	Oid			dbid;
	Oid			indexoid;
	int64		query_id;
} IndexGroupKey;

/* statements_copy.c: entries copied out for the readers and the file */
extern void copy_entry(PgcStatementEntry *dest, SharedStatement *entry, bool take_locks);
extern void copies_init(EntryCopies *c, long capacity);
extern void copies_add(EntryCopies *c, SharedStatement *entry);
extern char *copy_entries(long *n);
extern char *copy_subtrans_entries(long *n, const PgcProfileKey *waiters, int nwaiters);
extern bool in_index_groups(const IndexGroupKey *groups, long ngroups, Oid dbid, int64 query_id, Oid indexoid);
extern char *copy_dead_index_entries(long *n, IndexGroupKey **groups, long *ngroups);

/* The two SQL readers of the store share how a row begins and its constants. */
extern bool put_key_columns(const PgcStatementEntry *e, Datum *values, bool *nulls);
extern void put_literals(const char *literals, bool visible, Oid dbid,
						 Datum *values, bool *nulls, int col);

#endif							/* PGC_STATEMENTS_STORE_H */
