/*-------------------------------------------------------------------------
 *
 * statements.c
 *		Per-statement counters: how often each statement ran, how often on a
 *		suboverflowed snapshot, how often on a hot standby, how many
 *		subtransaction-overflow events it caused, its rows and buffers, and
 *		what its index scans met; the same again for the current and the
 *		previous period of pg_contention.findings_window, which the
 *		findings judge (pg_contention_recent): there, per index, also the
 *		worst execution (its dead entries, entries, buffers, rows, time),
 *		the most recent one, and how many were bad, and the constants of
 *		the statement's worst execution (normalize.c reads them before the
 *		entry's spinlock is taken; a bounded copy under it).
 *
 * Owns the statement hash (ShmemInitHash "pg_contention statements", at
 * most pgc_max_statements entries, keyed by user, database, query id and
 * application: a hash of application_name, see current_application), its
 * header (ShmemInitStruct "pg_contention statements header": the
 * eviction count, the generation, each entry's slot with its flags, see
 * below, and the pool of index records: a statement's figures for each
 * index it scans, 2 per statement the store holds) and its LWLock.
 *
 * Locking, as in pg_stat_statements: the LWLock in shared mode to find
 * an entry and update its counters (its index records' too) under the
 * entry's spinlock; exclusive only to create entries, to give an entry a
 * record for an index it meets the first time, evict, or reset.  Readers copy entries out
 * under it in shared mode: the views all at once, the findings only the
 * entries that can give a row (each looked at under its spinlock), the
 * save for the file a bounded batch at a time, writing with the lock
 * released.  When the
 * hash is full, the least used 5% (at least 10) are evicted and counted;
 * nothing errors.
 * An entry's spinlock guards its counters only: the query text is written
 * once, when the entry is created under the exclusive lock, and read only
 * under the LWLock, so readers copy it outside the spinlock.
 *
 * One step further, the common path takes no LWLock at all.  Each backend remembers where
 * the entries of its recent statements are (a small direct-mapped cache)
 * and the generation (stmts->generation) it found them in.
 * Entries are removed only by a holder of the exclusive lock (eviction,
 * reset), which first bumps the generation and then takes each victim's
 * spinlock before removing it; a new entry is initialised under its
 * spinlock too.  So a backend that takes a cached entry's spinlock and
 * still reads the generation it found the entry in holds a live entry:
 * had the entry been removed, the remover's bump would have been visible
 * once we got the spinlock it released.  Otherwise it falls back to the
 * locked path.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <ctype.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(pg_contention_statements);
PG_FUNCTION_INFO_V1(pg_contention_index_scans);
PG_FUNCTION_INFO_V1(pg_contention_recent);

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

static int *free_slots;
static SharedStatement **slot_entry;
static int64 *slot_query_id;	/* its entry's, to find a statement's */
static pg_atomic_uint32 *slot_flags;

/* The index records' pool, and the stack of the free ones (under the lock). */
static IndexRecord *index_records;
static int32 *free_records;

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

static StatementsShared *stmts = NULL;
static HTAB *statements = NULL;

static bool is_savepoint_text(const char *query);
static void put_literals(const char *literals, bool visible, Oid dbid,
						 Datum *values, bool *nulls, int col);

/* This backend's cache of entry locations, see the header comment. */
#define LOCAL_CACHE_SIZE	64

typedef struct LocalCacheSlot
{
	PgcStatementKey key;
	SharedStatement *entry;		/* NULL: empty */
	uint64		generation;
} LocalCacheSlot;

static LocalCacheSlot local_cache[LOCAL_CACHE_SIZE];

/*
 * This backend's application: application_name as the statement store
 * keeps it (cut at NAMEDATALEN - 1 bytes, as pg_stat_activity shows it),
 * and its hash, the key's app_hash.
 */
static char current_app_name[NAMEDATALEN];
static uint64 current_app_hash = 0;

/* application_name changed: note the new name and hash it, once. */
static pg_noinline void
application_changed(const char *name)
{
	strlcpy(current_app_name, name, NAMEDATALEN);
	current_app_hash = current_app_name[0] == '\0' ? 0 :
		hash_bytes_extended((const unsigned char *) current_app_name,
							strlen(current_app_name), 0);
}

/*
 * The key's app_hash for this backend's statement now.  The hash is
 * computed only when application_name changes; what tells is a comparison
 * of the string with the name last hashed (strncmp, which ends at the
 * first byte that differs or at the name's end: about 35 instructions per
 * statement in all, measured in BENCHMARKS.md; an inline test of the first
 * byte measured no cheaper).  The variable's pointer would not do: a SET
 * frees the old string, and two assignments between two counted
 * statements ("RESET ALL; SET application_name = 'b'", as a pool does on
 * checkout) can leave a different name at the address seen last, so a
 * pointer test would need the string test behind it anyway.  The GUC's
 * check hook keeps the name printable ASCII, so a cut at any byte is a
 * whole character.  Two names with the same 64-bit hash would share
 * entries (under the first one's name).
 */
static inline uint64
current_application(void)
{
	const char *name = application_name ? application_name : "";

	if (unlikely(strncmp(name, current_app_name, NAMEDATALEN - 1) != 0))
		application_changed(name);
	return current_app_hash;
}

/* The size of an entry's copy (what readers and the file see). */
static Size
entry_size(void)
{
	return MAXALIGN(offsetof(PgcStatementEntry, query) + pgc_max_query_length);
}

/* The size of an entry in the hash. */
static Size
shared_entry_size(void)
{
	return MAXALIGN(offsetof(SharedStatement, query) + pgc_max_query_length);
}

static int
index_records_count(void)
{
	return pgc_max_statements * INDEX_RECORDS_PER_STATEMENT;
}

/*
 * The slots' arrays and the index records' pool after the header at base:
 * sets the six pointers if base is not NULL, and returns the size of the
 * header with them.  One layout for the size asked at start and the
 * addresses every process uses.
 */
static Size
slot_arrays_at(char *base)
{
	Size		offset = MAXALIGN(sizeof(StatementsShared));

	if (base)
		free_slots = (int *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(int))));
	if (base)
		slot_entry = (SharedStatement **) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(SharedStatement *))));
	if (base)
		slot_query_id = (int64 *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(int64))));
	if (base)
		slot_flags = (pg_atomic_uint32 *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(pg_atomic_uint32))));
	if (base)
		free_records = (int32 *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(index_records_count(), sizeof(int32))));
	if (base)
		index_records = (IndexRecord *) (base + offset);
	return add_size(offset, mul_size(index_records_count(), sizeof(IndexRecord)));
}

Size
pgc_statements_shmem_size(void)
{
	return add_size(slot_arrays_at(NULL),
					hash_estimate_size(pgc_max_statements, shared_entry_size()));
}

/*
 * A new entry's slot (caller holds the lock exclusively).  There is one
 * for every entry the hash is sized for; false if the hash took more.
 */
static bool
take_slot(SharedStatement *entry)
{
	if (stmts->nfree == 0)
		return false;
	entry->slot = free_slots[--stmts->nfree];
	slot_entry[entry->slot] = entry;
	slot_query_id[entry->slot] = entry->key.query_id;
	pg_atomic_write_u32(&slot_flags[entry->slot], 0);
	return true;
}

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
	return &index_records[entry->index_record[k]];
}

/*
 * Give a removed entry's slot and index records back (caller holds the
 * lock exclusively and has taken and released the entry's spinlock since
 * the generation moved: no one can be counting into them).
 */
static void
release_slot(SharedStatement *entry)
{
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
		if (slot_record(entry, k) != NULL)
			free_records[stmts->nfree_records++] = entry->index_record[k];
	pg_atomic_write_u32(&slot_flags[entry->slot], 0);
	slot_entry[entry->slot] = NULL;
	free_slots[stmts->nfree++] = entry->slot;
}

/*
 * A free index record, zeroed, or NO_RECORD if none is left; the caller
 * holds the lock exclusively and the spinlock of the entry it is for (or
 * is the postmaster, loading the store).
 */
static int32
take_index_record(void)
{
	int32		r;

	if (stmts->nfree_records == 0)
		return NO_RECORD;
	r = free_records[--stmts->nfree_records];
	memset(&index_records[r], 0, sizeof(IndexRecord));
	return r;
}

static int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* Sort and deduplicate the ids gathered in set->ids[0 .. set->n). */
static void
query_id_set_finish(QueryIdSet *set)
{
	long		unique = 0;

	qsort(set->ids, set->n, sizeof(int64), compare_int64);
	for (long i = 0; i < set->n; i++)
		if (unique == 0 || set->ids[i] != set->ids[unique - 1])
			set->ids[unique++] = set->ids[i];
	set->n = unique;
}

/* Is slot i live and its statement's query id in the set?  (Under the lock.) */
static inline bool
slot_in_set(int i, const QueryIdSet *set)
{
	return slot_entry[i] != NULL && set->n > 0 &&
		bsearch(&slot_query_id[i], set->ids, set->n, sizeof(int64), compare_int64) != NULL;
}

/* The first time one of a slot's counters becomes non-zero; under its spinlock. */
static pg_noinline void
flag_slot(SharedStatement *entry, uint32 flag)
{
	pg_atomic_fetch_or_u32(&slot_flags[entry->slot], flag);
}

/* Called under AddinShmemInitLock. */
void
pgc_statements_shmem_init(LWLock *lock)
{
	HASHCTL		info;
	bool		found;
	bool		first;

	stmts = ShmemInitStruct("pg_contention statements header",
							slot_arrays_at(NULL), &found);
	first = !found;
	(void) slot_arrays_at((char *) stmts);
	if (first)
	{
		stmts->lock = lock;
		stmts->evictions = 0;
		pg_atomic_init_u64(&stmts->generation, 0);
		/* Taken from the end: slot 0 first. */
		stmts->nfree = pgc_max_statements;
		for (int i = 0; i < pgc_max_statements; i++)
		{
			free_slots[i] = pgc_max_statements - 1 - i;
			slot_entry[i] = NULL;
			pg_atomic_init_u32(&slot_flags[i], 0);
		}
		stmts->nfree_records = index_records_count();
		for (int i = 0; i < index_records_count(); i++)
			free_records[i] = index_records_count() - 1 - i;
	}

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(PgcStatementKey);
	info.entrysize = shared_entry_size();
	statements = ShmemInitHash("pg_contention statements",
							   pgc_max_statements, pgc_max_statements,
							   &info, HASH_ELEM | HASH_BLOBS);

	/*
	 * Initialise the spinlock of every element the hash will ever use, once:
	 * entries are later created under a spinlock that is taken, not reset
	 * (see enter_statement).  Enter max_statements keys, then remove them.
	 */
	if (first)
	{
		PgcStatementKey key;

		memset(&key, 0, sizeof(key));
		for (int i = 0; i < pgc_max_statements; i++)
		{
			SharedStatement *entry;

			key.query_id = i;
			entry = hash_search(statements, &key, HASH_ENTER_NULL, NULL);
			if (entry == NULL)
				break;
			SpinLockInit(&entry->mutex);
		}
		for (int i = 0; i < pgc_max_statements; i++)
		{
			key.query_id = i;
			hash_search(statements, &key, HASH_REMOVE, NULL);
		}
	}
}

