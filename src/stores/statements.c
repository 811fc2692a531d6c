/*-------------------------------------------------------------------------
 *
 * statements.c
 *		The statement store: its shared memory, slots, index records,
 *		eviction and reset.  What it keeps per statement: how often each
 *		statement ran, how often on a suboverflowed snapshot, how often on a hot standby, how many
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
 * The store's layout is in statements_store.h; the counting, in every
 * backend's executor, is capture/statement_count.c; the readers' copies
 * statements_copy.c, its section of the stores' file statements_file.c,
 * and its SQL readers readers/statements_views.c and readers/recent.c.
 *
 *-------------------------------------------------------------------------
 */
#include "statements_store.h"
#include "stores.h"

#include <ctype.h>

#include "common/hashfn.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

int *pgc_free_slots;
SharedStatement **pgc_slot_entry;
int64 *pgc_slot_query_id;	/* its entry's, to find a statement's */
pg_atomic_uint32 *pgc_slot_flags;

/* The index records' pool, and the stack of the free ones (under the lock). */
IndexRecord *pgc_index_records;
int32 *pgc_free_records;

StatementsShared *pgc_stmts = NULL;
HTAB *pgc_statements = NULL;

/* The size of an entry's copy (what readers and the file see). */
Size
entry_size(void)
{
	return MAXALIGN(offsetof(PgcStatementEntry, query) + pgc_max_query_length);
}

/* The size of an entry in the hash. */
Size
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
		pgc_free_slots = (int *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(int))));
	if (base)
		pgc_slot_entry = (SharedStatement **) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(SharedStatement *))));
	if (base)
		pgc_slot_query_id = (int64 *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(int64))));
	if (base)
		pgc_slot_flags = (pg_atomic_uint32 *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(pgc_max_statements, sizeof(pg_atomic_uint32))));
	if (base)
		pgc_free_records = (int32 *) (base + offset);
	offset = add_size(offset, MAXALIGN(mul_size(index_records_count(), sizeof(int32))));
	if (base)
		pgc_index_records = (IndexRecord *) (base + offset);
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
bool
pgc_statement_take_slot(SharedStatement *entry)
{
	AssertStoreChangeAllowed();
	Assert(pgc_stmts->nfree >= 0 && pgc_stmts->nfree <= pgc_max_statements);
	if (pgc_stmts->nfree == 0)
		return false;
	entry->slot = pgc_free_slots[--pgc_stmts->nfree];
	Assert(entry->slot >= 0 && entry->slot < pgc_max_statements);
	Assert(pgc_slot_entry[entry->slot] == NULL);
	pgc_slot_entry[entry->slot] = entry;
	pgc_slot_query_id[entry->slot] = entry->key.query_id;
	pg_atomic_write_u32(&pgc_slot_flags[entry->slot], 0);
	return true;
}


/*
 * Give a removed entry's slot and index records back (caller holds the
 * lock exclusively and has taken and released the entry's spinlock since
 * the generation moved: no one can be counting into them).
 */
static void
release_slot(SharedStatement *entry)
{
	AssertStoreChangeAllowed();
	Assert(entry->slot >= 0 && entry->slot < pgc_max_statements);
	Assert(pgc_slot_entry[entry->slot] == entry);
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
		if (slot_record(entry, k) != NULL)
			pgc_free_records[pgc_stmts->nfree_records++] = entry->index_record[k];
	pg_atomic_write_u32(&pgc_slot_flags[entry->slot], 0);
	pgc_slot_entry[entry->slot] = NULL;
	pgc_free_slots[pgc_stmts->nfree++] = entry->slot;
	Assert(pgc_stmts->nfree <= pgc_max_statements);
	Assert(pgc_stmts->nfree_records <= index_records_count());
}

/*
 * A free index record, zeroed, or NO_RECORD if none is left; the caller
 * holds the lock exclusively and the spinlock of the entry it is for (or
 * is the postmaster, loading the store).
 */
int32
take_index_record(void)
{
	int32		r;

	AssertStoreChangeAllowed();
	if (pgc_stmts->nfree_records == 0)
		return NO_RECORD;
	r = pgc_free_records[--pgc_stmts->nfree_records];
	Assert(r >= 0 && r < index_records_count());
	memset(&pgc_index_records[r], 0, sizeof(IndexRecord));
	return r;
}

int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* Sort and deduplicate the ids gathered in set->ids[0 .. set->n). */
void
query_id_set_finish(QueryIdSet *set)
{
	long		unique = 0;

	qsort(set->ids, set->n, sizeof(int64), compare_int64);
	for (long i = 0; i < set->n; i++)
		if (unique == 0 || set->ids[i] != set->ids[unique - 1])
			set->ids[unique++] = set->ids[i];
	set->n = unique;
}


