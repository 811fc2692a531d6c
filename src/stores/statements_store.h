/*-------------------------------------------------------------------------
 *
 * statements_store.h
 *		The statement store's layout in shared memory, private to the files
 *		that make it: the store itself (statements.c), its copies for the
 *		readers (statements_copy.c), its section of the stores' file
 *		(statements_file.c), and its write path, the counting in every
 *		backend's executor (capture/statement_count.c: without the store's
 *		LWLock, through the layout).  Everyone else uses its door,
 *		statements.h.
 *
 * The locking rules are statements.c's (its header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_STATEMENTS_STORE_H
#define PGC_STATEMENTS_STORE_H

#include "stores.h"
#include "statements.h"

#include "miscadmin.h"
#include "utils/hsearch.h"

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
 * A period in shared memory: PgcPeriod's head (PGC_PERIOD_HEAD, copied
 * as bytes), then its constants; the per-index figures are in the entry's
 * index records.
 */
typedef struct SharedPeriod
{
	PGC_PERIOD_HEAD;
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
 * An entry in shared memory: PgcStatementEntry's head (PGC_STATEMENT_HEAD,
 * copied as bytes), then each index slot's index and record, the periods
 * without their per-index arrays, the application and the text.
 */
typedef struct SharedStatement
{
	PGC_STATEMENT_HEAD;
	Oid			index_oid[PGC_INDEX_SLOTS]; /* InvalidOid: slot free */
	int32		index_record[PGC_INDEX_SLOTS];	/* with an index: its record,
												 * or NO_RECORD */
	SharedPeriod current;
	SharedPeriod previous;
	char		application_name[NAMEDATALEN];
	char		query[FLEXIBLE_ARRAY_MEMBER];
} SharedStatement;

#define ENTRY_HEAD_SIZE		offsetof(PgcStatementEntry, indexes)

/*
 * Each head is one definition, so its two forms agree field by field; what
 * follows each head must start where the head's copy ends.
 */
StaticAssertDecl(offsetof(SharedStatement, index_oid) == ENTRY_HEAD_SIZE,
				 "SharedStatement's head must end where PgcStatementEntry's does");
StaticAssertDecl(offsetof(SharedPeriod, literals_dead) == PERIOD_HEAD_SIZE,
				 "SharedPeriod's head must end where PgcPeriod's does");

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
extern Size shared_entry_size(void);
extern void flag_slot(SharedStatement *entry, uint32 flag);
extern int32 take_index_record(void);
extern bool pgc_statement_take_slot(SharedStatement *entry);
extern void evict_least_used(SharedStatement *keep);
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


/* statements_copy.c: entries copied out for the readers and the file */
extern void copy_entry(PgcStatementEntry *dest, SharedStatement *entry, bool take_locks);
extern void copies_init(EntryCopies *c, long capacity);
extern void copies_add(EntryCopies *c, SharedStatement *entry);

#endif							/* PGC_STATEMENTS_STORE_H */