typedef struct UsageOf
{
	double		usage;
	SharedStatement *entry;
} UsageOf;

static int
compare_usage(const void *a, const void *b)
{
	double		ua = ((const UsageOf *) a)->usage;
	double		ub = ((const UsageOf *) b)->usage;

	return (ua > ub) - (ua < ub);
}

/* Does an entry hold index records?  (Under the lock: set only under it.) */
static bool
holds_records(const SharedStatement *entry)
{
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
		if (slot_record(entry, k) != NULL)
			return true;
	return false;
}

/*
 * Make room: decay every entry's usage, then remove the least used of
 * them, or, for index records (keep not NULL), of those that hold any,
 * all but keep, the entry the caller is about to count into.  Caller
 * holds statements_lock exclusively, and no spinlock; usage is read and
 * decayed under each entry's spinlock, since the fast path updates it
 * without the LWLock.
 */
static void
evict_least_used(SharedStatement *keep)
{
	HASH_SEQ_STATUS status;
	UsageOf    *all;
	SharedStatement *entry;
	long		n = hash_get_num_entries(statements);
	long		i = 0;
	long		victims;

	all = palloc(Max(n, 1) * sizeof(UsageOf));
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		SpinLockAcquire(&entry->mutex);
		entry->usage *= USAGE_DECAY_FACTOR;
		all[i].usage = entry->usage;
		SpinLockRelease(&entry->mutex);
		if (keep != NULL && (entry == keep || !holds_records(entry)))
			continue;
		all[i].entry = entry;
		i++;
	}
	qsort(all, i, sizeof(UsageOf), compare_usage);
	victims = Min(i, Max(EVICT_MIN, i * EVICT_PERCENT / 100));
	pg_atomic_fetch_add_u64(&stmts->generation, 1);
	for (long v = 0; v < victims; v++)
	{
		/* Wait out any backend updating it without the LWLock. */
		SpinLockAcquire(&all[v].entry->mutex);
		SpinLockRelease(&all[v].entry->mutex);
		release_slot(all[v].entry);
		hash_search(statements, &all[v].entry->key, HASH_REMOVE, NULL);
	}
	stmts->evictions += victims;
	pfree(all);
}

/*
 * Find or create the entry for "key".  Caller holds statements_lock
 * exclusively.  Returns NULL only if the hash cannot take an entry even
 * after eviction (it then counts nothing rather than fail the statement).
 */