/* The first time one of a slot's counters becomes non-zero; under its spinlock. */
pg_noinline void
flag_slot(SharedStatement *entry, uint32 flag)
{
	Assert(entry->slot >= 0 && entry->slot < pgc_max_statements);
	Assert(pgc_slot_entry[entry->slot] == entry);
	pg_atomic_fetch_or_u32(&pgc_slot_flags[entry->slot], flag);
}

/* Called under AddinShmemInitLock. */
void
pgc_statements_shmem_init(LWLock *lock)
{
	HASHCTL		info;
	bool		found;
	bool		first;

	pgc_stmts = ShmemInitStruct("pg_contention statements header",
							slot_arrays_at(NULL), &found);
	first = !found;
	(void) slot_arrays_at((char *) pgc_stmts);
	if (first)
	{
		pgc_stmts->lock = lock;
		pgc_stmts->evictions = 0;
		pg_atomic_init_u64(&pgc_stmts->generation, 0);
		/* Taken from the end: slot 0 first. */
		pgc_stmts->nfree = pgc_max_statements;
		for (int i = 0; i < pgc_max_statements; i++)
		{
			pgc_free_slots[i] = pgc_max_statements - 1 - i;
			pgc_slot_entry[i] = NULL;
			pg_atomic_init_u32(&pgc_slot_flags[i], 0);
		}
		pgc_stmts->nfree_records = index_records_count();
		for (int i = 0; i < index_records_count(); i++)
			pgc_free_records[i] = index_records_count() - 1 - i;
	}

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(PgcStatementKey);
	info.entrysize = shared_entry_size();
	pgc_statements = ShmemInitHash("pg_contention statements",
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
			entry = hash_search(pgc_statements, &key, HASH_ENTER_NULL, NULL);
			if (entry == NULL)
				break;
			SpinLockInit(&entry->mutex);
		}
		for (int i = 0; i < pgc_max_statements; i++)
		{
			key.query_id = i;
			hash_search(pgc_statements, &key, HASH_REMOVE, NULL);
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
void
evict_least_used(SharedStatement *keep)
{
	HASH_SEQ_STATUS status;
	UsageOf    *all;
	SharedStatement *entry;
	long		n = hash_get_num_entries(pgc_statements);
	long		i = 0;
	long		victims;

	AssertStoreChangeAllowed();
	all = palloc(Max(n, 1) * sizeof(UsageOf));
	hash_seq_init(&status, pgc_statements);
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
	pg_atomic_fetch_add_u64(&pgc_stmts->generation, 1);
	for (long v = 0; v < victims; v++)
	{
		/* Wait out any backend updating it without the LWLock. */
		SpinLockAcquire(&all[v].entry->mutex);
		SpinLockRelease(&all[v].entry->mutex);
		release_slot(all[v].entry);
		hash_search(pgc_statements, &all[v].entry->key, HASH_REMOVE, NULL);
	}
	pgc_stmts->evictions += victims;
	pfree(all);
}

/* For pg_contention_info: entries in the hash, and evictions. */
void
pgc_statements_info(int64 *count, int64 *evictions)
{
	LWLockAcquire(pgc_stmts->lock, LW_SHARED);
	*count = hash_get_num_entries(pgc_statements);
	*evictions = pgc_stmts->evictions;
	LWLockRelease(pgc_stmts->lock);
}

/* pg_contention_reset(): forget every statement and the eviction count. */
void
pgc_statements_reset(void)
{
	HASH_SEQ_STATUS status;
	SharedStatement *entry;

	LWLockAcquire(pgc_stmts->lock, LW_EXCLUSIVE);
	pg_atomic_fetch_add_u64(&pgc_stmts->generation, 1);
	hash_seq_init(&status, pgc_statements);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		/* Wait out any backend updating it without the LWLock. */
		SpinLockAcquire(&entry->mutex);
		SpinLockRelease(&entry->mutex);
		release_slot(entry);
		hash_search(pgc_statements, &entry->key, HASH_REMOVE, NULL);
	}
	pgc_stmts->evictions = 0;
	LWLockRelease(pgc_stmts->lock);
}

/* Is this the text of a SAVEPOINT statement (a driver's or ORM's pattern)? */
bool
is_savepoint_text(const char *query)
{
	while (isspace((unsigned char) *query))
		query++;
	return pg_strncasecmp(query, "savepoint", 9) == 0 &&
		isspace((unsigned char) query[9]);
}