static SharedStatement *
enter_statement(const PgcStatementKey *key, const char *text, TimestampTz now)
{
	SharedStatement *entry;
	bool		found;

	entry = hash_search(statements, key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	if (hash_get_num_entries(statements) >= pgc_max_statements)
		evict_least_used(NULL);
	entry = hash_search(statements, key, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		return NULL;
	if (!found && !take_slot(entry))
	{
		hash_search(statements, key, HASH_REMOVE, NULL);
		return NULL;
	}
	if (!found)
	{
		/*
		 * The slot may be a removed entry's, whose spinlock a backend with
		 * a stale cache could still be holding for a moment: take it, do
		 * not reset it (every element's spinlock was initialised at start).
		 */
		Size		after_mutex = offsetof(SharedStatement, usage);

		SpinLockAcquire(&entry->mutex);
		memset((char *) entry + after_mutex, 0,
			   offsetof(SharedStatement, query) - after_mutex);
		entry->first_seen = now;
		/* The name of this backend's application, the key's app_hash. */
		if (key->app_hash == current_app_hash)
			strlcpy(entry->application_name, current_app_name, NAMEDATALEN);
		SpinLockRelease(&entry->mutex);

		/* Only readers under the LWLock read the text: we hold it. */
		strlcpy(entry->query, text, pgc_max_query_length);
		if (is_savepoint_text(entry->query))
			flag_slot(entry, SLOT_SAVEPOINT);
	}
	return entry;
}

/*
 * One measured execution of an index in a period that met dead entries:
 * is it the worst, and is it bad?  Out of line: a healthy execution meets
 * none (note_execution).  Caller holds the entry's mutex.
 */
static pg_noinline void
note_dead_execution(PgcPeriodScan *ps, const PgcExecution *exec, int64 dead,
					int64 entries, TimestampTz now)
{
	if (dead > ps->worst_dead || ps->worst_at == 0)
	{
		bool		top = (exec->flags & PGC_COUNT_TOP_LEVEL) != 0;

		ps->worst_dead = dead;
		ps->worst_entries = entries;
		ps->worst_blks = top ? exec->shared_blks_hit + exec->shared_blks_read : -1;
		ps->worst_rows = top ? exec->rows : -1;
		ps->worst_at = now;
	}
	ps->last_dead = dead;
	ps->last_at = now;
	if (dead >= pgc_dead_visits_warning)
	{
		ps->bad_scans++;
		ps->bad_dead += dead;
		ps->last_bad_at = now;
		ps->clean_since = 0;
	}
	else if (ps->clean_since == 0)
		ps->clean_since = now;
}

/*
 * One measured execution of an index in a period.  Without dead entries
 * (the common case) it is never bad, and the worst only if it is the
 * period's first: two stores and a compare.
 */
static inline void
note_execution(PgcPeriodScan *ps, const PgcExecution *exec, int64 dead,
			   int64 entries, TimestampTz now)
{
	if (unlikely(dead != 0))
	{
		note_dead_execution(ps, exec, dead, entries, now);
		return;
	}
	ps->last_dead = 0;
	ps->last_at = now;
	/* The first clean one after a bad one, or the period's first. */
	if (unlikely(ps->clean_since == 0))
	{
		ps->clean_since = now;
		if (ps->worst_at == 0)
			note_dead_execution(ps, exec, 0, entries, now);
	}
}

/*
 * Find each measured delta's index slot in the entry, into slots[] (-1:
 * not counted, the entry's slots are all other indexes').  An index the
 * entry has not met takes a free slot and a record from the pool, which
 * only a holder of the exclusive lock may do (may_take): without it,
 * return false before anything is counted, and the caller counts again
 * under the exclusive lock.  Caller holds the entry's spinlock.
 */
static inline bool
find_index_slots(SharedStatement *entry, const PgcExecution *exec,
				 int *slots, bool may_take)
{
	for (int d = 0; d < exec->ndeltas; d++)
	{
		Oid			indexoid = exec->deltas[d].indexoid;
		int			slot = -1;

		slots[d] = -1;
		if (indexoid == InvalidOid)
			continue;			/* not measured */
		for (int i = 0; i < PGC_INDEX_SLOTS; i++)
		{
			if (entry->index_oid[i] == indexoid)
			{
				slot = i;
				break;
			}
			if (slot < 0 && entry->index_oid[i] == InvalidOid)
				slot = i;
		}
		if (slot >= 0 && entry->index_oid[slot] == InvalidOid)
		{
			if (!may_take)
				return false;
			entry->index_oid[slot] = indexoid;
			entry->index_record[slot] = take_index_record();
			if (entry->index_record[slot] != NO_RECORD)
				index_records[entry->index_record[slot]].counters.indexoid = indexoid;
		}
		slots[d] = slot;
	}
	return true;
}

/*
 * Add one execution's index deltas to an entry, each at its slot
 * (find_index_slots); caller holds its mutex.
 */
static void
add_index_deltas(SharedStatement *entry, const PgcExecution *exec,
				 const int *slots, TimestampTz now)
{
	for (int d = 0; d < exec->ndeltas; d++)
	{
		const PgcIndexDelta *delta = &exec->deltas[d];
		IndexRecord *r;
		PgcIndexCounters *c;

		if (delta->indexoid == InvalidOid)
			continue;			/* not measured */
		if (slots[d] < 0 || (r = slot_record(entry, slots[d])) == NULL)
		{
			entry->indexes_untracked++;
			continue;
		}
		c = &r->counters;
		c->indexoid = delta->indexoid;
		if (delta->kind == PGC_SCAN_INDEX_ONLY)
			c->index_only_scans++;
		else if (delta->kind == PGC_SCAN_BITMAP)
			c->bitmap_scans++;
		if (delta->kind == PGC_SCAN_INDEX || delta->heap_measured)
		{
			/* A non-MVCC scan can fetch a TID more than once; a lossy page
			 * can show more visible tuples than entries. */
			int64		dead = Max(delta->returned - delta->fetched, 0);

			c->scans++;
			c->entries_read += delta->returned;
			c->live_fetched += delta->fetched;
			r->current.scans++;
			r->current.entries += delta->returned;
			/* A clean execution (the common case) adds nothing more. */
			if (unlikely((dead | delta->lossy_pages) != 0))
			{
				if (dead > 0 && c->dead_visits == 0)
					flag_slot(entry, SLOT_DEAD_VISITS);
				c->dead_visits += dead;
				c->max_dead_visits = Max(c->max_dead_visits, dead);
				c->bitmap_lossy_pages += delta->lossy_pages;
				r->current.dead += dead;
			}
			note_execution(&r->current.exec, exec, dead, delta->returned, now);
		}
		else
			c->other_entries_read += delta->returned;
	}
}

/*
 * The entry's current period has lasted the window: it becomes the
 * previous one, its index records' too.  Caller holds the entry's mutex.
 */
static pg_noinline void
start_period(SharedStatement *entry, TimestampTz now)
{
	entry->previous = entry->current;
	memset(&entry->current, 0, sizeof(SharedPeriod));
	entry->current.start = now;
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
	{
		IndexRecord *r = slot_record(entry, k);

		if (r != NULL)
		{
			r->previous = r->current;
			memset(&r->current, 0, sizeof(IndexPeriod));
		}
	}
}

/*
 * Add one statement's counts; caller holds the entry's spinlock.  Returns
 * false, having counted nothing, if the execution scanned an index the
 * entry has no record for and may_take is false (see find_index_slots).
 */
static inline bool
update_entry(SharedStatement *entry, TimestampTz now,
			 const PgcExecution *exec, bool may_take)
{
	int			flags = exec->flags;
	SharedPeriod *period = &entry->current;
	int			slots[PGC_INDEX_SLOTS];

	if (exec->ndeltas > 0 && !find_index_slots(entry, exec, slots, may_take))
		return false;

	if (unlikely(now - period->start >= pgc_findings_window * USECS_PER_SEC))
		start_period(entry, now);
	period->end = now;

	if (flags & PGC_COUNT_CALL)
	{
		entry->calls++;
		period->calls++;
		entry->usage += 1.0;
		if (unlikely(flags & PGC_COUNT_SUBOVERFLOWED))
		{
			if (entry->suboverflowed_calls == 0)
				flag_slot(entry, SLOT_SUBOVERFLOWED);
			entry->suboverflowed_calls++;
			period->suboverflowed_calls++;
		}
		if (flags & PGC_COUNT_STANDBY)
			entry->standby_calls++;
		if (flags & PGC_COUNT_TOP_LEVEL)
		{
			entry->rows += exec->rows;
			entry->shared_blks_hit += exec->shared_blks_hit;
			entry->shared_blks_read += exec->shared_blks_read;
			period->top_level_calls++;
			period->shared_blks += exec->shared_blks_hit + exec->shared_blks_read;
		}
		if (unlikely(exec->subxacts > 0))
		{
			entry->max_subxacts = Max(entry->max_subxacts, exec->subxacts);
			period->max_subxacts = Max(period->max_subxacts, exec->subxacts);
			if (exec->subxacts > pgc_subxact_warn_level)
			{
				if (entry->near_overflow_calls == 0)
					flag_slot(entry, SLOT_NEAR_OVERFLOW);
				entry->near_overflow_calls++;
				period->near_overflow_calls++;
			}
		}
	}
	if (flags & PGC_COUNT_OVERFLOW_EVENT)
	{
		if (entry->overflow_events == 0)
			flag_slot(entry, SLOT_OVERFLOW_EVENTS);
		entry->overflow_events++;
		period->overflow_events++;
	}
	if (exec->ndeltas > 0)
		add_index_deltas(entry, exec, slots, now);
	/* Its constants, read before the spinlock (hooks.c): a bounded copy. */
	if (unlikely(exec->literals != NULL) && exec->max_dead > period->literals_dead)
	{
		period->literals_dead = exec->max_dead;
		strlcpy(period->literals, exec->literals, PGC_LITERALS_LEN);
	}
	entry->last_seen = now;
	return true;
}

/*
 * How many index records counting exec into entry would take (the
 * indexes it meets the first time).  Caller holds the lock exclusively,
 * under which alone an entry's indexes are set: no spinlock needed.
 */
static int
records_needed(const SharedStatement *entry, const PgcExecution *exec)
{
	int			needed = 0;

	for (int d = 0; d < exec->ndeltas; d++)
	{
		bool		known = false;

		if (exec->deltas[d].indexoid == InvalidOid)
			continue;
		for (int i = 0; i < PGC_INDEX_SLOTS && !known; i++)
			known = entry->index_oid[i] == exec->deltas[d].indexoid;
		needed += !known;
	}
	return needed;
}

/*
 * The locked path of pgc_statement_count: find or create the entry under
 * the LWLock, remember it in the backend's cache slot, and count.  Kept
 * out of line so that the common path stays short.  The lock is taken in
 * shared mode unless exclusive: an entry is created, or given an index
 * record, only under the exclusive lock, which is then taken instead
 * (once for the entry's first execution, and once for each index it meets
 * the first time).
 */
static pg_noinline void
count_locked(LocalCacheSlot *slot, Oid userid, int64 query_id,
			 uint64 app_hash, TimestampTz now, const char *source_text,
			 int stmt_location, int stmt_len, const PgcExecution *exec,
			 bool exclusive)
{
	SharedStatement *entry;
	PgcStatementKey key;
	bool		counted;

	memset(&key, 0, sizeof(key));	/* hashed as bytes: no stray padding */
	key.userid = userid;
	key.dbid = MyDatabaseId;
	key.query_id = query_id;
	key.app_hash = app_hash;

	LWLockAcquire(stmts->lock, exclusive ? LW_EXCLUSIVE : LW_SHARED);
	entry = hash_search(statements, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		/*
		 * A new statement (rare): its text normalised once, here, with no
		 * lock held (normalize.c scans it and may catch the scanner's
		 * error).
		 */
		char	   *text;

		LWLockRelease(stmts->lock);
		text = palloc(pgc_max_query_length);
		pgc_normalize_query(source_text, stmt_location, stmt_len, text,
							pgc_max_query_length);
		LWLockAcquire(stmts->lock, LW_EXCLUSIVE);
		exclusive = true;
		entry = enter_statement(&key, text, now);
		pfree(text);
		if (entry == NULL)
		{
			LWLockRelease(stmts->lock);
			return;
		}
	}

	/*
	 * Records for the indexes this execution meets the first time: when
	 * the pool has too few, the least used statements make room (evicted
	 * and counted like the hash's).
	 */
	if (exclusive && stmts->nfree_records < records_needed(entry, exec))
		evict_least_used(entry);

	/* No removal can happen while we hold the LWLock: the generation holds. */
	slot->key = key;
	slot->entry = entry;
	slot->generation = pg_atomic_read_u64(&stmts->generation);

	SpinLockAcquire(&entry->mutex);
	counted = update_entry(entry, now, exec, exclusive);
	SpinLockRelease(&entry->mutex);

	LWLockRelease(stmts->lock);

	/* A new index: it takes a record under the exclusive lock. */
	if (!counted)
		count_locked(slot, userid, query_id, app_hash, now, source_text,
					 stmt_location, stmt_len, exec, true);
}

/*
 * Count one statement for a user (InvalidOid: the current one) in the
 * current database.  exec->flags: PGC_COUNT_CALL for an execution
 * (ExecutorEnd, or a savepoint statement) with its snapshot's flags, its
 * cache count, its index scans' deltas, and, at top level, its rows and
 * buffers; PGC_COUNT_OVERFLOW_EVENT when the statement caused a
 * subtransaction-cache overflow.  The text is read only if the entry must
 * be created.
 */
void
pgc_statement_count(Oid userid, int64 query_id, const char *source_text,
					int stmt_location, int stmt_len, const PgcExecution *exec)
{
	SharedStatement *entry;
	LocalCacheSlot *slot;
	TimestampTz now = GetCurrentStatementStartTimestamp();
	uint64		app_hash = current_application();
	bool		live = false;

	/* The hooks exist only where the shared state was attached at start. */
	Assert(stmts != NULL);
	if (!OidIsValid(userid))
		userid = GetUserId();

	/* Fast path: a cached entry, still live (see the header comment). */
	slot = &local_cache[(uint32) (query_id ^ (query_id >> 32) ^ app_hash) % LOCAL_CACHE_SIZE];
	entry = slot->entry;
	if (entry != NULL && slot->key.query_id == query_id &&
		slot->key.userid == userid && slot->key.dbid == MyDatabaseId &&
		slot->key.app_hash == app_hash)
	{
		SpinLockAcquire(&entry->mutex);
		live = pg_atomic_read_u64(&stmts->generation) == slot->generation;
		if (live && update_entry(entry, now, exec, false))
		{
			SpinLockRelease(&entry->mutex);
			return;
		}
		SpinLockRelease(&entry->mutex);
	}

	/* Live but not counted: it met a new index, the exclusive lock's work. */
	count_locked(slot, userid, query_id, app_hash, now, source_text,
				 stmt_location, stmt_len, exec, live);
}

/* For pg_contention_info: entries in the hash, and evictions. */
void
pgc_statements_info(int64 *count, int64 *evictions)
{
	LWLockAcquire(stmts->lock, LW_SHARED);
	*count = hash_get_num_entries(statements);
	*evictions = stmts->evictions;
	LWLockRelease(stmts->lock);
}

/* pg_contention_reset(): forget every statement and the eviction count. */
void
pgc_statements_reset(void)
{
	HASH_SEQ_STATUS status;
	SharedStatement *entry;

	LWLockAcquire(stmts->lock, LW_EXCLUSIVE);
	pg_atomic_fetch_add_u64(&stmts->generation, 1);
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		/* Wait out any backend updating it without the LWLock. */
		SpinLockAcquire(&entry->mutex);
		SpinLockRelease(&entry->mutex);
		release_slot(entry);
		hash_search(statements, &entry->key, HASH_REMOVE, NULL);
	}
	stmts->evictions = 0;
	LWLockRelease(stmts->lock);
}

/* A shared period into a copy's, its per-index arrays zeroed. */
static void
copy_period(PgcPeriod *dest, const SharedPeriod *from)
{
	memcpy(dest, from, PERIOD_HEAD_SIZE);
	memset((char *) dest + PERIOD_HEAD_SIZE, 0,
		   offsetof(PgcPeriod, literals_dead) - PERIOD_HEAD_SIZE);
	dest->literals_dead = from->literals_dead;
	memcpy(dest->literals, from->literals, PGC_LITERALS_LEN);
}

/* One index's figures in a period into slot k of a copy's period. */
static void
copy_index_period(PgcPeriod *dest, int k, const IndexPeriod *from)
{
	dest->index_scans[k] = from->scans;
	dest->index_entries[k] = from->entries;
	dest->index_dead[k] = from->dead;
	dest->index_exec[k] = from->exec;
}

/*
 * Copy one entry into its readers' form: its counters and its index
 * records under its spinlock (unless take_locks is false: the postmaster
 * at exit, alone), its text after releasing it (see the header comment).
 * The caller holds the LWLock, at least shared.  An index left without a
 * record is not in the copy (its executions are in indexes_untracked).
 */
static void
copy_entry(PgcStatementEntry *dest, SharedStatement *entry, bool take_locks)
{
	if (take_locks)
		SpinLockAcquire(&entry->mutex);
	memcpy(dest, entry, ENTRY_HEAD_SIZE);
	copy_period(&dest->current, &entry->current);
	copy_period(&dest->previous, &entry->previous);
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
	{
		const IndexRecord *r = slot_record(entry, k);

		if (r == NULL)
		{
			memset(&dest->indexes[k], 0, sizeof(PgcIndexCounters));
			continue;
		}
		dest->indexes[k] = r->counters;
		dest->indexes[k].indexoid = entry->index_oid[k];
		copy_index_period(&dest->current, k, &r->current);
		copy_index_period(&dest->previous, k, &r->previous);
	}
	memcpy(dest->application_name, entry->application_name, NAMEDATALEN);
	if (take_locks)
		SpinLockRelease(&entry->mutex);
	strlcpy(dest->query, entry->query, pgc_max_query_length);
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

static void
copies_init(EntryCopies *c, long capacity)
{
	c->size = entry_size();
	c->n = 0;
	c->capacity = Max(capacity, 1);
	c->data = palloc_extended(mul_size(c->capacity, c->size), MCXT_ALLOC_HUGE);
}

static void
copies_add(EntryCopies *c, SharedStatement *entry)
{
	if (c->n == c->capacity)
	{
		c->capacity *= 2;
		c->data = repalloc_huge(c->data, mul_size(c->capacity, c->size));
	}
	copy_entry((PgcStatementEntry *) (c->data + c->n++ * c->size), entry, true);
}

/* The order of pgc_sampler_subtrans_keys(): the keys' bytes. */
static int
compare_profile_key_bytes(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(PgcProfileKey));
}

/*
 * Copy every entry out of the hash, under the LWLock in shared mode, into
 * a palloc'd array; *n is the count.  Entries are only added under the
 * exclusive lock, so the count holds.
 */
static char *
copy_entries(long *n)
{
	HASH_SEQ_STATUS status;
	SharedStatement *entry;
	Size		size = entry_size();
	char	   *copy;
	long		i = 0;

	LWLockAcquire(stmts->lock, LW_SHARED);
	copy = palloc_extended(mul_size(Max(hash_get_num_entries(statements), 1), size),
						   MCXT_ALLOC_HUGE);
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
		copy_entry((PgcStatementEntry *) (copy + i++ * size), entry, true);
	LWLockRelease(stmts->lock);
	*n = i;
	return copy;
}

/*
 * Copy out of the hash only what pg_contention_statements(subtrans_only)
 * shows: the entries that ran on a suboverflowed snapshot, and those whose
 * (database, user, query id) is among waiters, the profile's keys with
 * pg_subtrans waits (pgc_sampler_subtrans_keys(), sorted).  Under the
 * LWLock in shared mode (entries move only under the exclusive lock), each
 * entry's counter read under its spinlock, the copy as copy_entries.  The
 * rest of a full store is neither copied (copying its texts was what top's
 * statement table cost) nor looked at: the slots' flags and query ids say
 * which entries to read.
 */
static char *
copy_subtrans_entries(long *n, const PgcProfileKey *waiters, int nwaiters)
{
	SharedStatement *entry;
	EntryCopies kept;
	QueryIdSet	waiting;

	/* The waiters' query ids: a slot of another is not looked at. */
	waiting.ids = palloc(Max(nwaiters, 1) * sizeof(int64));
	for (int w = 0; w < nwaiters; w++)
		waiting.ids[w] = waiters[w].query_id;
	waiting.n = nwaiters;
	query_id_set_finish(&waiting);

	copies_init(&kept, 64);
	LWLockAcquire(stmts->lock, LW_SHARED);

	/*
	 * The slots flagged suboverflowed, and those of the waiters' statements
	 * (the profile's keys lack the application: every application's entry
	 * of a waiting statement is shown).  Slots change only under the
	 * exclusive lock; a flag set since it was read is a call counted after
	 * this read began.
	 */
	for (int i = 0; i < pgc_max_statements; i++)
	{
		bool		wanted = false;

		if ((entry = slot_entry[i]) == NULL)
			continue;
		if (pg_atomic_read_u32(&slot_flags[i]) & SLOT_SUBOVERFLOWED)
		{
			SpinLockAcquire(&entry->mutex);
			wanted = entry->suboverflowed_calls > 0;
			SpinLockRelease(&entry->mutex);
		}
		if (!wanted && slot_in_set(i, &waiting))
		{
			PgcProfileKey key = {0};

			key.dbid = entry->key.dbid;
			key.roleid = entry->key.userid;
			key.query_id = entry->key.query_id;
			wanted = bsearch(&key, waiters, nwaiters, sizeof(PgcProfileKey),
							 compare_profile_key_bytes) != NULL;
		}
		if (wanted)
			copies_add(&kept, entry);
	}
	LWLockRelease(stmts->lock);
	pfree(waiting.ids);
	*n = kept.n;
	return kept.data;
}

/* A statement's index: what pg_contention_index_scans' view sums over. */
typedef struct IndexGroupKey
{
	Oid			dbid;
	Oid			indexoid;
	int64		query_id;
} IndexGroupKey;

static int
compare_index_groups(const void *a, const void *b)
{
	const IndexGroupKey *ka = (const IndexGroupKey *) a;
	const IndexGroupKey *kb = (const IndexGroupKey *) b;

	if (ka->dbid != kb->dbid)
		return ka->dbid < kb->dbid ? -1 : 1;
	if (ka->query_id != kb->query_id)
		return ka->query_id < kb->query_id ? -1 : 1;
	if (ka->indexoid != kb->indexoid)
		return ka->indexoid < kb->indexoid ? -1 : 1;
	return 0;
}

static bool
in_index_groups(const IndexGroupKey *groups, long ngroups, Oid dbid,
				int64 query_id, Oid indexoid)
{
	IndexGroupKey key = {dbid, indexoid, query_id};

	return ngroups > 0 &&
		bsearch(&key, groups, ngroups, sizeof(IndexGroupKey),
				compare_index_groups) != NULL;
}

/*
 * Copy out of the hash only what pg_contention_index_scans(dead_only)
 * shows: the entries of every statement's index that visited dead entries
 * in any entry (of any user or application), so that the sums over such a
 * statement's index are those of the whole store, not of its bad rows
 * only.  *groups: those (database, query id, index), sorted.  Two passes
 * over the slots under the LWLock in shared mode (entries move only under
 * the exclusive lock): the slots flagged with dead visits give the groups,
 * then the slots of the groups' query ids their entries; each entry's index
 * slots read under its spinlock, the copy as copy_entries.  A full store
 * of statements that visit no dead entry is neither copied (its texts were
 * most of what top's index table cost) nor looked at.
 */
static char *
copy_dead_index_entries(long *n, IndexGroupKey **groups, long *ngroups)
{
	SharedStatement *entry;
	long		ng = 0;
	IndexGroupKey *keys;
	EntryCopies kept;

	LWLockAcquire(stmts->lock, LW_SHARED);
	/* Entries are added only under the exclusive lock: the count holds. */
	keys = palloc_extended(mul_size(Max(hash_get_num_entries(statements), 1),
									PGC_INDEX_SLOTS * sizeof(IndexGroupKey)),
						   MCXT_ALLOC_HUGE);
	/* Only the slots flagged with dead visits can have any (see above). */
	for (int i = 0; i < pgc_max_statements; i++)
	{
		if (!(pg_atomic_read_u32(&slot_flags[i]) & SLOT_DEAD_VISITS) ||
			(entry = slot_entry[i]) == NULL)
			continue;
		SpinLockAcquire(&entry->mutex);
		for (int k = 0; k < PGC_INDEX_SLOTS; k++)
		{
			const IndexRecord *r = slot_record(entry, k);

			if (r == NULL || r->counters.dead_visits <= 0)
				continue;
			keys[ng].dbid = entry->key.dbid;
			keys[ng].query_id = entry->key.query_id;
			keys[ng++].indexoid = entry->index_oid[k];
		}
		SpinLockRelease(&entry->mutex);
	}
	if (ng > 1)
	{
		long		unique = 1;

		qsort(keys, ng, sizeof(IndexGroupKey), compare_index_groups);
		for (long i = 1; i < ng; i++)
			if (compare_index_groups(&keys[i], &keys[unique - 1]) != 0)
				keys[unique++] = keys[i];
		ng = unique;
	}

	copies_init(&kept, Min(ng, 64));
	if (ng > 0)
	{
		QueryIdSet	ids;

		ids.ids = palloc(ng * sizeof(int64));
		for (long g = 0; g < ng; g++)
			ids.ids[g] = keys[g].query_id;
		ids.n = ng;
		query_id_set_finish(&ids);
		for (int i = 0; i < pgc_max_statements; i++)
		{
			bool		wanted = false;

			if (!slot_in_set(i, &ids))
				continue;
			entry = slot_entry[i];
			/* A slot's index is set once, under the exclusive lock. */
			for (int k = 0; k < PGC_INDEX_SLOTS && !wanted; k++)
				wanted = slot_record(entry, k) != NULL &&
					in_index_groups(keys, ng, entry->key.dbid, entry->key.query_id,
									entry->index_oid[k]);
			if (wanted)
				copies_add(&kept, entry);
		}
		pfree(ids.ids);
	}
	LWLockRelease(stmts->lock);
	*n = kept.n;
	*groups = keys;
	*ngroups = ng;
	return kept.data;
}

/*
 * The key columns both views start with: user, database, and the query id,
 * which other roles see only with pg_read_all_stats.  Returns whether the
 * caller may show the statement's text.
 */
static bool
put_key_columns(const PgcStatementEntry *e, Datum *values, bool *nulls)
{
	bool		visible = pgc_can_see_details(e->key.userid);

	values[0] = ObjectIdGetDatum(e->key.userid);
	values[1] = ObjectIdGetDatum(e->key.dbid);
	if (visible)
		values[2] = Int64GetDatum(e->key.query_id);
	else
		nulls[2] = true;
	return visible;
}

/* 1.1 added the columns from rows on. */
static const PgcResultColumn statement_columns[] = {
	{"userid", OIDOID, PGC_SQL_V(1, 0)},
	{"dbid", OIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"calls", INT8OID, PGC_SQL_V(1, 0)},
	{"suboverflowed_calls", INT8OID, PGC_SQL_V(1, 0)},
	{"standby_calls", INT8OID, PGC_SQL_V(1, 0)},
	{"overflow_events", INT8OID, PGC_SQL_V(1, 0)},
	{"first_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"last_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
	{"rows", INT8OID, PGC_SQL_V(1, 1)},
	{"shared_blks_hit", INT8OID, PGC_SQL_V(1, 1)},
	{"shared_blks_read", INT8OID, PGC_SQL_V(1, 1)},
	{"max_subxacts", INT4OID, PGC_SQL_V(1, 1)},
	{"near_overflow_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape statement_shape = {
	"pg_contention_statements", statement_columns, lengthof(statement_columns)
};

#define STATEMENT_COLS lengthof(statement_columns)

/*
 * pg_contention_statements(subtrans_only): every entry, or (1.4; before,
 * no argument) only those that ran on suboverflowed snapshots or have
 * pg_subtrans waits in the wait profile, which the view's filter
 * "suboverflowed_calls > 0 OR subtrans_wait_samples > 0" keeps; tuples
 * built after copying.
 */
Datum
pg_contention_statements(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	char	   *copy;
	long		n;
	Size		size = entry_size();
	bool		subtrans_only = PG_NARGS() > 0 && PG_GETARG_BOOL(0);

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &statement_shape, &tupdesc);
	if (subtrans_only)
	{
		int			nwaiters;
		PgcProfileKey *waiters = pgc_sampler_subtrans_keys(&nwaiters);

		copy = copy_subtrans_entries(&n, waiters, nwaiters);
		pfree(waiters);
	}
	else
		copy = copy_entries(&n);

	for (long i = 0; i < n; i++)
	{
		PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);
		Datum		values[STATEMENT_COLS] = {0};
		bool		nulls[STATEMENT_COLS] = {0};
		bool		visible = put_key_columns(e, values, nulls);

		values[3] = Int64GetDatum(e->calls);
		values[4] = Int64GetDatum(e->suboverflowed_calls);
		values[5] = Int64GetDatum(e->standby_calls);
		values[6] = Int64GetDatum(e->overflow_events);
		values[7] = TimestampTzGetDatum(e->first_seen);
		values[8] = TimestampTzGetDatum(e->last_seen);
		values[9] = pgc_masked_text_datum(visible, e->query, e->key.dbid);
		values[10] = Int64GetDatum(e->rows);
		values[11] = Int64GetDatum(e->shared_blks_hit);
		values[12] = Int64GetDatum(e->shared_blks_read);
		values[13] = Int32GetDatum(e->max_subxacts);
		values[14] = Int64GetDatum(e->near_overflow_calls);
		values[15] = CStringGetTextDatum(e->application_name);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

/* 1.1 added bitmap_lossy_pages. */
static const PgcResultColumn index_scan_columns[] = {
	{"userid", OIDOID, PGC_SQL_V(1, 0)},
	{"dbid", OIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"indexrelid", OIDOID, PGC_SQL_V(1, 0)},
	{"scans", INT8OID, PGC_SQL_V(1, 0)},
	{"entries_read", INT8OID, PGC_SQL_V(1, 0)},
	{"live_fetched", INT8OID, PGC_SQL_V(1, 0)},
	{"dead_visits", INT8OID, PGC_SQL_V(1, 0)},
	{"max_dead_visits_per_scan", INT8OID, PGC_SQL_V(1, 0)},
	{"index_only_scans", INT8OID, PGC_SQL_V(1, 0)},
	{"bitmap_scans", INT8OID, PGC_SQL_V(1, 0)},
	{"other_entries_read", INT8OID, PGC_SQL_V(1, 0)},
	{"last_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
	{"indexes_untracked", INT8OID, PGC_SQL_V(1, 0)},
	{"bitmap_lossy_pages", INT8OID, PGC_SQL_V(1, 1)},
	{"worst_literals", TEXTOID, PGC_SQL_V(1, 4)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape index_scan_shape = {
	"pg_contention_index_scans", index_scan_columns, lengthof(index_scan_columns)
};

#define INDEX_SCAN_COLS lengthof(index_scan_columns)

/*
 * pg_contention_index_scans(dead_only): one row per (statement entry,
 * index).  The view sums them per database, index and query id, and names
 * the index.  dead_only (1.4; before, no argument): only the rows of the
 * statements' indexes that visited dead entries, all of their rows.
 */
Datum
pg_contention_index_scans(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	char	   *copy;
	long		n;
	Size		size = entry_size();
	bool		dead_only = PG_NARGS() > 0 && PG_GETARG_BOOL(0);
	IndexGroupKey *groups = NULL;
	long		ngroups = 0;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &index_scan_shape, &tupdesc);
	if (dead_only)
		copy = copy_dead_index_entries(&n, &groups, &ngroups);
	else
		copy = copy_entries(&n);

	for (long i = 0; i < n; i++)
	{
		PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);

		for (int k = 0; k < PGC_INDEX_SLOTS; k++)
		{
			PgcIndexCounters *c = &e->indexes[k];
			Datum		values[INDEX_SCAN_COLS] = {0};
			bool		nulls[INDEX_SCAN_COLS] = {0};

			bool		visible;

			if (c->indexoid == InvalidOid ||
				(dead_only && !in_index_groups(groups, ngroups, e->key.dbid,
											   e->key.query_id, c->indexoid)))
				continue;
			visible = put_key_columns(e, values, nulls);
			values[3] = ObjectIdGetDatum(c->indexoid);
			values[4] = Int64GetDatum(c->scans);
			values[5] = Int64GetDatum(c->entries_read);
			values[6] = Int64GetDatum(c->live_fetched);
			values[7] = Int64GetDatum(c->dead_visits);
			values[8] = Int64GetDatum(c->max_dead_visits);
			values[9] = Int64GetDatum(c->index_only_scans);
			values[10] = Int64GetDatum(c->bitmap_scans);
			values[11] = Int64GetDatum(c->other_entries_read);
			values[12] = TimestampTzGetDatum(e->last_seen);
			values[13] = pgc_masked_text_datum(visible, e->query, e->key.dbid);
			values[14] = Int64GetDatum(e->indexes_untracked);
			values[15] = Int64GetDatum(c->bitmap_lossy_pages);
			/* The statement's worst execution in the recent periods. */
			put_literals(e->current.literals_dead >= e->previous.literals_dead ?
						 e->current.literals : e->previous.literals,
						 visible, e->key.dbid, values, nulls, 16);
			values[17] = CStringGetTextDatum(e->application_name);
			tuplestore_putvalues(tupstore, tupdesc, values, nulls);
		}
	}
	pfree(copy);
	return (Datum) 0;
}

/* New in 1.1. */
static const PgcResultColumn recent_columns[] = {
	{"userid", OIDOID, PGC_SQL_V(1, 1)},
	{"dbid", OIDOID, PGC_SQL_V(1, 1)},
	{"query_id", INT8OID, PGC_SQL_V(1, 1)},
	{"indexrelid", OIDOID, PGC_SQL_V(1, 1)},
	{"period_start", TIMESTAMPTZOID, PGC_SQL_V(1, 1)},
	{"period_end", TIMESTAMPTZOID, PGC_SQL_V(1, 1)},
	{"calls", INT8OID, PGC_SQL_V(1, 1)},
	{"suboverflowed_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"near_overflow_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"overflow_events", INT8OID, PGC_SQL_V(1, 1)},
	{"max_subxacts", INT4OID, PGC_SQL_V(1, 1)},
	{"top_level_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"shared_blks", INT8OID, PGC_SQL_V(1, 1)},
	{"scans", INT8OID, PGC_SQL_V(1, 1)},
	{"entries_read", INT8OID, PGC_SQL_V(1, 1)},
	{"dead_visits", INT8OID, PGC_SQL_V(1, 1)},
	{"query", TEXTOID, PGC_SQL_V(1, 1)},
	{"worst_dead_visits", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_entries_read", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_buffers", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_rows", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"last_dead_visits", INT8OID, PGC_SQL_V(1, 4)},
	{"last_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"bad_scans", INT8OID, PGC_SQL_V(1, 4)},
	{"bad_dead_visits", INT8OID, PGC_SQL_V(1, 4)},
	{"last_bad_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"clean_since", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"worst_literals", TEXTOID, PGC_SQL_V(1, 4)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape recent_shape = {
	"pg_contention_recent", recent_columns, lengthof(recent_columns)
};

#define RECENT_COLS lengthof(recent_columns)

/*
 * What every sum of one index's executions shares: the worst of the worst,
 * the latest last, the bad ones summed.
 */
static void
add_scan_figures(PgcPeriodScan *into, const PgcPeriodScan *from)
{
	if (into->worst_at == 0 || from->worst_dead > into->worst_dead)
	{
		into->worst_dead = from->worst_dead;
		into->worst_entries = from->worst_entries;
		into->worst_blks = from->worst_blks;
		into->worst_rows = from->worst_rows;
		into->worst_at = from->worst_at;
	}
	if (from->last_at >= into->last_at)
	{
		into->last_dead = from->last_dead;
		into->last_at = from->last_at;
	}
	into->bad_scans += from->bad_scans;
	into->bad_dead += from->bad_dead;
}

/*
 * Add one index's executions of a period to a sum of periods; the periods
 * are added in order, the previous one first.
 */
static void
add_period_scan(PgcPeriodScan *into, const PgcPeriodScan *from)
{
	if (from->worst_at == 0)
		return;					/* no execution */
	add_scan_figures(into, from);
	/* from is the later period: a bad execution there starts it over. */
	if (from->last_bad_at != 0 || into->clean_since == 0)
		into->clean_since = from->clean_since;
	into->last_bad_at = Max(into->last_bad_at, from->last_bad_at);
}

/* Add period "from" to the sum "into" (whose start is the earliest). */
static void
add_period(PgcPeriod *into, const PgcPeriod *from)
{
	if (into->start == 0 || from->start < into->start)
		into->start = from->start;
	into->end = Max(into->end, from->end);
	into->calls += from->calls;
	into->suboverflowed_calls += from->suboverflowed_calls;
	into->near_overflow_calls += from->near_overflow_calls;
	into->overflow_events += from->overflow_events;
	into->max_subxacts = Max(into->max_subxacts, from->max_subxacts);
	into->top_level_calls += from->top_level_calls;
	into->shared_blks += from->shared_blks;
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
	{
		into->index_scans[k] += from->index_scans[k];
		into->index_entries[k] += from->index_entries[k];
		into->index_dead[k] += from->index_dead[k];
		add_period_scan(&into->index_exec[k], &from->index_exec[k]);
	}
	if (from->literals[0] != '\0' && from->literals_dead > into->literals_dead)
	{
		into->literals_dead = from->literals_dead;
		memcpy(into->literals, from->literals, PGC_LITERALS_LEN);
	}
}

/* Is this the text of a SAVEPOINT statement (a driver's or ORM's pattern)? */
static bool
is_savepoint_text(const char *query)
{
	while (isspace((unsigned char) *query))
		query++;
	return pg_strncasecmp(query, "savepoint", 9) == 0 &&
		isspace((unsigned char) query[9]);
}

/*
 * pg_contention_recent(window_seconds, notable_only, by_application): what
 * each statement did in the periods that reach into the last window_seconds (the current
 * period of pg_contention.findings_window and the previous one;
 * period_start and period_end say what the figures cover): one row per
 * statement with indexrelid NULL, then one per index it scanned with the
 * scan figures.  The findings read the statement store through this
 * function, once, with notable_only: only statements that ran on a
 * suboverflowed snapshot, came near an overflow, caused one, or are
 * SAVEPOINTs, and only indexes whose scans met dead entries.  A busy
 * server's thousands of other statements then cost a copy, not rows.
 * A statement's entries of several applications are summed into one row
 * (application_name NULL when they are more than one), unless
 * by_application (new in 1.4): then a row per application, as the store
 * keeps them (who pays, pg_contention_victims).
 */
/*
 * The rows of pg_contention_recent, kept for the rest of the client's
 * statement: the findings' rules each read the statement store, and one
 * copy of a full store costs milliseconds (pgstat's stats_fetch_consistency
 * = cache does the same for the statistics).  Keyed by what changes the
 * rows; the memory is a child of TopTransactionContext, so the end of the
 * transaction frees it and its reset callback forgets it.
 */
typedef struct RecentCacheKey
{
	TimestampTz statement_start;	/* the client's statement */
	Oid			userid;			/* the texts' visibility */
	int32		window_seconds;
	bool		notable_only;
	bool		by_application;
	int			natts;
} RecentCacheKey;

typedef struct RecentCache
{
	MemoryContext cxt;
	MemoryContextCallback callback;
	RecentCacheKey key;
	List	   *rows;			/* HeapTuples, in cxt */
} RecentCache;

/*
 * Two: the rules' read (a row per statement) and who pays (a row per
 * application) alternate within one pg_contention_findings(); with
 * notable_only both are built from one copy of the store.
 */
static RecentCache recent_caches[2];

/* Where build_recent_rows puts its rows. */
static MemoryContext recent_cxt = NULL;
static List *recent_rows = NIL;

static void
recent_cache_gone(void *arg)
{
	RecentCache *cache = (RecentCache *) arg;

	cache->cxt = NULL;
	cache->rows = NIL;
}

/*
 * The worst execution's constants, masked like the query text: NULL when
 * none were kept.
 */
static void
put_literals(const char *literals, bool visible, Oid dbid, Datum *values,
			 bool *nulls, int col)
{
	nulls[col] = literals[0] == '\0';
	if (!nulls[col])
		values[col] = pgc_masked_text_datum(visible, literals, dbid);
}

/* One index's executions in the periods: columns col to col + 10. */
static void
put_period_scan(const PgcPeriodScan *ps, Datum *values, bool *nulls, int col)
{
	values[col] = Int64GetDatum(ps->worst_dead);
	nulls[col] = false;
	values[col + 1] = Int64GetDatum(ps->worst_entries);
	nulls[col + 1] = false;
	values[col + 2] = Int64GetDatum(ps->worst_blks);
	nulls[col + 2] = ps->worst_blks < 0;
	values[col + 3] = Int64GetDatum(ps->worst_rows);
	nulls[col + 3] = ps->worst_rows < 0;
	values[col + 4] = TimestampTzGetDatum(ps->worst_at);
	nulls[col + 4] = false;
	values[col + 5] = Int64GetDatum(ps->last_dead);
	nulls[col + 5] = false;
	values[col + 6] = TimestampTzGetDatum(ps->last_at);
	nulls[col + 6] = false;
	values[col + 7] = Int64GetDatum(ps->bad_scans);
	nulls[col + 7] = false;
	values[col + 8] = Int64GetDatum(ps->bad_dead);
	nulls[col + 8] = false;
	values[col + 9] = TimestampTzGetDatum(ps->last_bad_at);
	nulls[col + 9] = ps->last_bad_at == 0;
	values[col + 10] = TimestampTzGetDatum(ps->clean_since);
	nulls[col + 10] = ps->clean_since == 0;
}

/*
 * What a period says about whether its entry can give a row of
 * pg_contention_recent(..., notable_only): 1 when it reaches into the
 * window and its statement ran on a suboverflowed snapshot, near an
 * overflow, overflowed, or met dead index entries there (any_dead); 0
 * when it reaches into the window without any of these; -1 when it does
 * not.  An entry's say is the larger of its two periods'.
 */
static int
period_notable(const SharedPeriod *p, bool any_dead, TimestampTz cutoff)
{
	if (p->start == 0 || p->end < cutoff)
		return -1;
	return (p->suboverflowed_calls > 0 || p->near_overflow_calls > 0 ||
			p->overflow_events > 0 || any_dead) ? 1 : 0;
}

/* The same for an entry's copy (its periods' heads are a SharedPeriod's). */
static int
entry_counters_notable(const PgcStatementEntry *e, TimestampTz cutoff)
{
	int			say = -1;

	for (int j = 0; j < 2; j++)
	{
		const PgcPeriod *p = j == 0 ? &e->previous : &e->current;
		SharedPeriod head;
		bool		any_dead = false;

		memcpy(&head, p, PERIOD_HEAD_SIZE);
		for (int k = 0; k < PGC_INDEX_SLOTS; k++)
			any_dead |= p->index_dead[k] > 0;
		say = Max(say, period_notable(&head, any_dead, cutoff));
	}
	return say;
}

/*
 * The same for an entry in the hash (its index figures in its records);
 * caller holds its spinlock.
 */
static int
shared_counters_notable(const SharedStatement *e, TimestampTz cutoff)
{
	bool		any_dead[2] = {false, false};

	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
	{
		const IndexRecord *r = slot_record(e, k);

		if (r == NULL)
			continue;
		any_dead[0] |= r->previous.dead > 0;
		any_dead[1] |= r->current.dead > 0;
	}
	return Max(period_notable(&e->previous, any_dead[0], cutoff),
			   period_notable(&e->current, any_dead[1], cutoff));
}

/*
 * Can an entry give a row of pg_contention_recent(..., notable_only): one
 * notable by its periods, or a SAVEPOINT run in the window.  Cheap: read
 * before anything is summed.
 */
static bool
entry_is_notable(const PgcStatementEntry *e, TimestampTz cutoff)
{
	int			notable = entry_counters_notable(e, cutoff);

	return notable > 0 || (notable == 0 && is_savepoint_text(e->query));
}

/* Order statement keys by statement (database, user, query id). */
static int
compare_statement_keys(const PgcStatementKey *ka, const PgcStatementKey *kb)
{
	if (ka->dbid != kb->dbid)
		return ka->dbid < kb->dbid ? -1 : 1;
	if (ka->userid != kb->userid)
		return ka->userid < kb->userid ? -1 : 1;
	if (ka->query_id != kb->query_id)
		return ka->query_id < kb->query_id ? -1 : 1;
	return 0;
}

/* Order entries by statement (database, user, query id), to sum them. */
static int
compare_statements(const void *a, const void *b)
{
	return compare_statement_keys(&(*(PgcStatementEntry *const *) a)->key,
								  &(*(PgcStatementEntry *const *) b)->key);
}

/* An entry copy_notable_entries did not copy, with its key. */
typedef struct OtherEntry
{
	PgcStatementKey key;
	SharedStatement *entry;
} OtherEntry;

static int
compare_other_entries(const void *a, const void *b)
{
	return compare_statement_keys(&((const OtherEntry *) a)->key,
								  &((const OtherEntry *) b)->key);
}

/*
 * Copy out of the hash only the entries pg_contention_recent(...,
 * notable_only) can use: those that entry_is_notable, and the other
 * applications' entries of the same statements (their figures are part of
 * the statement's sums).  Only an entry whose slot is flagged can be
 * notable: those are looked at (their periods under the spinlock), not the
 * thousands of a busy server's store; the copy of a full store (5,000
 * entries of a few kB) was most of the findings' cost, and looking at each
 * most of what was left.  When some are notable, their statements' other
 * entries are found by their slots' query ids, remembered by address
 * (valid while the lock is held: entries move only under the exclusive
 * lock).  Under the LWLock in shared mode, as copy_entries.
 */
static char *
copy_notable_entries(long *n, TimestampTz cutoff)
{
	SharedStatement *entry;
	long		nothers = 0;
	EntryCopies kept;
	OtherEntry *others = NULL;
	bool	   *kept_slot = palloc0(pgc_max_statements * sizeof(bool));

	LWLockAcquire(stmts->lock, LW_SHARED);
	copies_init(&kept, 64);

	/* Only a flagged slot's entry can be notable (see the flags). */
	for (int i = 0; i < pgc_max_statements; i++)
	{
		uint32		flags = pg_atomic_read_u32(&slot_flags[i]);
		int			notable;

		if (!(flags & SLOT_NOTABLE) || (entry = slot_entry[i]) == NULL)
			continue;
		SpinLockAcquire(&entry->mutex);
		notable = shared_counters_notable(entry, cutoff);
		SpinLockRelease(&entry->mutex);
		if (notable > 0 || (notable == 0 && (flags & SLOT_SAVEPOINT)))
		{
			copies_add(&kept, entry);
			kept_slot[i] = true;
		}
	}

	/* Their statements' other entries: a walk, only when there are any. */
	if (kept.n > 0)
	{
		long		nnotable = kept.n;
		OtherEntry *notables = palloc(nnotable * sizeof(OtherEntry));

		QueryIdSet	ids;

		ids.ids = palloc(nnotable * sizeof(int64));
		for (long i = 0; i < nnotable; i++)
			ids.ids[i] = ((PgcStatementEntry *) (kept.data + i * kept.size))->key.query_id;
		ids.n = nnotable;
		query_id_set_finish(&ids);
		others = palloc_extended(Max(hash_get_num_entries(statements), 1) * sizeof(OtherEntry),
								 MCXT_ALLOC_HUGE);
		for (int i = 0; i < pgc_max_statements; i++)
		{
			if (kept_slot[i] || !slot_in_set(i, &ids))
				continue;
			others[nothers].key = slot_entry[i]->key;
			others[nothers++].entry = slot_entry[i];
		}
		pfree(ids.ids);
		for (long i = 0; i < nnotable; i++)
			notables[i].key = ((PgcStatementEntry *) (kept.data + i * kept.size))->key;
		qsort(notables, nnotable, sizeof(OtherEntry), compare_other_entries);
		for (long i = 0; i < nothers; i++)
		{
			if (bsearch(&others[i], notables, nnotable, sizeof(OtherEntry),
						compare_other_entries) != NULL)
				copies_add(&kept, others[i].entry);
		}
		pfree(notables);
		pfree(others);
	}
	LWLockRelease(stmts->lock);
	pfree(kept_slot);
	*n = kept.n;
	return kept.data;
}

static bool
same_statement(const PgcStatementEntry *a, const PgcStatementEntry *b)
{
	return a->key.dbid == b->key.dbid && a->key.userid == b->key.userid &&
		a->key.query_id == b->key.query_id;
}

/* One index's window figures, summed over a statement's entries. */
typedef struct RecentIndex
{
	Oid			indexoid;
	int64		scans;
	int64		entries;
	int64		dead;
	PgcPeriodScan exec;			/* the executions, combined by add_app_scan */
} RecentIndex;

/*
 * Combine one application's executions of an index (its periods already
 * added) into a statement's: the worst of the worst, the latest last, the
 * bad ones summed, and clean_since of the one whose bad execution is the
 * latest (the earliest clean start when none was bad).
 */
static void
add_app_scan(PgcPeriodScan *into, const PgcPeriodScan *from)
{
	if (from->worst_at == 0)
		return;					/* no execution */
	add_scan_figures(into, from);
	if (from->last_bad_at > into->last_bad_at)
	{
		into->last_bad_at = from->last_bad_at;
		into->clean_since = from->clean_since;
	}
	else if (from->last_bad_at == 0 && into->last_bad_at == 0 &&
			 from->clean_since != 0 &&
			 (into->clean_since == 0 || from->clean_since < into->clean_since))
		into->clean_since = from->clean_since;
}

/* Build the rows of one copy of the store into recent_rows. */
static void
build_recent_rows(TupleDesc tupdesc, char *copy, long n, TimestampTz cutoff,
				  bool notable_only, bool by_application)
{
	PgcStatementEntry **order;
	Size		size = entry_size();
	MemoryContext oldcontext;
	long		next;

	order = palloc_extended(Max(n, 1) * sizeof(PgcStatementEntry *), MCXT_ALLOC_HUGE);
	if (notable_only)
	{
		/*
		 * Only the entries that can give a row, found by a look at their
		 * periods (most of a busy server's give none: summing them cost
		 * milliseconds), and the other applications' entries of the same
		 * statements (their figures are part of the statement's sums).
		 */
		bool	   *keep = palloc_extended(Max(n, 1), MCXT_ALLOC_HUGE);
		long		nkept = 0;

		for (long i = 0; i < n; i++)
		{
			PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);

			keep[i] = entry_is_notable(e, cutoff);
			if (keep[i])
				order[nkept++] = e;
		}
		if (!by_application && nkept > 0)
		{
			long		nnotable = nkept;

			qsort(order, nnotable, sizeof(PgcStatementEntry *), compare_statements);
			for (long i = 0; i < n; i++)
			{
				PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);

				if (!keep[i] &&
					bsearch(&e, order, nnotable, sizeof(PgcStatementEntry *),
							compare_statements) != NULL)
					order[nkept++] = e;
			}
		}
		pfree(keep);
		n = nkept;
	}
	else
	{
		for (long i = 0; i < n; i++)
			order[i] = (PgcStatementEntry *) (copy + i * size);
	}
	if (!by_application)
		qsort(order, n, sizeof(PgcStatementEntry *), compare_statements);

	for (long i = 0; i < n; i = next)
	{
		PgcStatementEntry *e = order[i];
		PgcPeriod	sum;
		RecentIndex *indexes;
		int			nindexes = 0;
		const char *app = NULL;
		bool		several_apps = false;
		Datum		values[RECENT_COLS] = {0};
		bool		nulls[RECENT_COLS] = {0};
		bool		visible;
		bool		notable;

		/* The statement's entries: one, or one per application. */
		next = i + 1;
		if (!by_application)
			while (next < n && same_statement(order[next], e))
				next++;
		indexes = palloc((next - i) * PGC_INDEX_SLOTS * sizeof(RecentIndex));
		memset(&sum, 0, sizeof(sum));
		for (long g = i; g < next; g++)
		{
			PgcStatementEntry *m = order[g];
			PgcPeriod	part;

			memset(&part, 0, sizeof(part));
			if (m->previous.start != 0 && m->previous.end >= cutoff)
				add_period(&part, &m->previous);
			if (m->current.start != 0 && m->current.end >= cutoff)
				add_period(&part, &m->current);
			if (part.start == 0)
				continue;
			add_period(&sum, &part);	/* its index figures unused: slots differ */
			if (app == NULL)
				app = m->application_name;
			else if (strcmp(app, m->application_name) != 0)
				several_apps = true;
			for (int k = 0; k < PGC_INDEX_SLOTS; k++)
			{
				int			x;

				if (m->indexes[k].indexoid == InvalidOid || part.index_scans[k] == 0)
					continue;
				for (x = 0; x < nindexes; x++)
					if (indexes[x].indexoid == m->indexes[k].indexoid)
						break;
				if (x == nindexes)
				{
					memset(&indexes[x], 0, sizeof(RecentIndex));
					indexes[x].indexoid = m->indexes[k].indexoid;
					nindexes++;
				}
				indexes[x].scans += part.index_scans[k];
				indexes[x].entries += part.index_entries[k];
				indexes[x].dead += part.index_dead[k];
				add_app_scan(&indexes[x].exec, &part.index_exec[k]);
			}
		}
		if (sum.start == 0)
		{
			pfree(indexes);
			continue;
		}

		notable = !notable_only ||
			sum.suboverflowed_calls > 0 || sum.near_overflow_calls > 0 ||
			sum.overflow_events > 0 || is_savepoint_text(e->query);
		if (!notable)
		{
			int			x;

			for (x = 0; x < nindexes; x++)
				if (indexes[x].dead > 0)
					break;
			if (x == nindexes)
			{
				pfree(indexes);
				continue;		/* no row: its text is not even copied */
			}
		}
		visible = put_key_columns(e, values, nulls);
		nulls[3] = true;
		values[4] = TimestampTzGetDatum(sum.start);
		values[5] = TimestampTzGetDatum(sum.end);
		values[6] = Int64GetDatum(sum.calls);
		values[7] = Int64GetDatum(sum.suboverflowed_calls);
		values[8] = Int64GetDatum(sum.near_overflow_calls);
		values[9] = Int64GetDatum(sum.overflow_events);
		values[10] = Int32GetDatum(sum.max_subxacts);
		values[11] = Int64GetDatum(sum.top_level_calls);
		values[12] = Int64GetDatum(sum.shared_blks);
		nulls[13] = nulls[14] = nulls[15] = true;
		values[16] = pgc_masked_text_datum(visible, e->query, e->key.dbid);
		for (int c = 17; c <= 27; c++)
			nulls[c] = true;
		put_literals(sum.literals, visible, e->key.dbid, values, nulls, 28);
		if (several_apps)
			nulls[29] = true;
		else
			values[29] = CStringGetTextDatum(app);
		oldcontext = MemoryContextSwitchTo(recent_cxt);
		if (notable)
			recent_rows = lappend(recent_rows, heap_form_tuple(tupdesc, values, nulls));

		/* The same statement columns, with one index's scan figures. */
		nulls[3] = nulls[13] = nulls[14] = nulls[15] = false;
		for (int x = 0; x < nindexes; x++)
		{
			if (notable_only && indexes[x].dead == 0)
				continue;
			values[3] = ObjectIdGetDatum(indexes[x].indexoid);
			values[13] = Int64GetDatum(indexes[x].scans);
			values[14] = Int64GetDatum(indexes[x].entries);
			values[15] = Int64GetDatum(indexes[x].dead);
			put_period_scan(&indexes[x].exec, values, nulls, 17);
			recent_rows = lappend(recent_rows, heap_form_tuple(tupdesc, values, nulls));
		}
		MemoryContextSwitchTo(oldcontext);
		pfree(DatumGetPointer(values[16]));
		pfree(indexes);
	}
	pfree(order);
}

/* Replace a cache's rows by those of one copy of the store. */
static void
fill_recent_cache(RecentCache *cache, const RecentCacheKey *key, TupleDesc tupdesc,
				  char *copy, long n, TimestampTz cutoff)
{
	if (cache->cxt != NULL)
		MemoryContextDelete(cache->cxt);	/* its callback forgets it */
	cache->cxt = AllocSetContextCreate(TopTransactionContext,
									   "pg_contention recent rows",
									   ALLOCSET_DEFAULT_SIZES);
	memset(&cache->key, 0, sizeof(cache->key));	/* until rows are whole */
	cache->callback.func = recent_cache_gone;
	cache->callback.arg = cache;
	MemoryContextRegisterResetCallback(cache->cxt, &cache->callback);
	recent_cxt = cache->cxt;
	recent_rows = NIL;
	build_recent_rows(tupdesc, copy, n, cutoff, key->notable_only, key->by_application);
	cache->rows = recent_rows;
	recent_cxt = NULL;
	recent_rows = NIL;
	cache->key = *key;			/* only once the rows are whole */
}

Datum
pg_contention_recent(PG_FUNCTION_ARGS)
{
	int32		window_seconds = PG_GETARG_INT32(0);
	bool		notable_only = PG_GETARG_BOOL(1);
	/* A 1.1 to 1.3 declaration has no third argument. */
	bool		by_application = PG_NARGS() > 2 && PG_GETARG_BOOL(2);
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	RecentCacheKey key;
	RecentCache *cache;
	ListCell   *lc;

	pgc_require_loaded();
	if (window_seconds <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window_seconds must be at least 1, not %d", window_seconds),
				 errhint("Pass the window's length in seconds.")));
	tupstore = pgc_materialize(fcinfo, &recent_shape, &tupdesc);

	memset(&key, 0, sizeof(key));
	key.statement_start = GetCurrentStatementStartTimestamp();
	key.userid = GetUserId();
	key.window_seconds = window_seconds;
	key.notable_only = notable_only;
	key.by_application = by_application;
	key.natts = tupdesc->natts;
	cache = &recent_caches[by_application ? 1 : 0];
	if (cache->cxt == NULL || memcmp(&key, &cache->key, sizeof(key)) != 0)
	{
		RecentCache *other = &recent_caches[by_application ? 0 : 1];
		RecentCacheKey other_key = key;
		char	   *copy;
		long		n;
		TimestampTz cutoff;

		cutoff = GetCurrentTimestamp() - (int64) window_seconds * USECS_PER_SEC;
		copy = notable_only ? copy_notable_entries(&n, cutoff) : copy_entries(&n);
		fill_recent_cache(cache, &key, tupdesc, copy, n, cutoff);

		/*
		 * The findings read both forms (the rules a row per statement, who
		 * pays a row per application): with notable_only, whose rows are
		 * few, build the other from the same copy, which is what costs.
		 */
		other_key.by_application = !by_application;
		if (notable_only &&
			(other->cxt == NULL || memcmp(&other_key, &other->key, sizeof(key)) != 0))
			fill_recent_cache(other, &other_key, tupdesc, copy, n, cutoff);
		pfree(copy);
	}
	foreach(lc, cache->rows)
		tuplestore_puttuple(tupstore, (HeapTuple) lfirst(lc));
	return (Datum) 0;
}

/* ---- the file (persist.c) ---- */

/*
 * A saved statement: its key, its counters (everything from usage to the
 * text, index counters and periods included), then its text.
 */
#define COUNTERS_OFFSET		offsetof(PgcStatementEntry, usage)
#define COUNTERS_SIZE		(offsetof(PgcStatementEntry, query) - COUNTERS_OFFSET)

uint32
pgc_statements_record_size(void)
{
	return (uint32) (sizeof(PgcStatementKey) + COUNTERS_SIZE);
}

/*
 * The section: the eviction count, then every entry, a batch at a time.
 * The hash cannot be walked across lock releases, so one pass under the
 * lock in shared mode notes the keys (32 bytes an entry, memory only);
 * then each batch looks its keys up and copies the entries under the
 * lock, as copy_entries does, and is written after releasing it.
 * An entry evicted or reset between batches is not found and not saved;
 * entries created since the first pass wait for the next save.
 */
void
pgc_statements_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	Size		size = entry_size();
	int			batch_max = Max(1, (int) (PGC_SAVE_BATCH_BYTES / size));
	PgcStatementKey *keys;
	char	   *batch;
	long		nkeys = 0;
	long		next = 0;
	int64		evictions;
	HASH_SEQ_STATUS status;
	SharedStatement *entry;

	*count = 0;
	/* Entries are created only under the exclusive lock: at most this many. */
	keys = palloc_extended(mul_size(Max(pgc_max_statements, 1), sizeof(PgcStatementKey)),
						   MCXT_ALLOC_NO_OOM | MCXT_ALLOC_HUGE);
	batch = palloc_extended(mul_size(batch_max, size), MCXT_ALLOC_NO_OOM);
	if (keys == NULL || batch == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		return;
	}

	if (take_locks)
		LWLockAcquire(stmts->lock, LW_SHARED);
	evictions = stmts->evictions;
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (nkeys < pgc_max_statements)
			keys[nkeys++] = entry->key;
	if (take_locks)
		LWLockRelease(stmts->lock);
	pgc_write_bytes(writer, &evictions, sizeof(evictions));

	while (next < nkeys && !pgc_writer_failed(writer))
	{
		int			n = 0;

		if (take_locks)
			LWLockAcquire(stmts->lock, LW_SHARED);
		for (; next < nkeys && n < batch_max; next++)
		{
			PgcStatementEntry *dest = (PgcStatementEntry *) (batch + n * size);

			entry = hash_search(statements, &keys[next], HASH_FIND, NULL);
			if (entry == NULL)
				continue;
			copy_entry(dest, entry, take_locks);
			n++;
		}
		if (take_locks)
			LWLockRelease(stmts->lock);

		for (int i = 0; i < n; i++)
		{
			PgcStatementEntry *e = (PgcStatementEntry *) (batch + i * size);

			pgc_write_bytes(writer, &e->key, sizeof(PgcStatementKey));
			pgc_write_bytes(writer, (const char *) e + COUNTERS_OFFSET, COUNTERS_SIZE);
			pgc_write_text(writer, e->query);
		}
		*count += n;
	}
	pfree(batch);
	pfree(keys);
}

typedef struct SavedStatement
{
	double		usage;
	Size		pos;			/* where its record starts in the section */
} SavedStatement;

/* The heap's order (pgc_keep_largest): the least used at the root. */
static bool
saved_less(const void *a, const void *b)
{
	return ((const SavedStatement *) a)->usage < ((const SavedStatement *) b)->usage;
}

static int
compare_saved_pos(const void *a, const void *b)
{
	Size		pa = ((const SavedStatement *) a)->pos;
	Size		pb = ((const SavedStatement *) b)->pos;

	return (pa > pb) - (pa < pb);
}

/* A usage that can be compared and decayed: finite, in [0, counter max]. */
static double
fix_usage(PgcReader *reader, double usage)
{
	if (usage >= 0.0 && usage <= (double) PGC_COUNTER_MAX)
		return usage;			/* false for NaN */
	reader->fixed++;
	return (usage > 0.0) ? (double) PGC_COUNTER_MAX : 0.0;
}

/* A period whose times do not hold together is emptied. */
static void
fix_period(PgcReader *reader, PgcPeriod *p)
{
	bool		ok = true;

	ok &= pgc_fix_time(reader, &p->start);
	ok &= pgc_fix_time(reader, &p->end);
	if (!ok || (p->start == 0) != (p->end == 0) || p->end < p->start)
	{
		if (ok)
			reader->fixed++;
		memset(p, 0, sizeof(PgcPeriod));
		return;
	}
	pgc_fix_counter(reader, &p->calls);
	pgc_fix_counter(reader, &p->suboverflowed_calls);
	pgc_fix_counter(reader, &p->near_overflow_calls);
	pgc_fix_counter(reader, &p->overflow_events);
	pgc_fix_int32(reader, &p->max_subxacts, 0, PG_INT32_MAX);
	pgc_fix_counter(reader, &p->top_level_calls);
	pgc_fix_counter(reader, &p->shared_blks);
	for (int i = 0; i < PGC_INDEX_SLOTS; i++)
	{
		PgcPeriodScan *x = &p->index_exec[i];

		pgc_fix_counter(reader, &p->index_scans[i]);
		pgc_fix_counter(reader, &p->index_entries[i]);
		pgc_fix_counter(reader, &p->index_dead[i]);
		pgc_fix_counter(reader, &x->worst_dead);
		pgc_fix_counter(reader, &x->worst_entries);
		/* -1: a nested execution, whose buffers and rows are not measured */
		if (x->worst_blks != -1)
			pgc_fix_counter(reader, &x->worst_blks);
		if (x->worst_rows != -1)
			pgc_fix_counter(reader, &x->worst_rows);
		pgc_fix_time(reader, &x->worst_at);
		pgc_fix_counter(reader, &x->last_dead);
		pgc_fix_time(reader, &x->last_at);
		pgc_fix_counter(reader, &x->bad_scans);
		pgc_fix_counter(reader, &x->bad_dead);
		pgc_fix_time(reader, &x->last_bad_at);
		pgc_fix_time(reader, &x->clean_since);
	}
	pgc_fix_counter(reader, &p->literals_dead);
	pgc_fix_string(p->literals, PGC_LITERALS_LEN);
}

/*
 * Check a loaded entry's counters against what the store can mean: every
 * counter in [0, PGC_COUNTER_MAX], times 0 or plausible, strings ended.
 * False when the entry cannot be kept (no time it was seen).
 */
static bool
fix_entry(PgcReader *reader, PgcStatementEntry *e)
{
	e->usage = fix_usage(reader, e->usage);
	pgc_fix_counter(reader, &e->calls);
	pgc_fix_counter(reader, &e->suboverflowed_calls);
	pgc_fix_counter(reader, &e->standby_calls);
	pgc_fix_counter(reader, &e->overflow_events);
	pgc_fix_counter(reader, &e->rows);
	pgc_fix_counter(reader, &e->shared_blks_hit);
	pgc_fix_counter(reader, &e->shared_blks_read);
	pgc_fix_int32(reader, &e->max_subxacts, 0, PG_INT32_MAX);
	pgc_fix_counter(reader, &e->near_overflow_calls);
	pgc_fix_counter(reader, &e->indexes_untracked);
	for (int i = 0; i < PGC_INDEX_SLOTS; i++)
	{
		PgcIndexCounters *c = &e->indexes[i];

		pgc_fix_counter(reader, &c->scans);
		pgc_fix_counter(reader, &c->entries_read);
		pgc_fix_counter(reader, &c->live_fetched);
		pgc_fix_counter(reader, &c->dead_visits);
		pgc_fix_counter(reader, &c->max_dead_visits);
		pgc_fix_counter(reader, &c->index_only_scans);
		pgc_fix_counter(reader, &c->bitmap_scans);
		pgc_fix_counter(reader, &c->bitmap_lossy_pages);
		pgc_fix_counter(reader, &c->other_entries_read);
	}
	fix_period(reader, &e->current);
	fix_period(reader, &e->previous);
	pgc_fix_string(e->application_name, NAMEDATALEN);
	if (!pgc_fix_time(reader, &e->first_seen) || !pgc_fix_time(reader, &e->last_seen) ||
		e->first_seen == 0 || e->last_seen < e->first_seen)
	{
		if (e->first_seen == 0 || e->last_seen < e->first_seen)
			reader->fixed++;
		return false;
	}
	return true;
}

/* A copy's period into a shared one: copy_period, the other way. */
static void
load_period(SharedPeriod *dest, const PgcPeriod *from)
{
	memcpy(dest, from, PERIOD_HEAD_SIZE);
	dest->literals_dead = from->literals_dead;
	memcpy(dest->literals, from->literals, PGC_LITERALS_LEN);
}

/* Slot k of a copy's period into an index record's: copy_index_period, the other way. */
static void
load_index_period(IndexPeriod *dest, const PgcPeriod *from, int k)
{
	dest->scans = from->index_scans[k];
	dest->entries = from->index_entries[k];
	dest->dead = from->index_dead[k];
	dest->exec = from->index_exec[k];
}

/*
 * A loaded statement (checked by fix_entry) into its new entry in the
 * hash, whose key, spinlock (initialised at creation: kept) and slot are
 * set; each index takes a record from the pool while there are any (a
 * store saved by a version that kept PGC_INDEX_SLOTS per statement may
 * have more indexes than the pool: the statements first in the file keep
 * theirs, and the rest go untracked).  Postmaster only: no lock.
 */
static void
load_entry(SharedStatement *entry, const PgcStatementEntry *e)
{
	Size		from = offsetof(SharedStatement, usage);

	memset((char *) entry + from, 0, offsetof(SharedStatement, query) - from);
	memcpy((char *) entry + from, (const char *) e + from, ENTRY_HEAD_SIZE - from);
	load_period(&entry->current, &e->current);
	load_period(&entry->previous, &e->previous);
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
	{
		int32		r;

		if (e->indexes[k].indexoid == InvalidOid)
			continue;
		r = take_index_record();
		entry->index_oid[k] = e->indexes[k].indexoid;
		entry->index_record[k] = r;
		if (r == NO_RECORD)
			continue;
		index_records[r].counters = e->indexes[k];
		load_index_period(&index_records[r].current, &e->current, k);
		load_index_period(&index_records[r].previous, &e->previous, k);
	}
	memcpy(entry->application_name, e->application_name, NAMEDATALEN);
	strlcpy(entry->query, e->query, pgc_max_query_length);
}

/*
 * Enter the saved statements into the empty hash: the most used ones, as
 * many as pg_contention.max_statements allows (a first pass keeps the
 * position and usage of the most used in a heap of that size, the only
 * memory the load takes; a second enters them, in the file's order).
 * Every entry is checked (fix_entry); one that cannot be kept is skipped.
 * Postmaster only, before any backend exists: no lock.
 */
void
pgc_statements_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	SavedStatement *heap;
	uint64		n = 0;
	uint64		read = 0;
	uint64		most = (uint64) pgc_max_statements;
	int64		evictions;
	double		usage;
	PgcStatementEntry *loaded;

	*kept = 0;
	if (!pgc_read_bytes(reader, &evictions, sizeof(evictions)))
		return;
	pgc_fix_counter(reader, &evictions);
	heap = palloc_extended(Max(Min(count, most), 1) * sizeof(SavedStatement),
						   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (heap == NULL)
	{
		reader->failed = true;
		return;
	}
	/* First pass: where each record is, and its usage. */
	while (read < count && !reader->failed)
	{
		SavedStatement this;
		uint32		textlen;

		this.pos = reader->pos;
		if (!pgc_reader_seek(reader, reader->pos + sizeof(PgcStatementKey)) ||
			!pgc_read_bytes(reader, &usage, sizeof(double)) ||
			!pgc_reader_seek(reader, reader->pos + COUNTERS_SIZE - sizeof(double)) ||
			!pgc_read_bytes(reader, &textlen, sizeof(textlen)) ||
			!pgc_reader_seek(reader, reader->pos + Min(textlen, reader->len - reader->pos + 1)))
			break;
		read++;
		this.usage = fix_usage(reader, usage);
		n = pgc_keep_largest(heap, n, Min(count, most), sizeof(SavedStatement),
							 &this, saved_less);
	}
	/* Second pass, in the file's order: one read through the buffer. */
	qsort(heap, n, sizeof(SavedStatement), compare_saved_pos);
	loaded = palloc0(entry_size());
	for (uint64 i = 0; i < n; i++)
	{
		PgcStatementKey key;
		SharedStatement *entry;
		bool		found;

		reader->failed = false;
		if (!pgc_reader_seek(reader, heap[i].pos) ||
			!pgc_read_bytes(reader, &key, sizeof(key)))
			break;
		entry = hash_search(statements, &key, HASH_ENTER_NULL, &found);
		if (entry == NULL || found)
		{
			if (entry != NULL)
				reader->fixed++;	/* a duplicate key */
			continue;
		}
		loaded->key = key;
		if (!pgc_read_bytes(reader, (char *) loaded + COUNTERS_OFFSET, COUNTERS_SIZE) ||
			!pgc_read_text(reader, loaded->query, pgc_max_query_length) ||
			!fix_entry(reader, loaded))
		{
			hash_search(statements, &key, HASH_REMOVE, NULL);
			if (reader->failed)
				break;
			continue;
		}
		if (!take_slot(entry))
		{
			hash_search(statements, &key, HASH_REMOVE, NULL);
			break;
		}
		load_entry(entry, loaded);
		if (entry->suboverflowed_calls > 0)
			flag_slot(entry, SLOT_SUBOVERFLOWED);
		if (entry->near_overflow_calls > 0)
			flag_slot(entry, SLOT_NEAR_OVERFLOW);
		if (entry->overflow_events > 0)
			flag_slot(entry, SLOT_OVERFLOW_EVENTS);
		if (is_savepoint_text(entry->query))
			flag_slot(entry, SLOT_SAVEPOINT);
		for (int k = 0; k < PGC_INDEX_SLOTS; k++)
			if (slot_record(entry, k) != NULL && loaded->indexes[k].dead_visits > 0)
				flag_slot(entry, SLOT_DEAD_VISITS);
		(*kept)++;
	}
	/* The first pass ended early: say so (the second reset the flag). */
	reader->failed = (read < count);
	stmts->evictions = evictions + (int64) (read - *kept);
	pfree(loaded);
	pfree(heap);
}
