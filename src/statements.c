/*-------------------------------------------------------------------------
 *
 * statements.c
 *		Per-statement counters: how often each statement ran, how often on a
 *		suboverflowed snapshot, how often on a hot standby, and how many
 *		subtransaction-overflow events it caused.
 *
 * Owns the statement hash (ShmemInitHash "pg_contention statements", at
 * most pgc_max_statements entries, keyed by user, database and query id)
 * and pgc_shared->statement_evictions.
 *
 * Locking, as in pg_stat_statements: statements_lock in shared mode to find
 * an entry and update its counters under the entry's spinlock; exclusive
 * only to create entries, evict, or reset.  When the hash is full, the
 * least used 5% (at least 10) are evicted and counted; nothing errors.
 *
 * Each backend remembers where the entries of its recent statements are
 * (a small direct-mapped cache), so the common path skips the hash lookup.
 * An entry only moves or disappears under the exclusive lock, which bumps
 * pgc_shared->statements_generation; a cached pointer is used only while
 * the generation it was found in is current, read under the shared lock.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/xact.h"
#include "funcapi.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"

PG_FUNCTION_INFO_V1(pg_contention_statements);

typedef struct PgcStatementEntry
{
	PgcStatementKey key;
	slock_t		mutex;			/* protects the fields below */
	double		usage;			/* calls, decayed at each eviction */
	int64		calls;
	int64		suboverflowed_calls;
	int64		standby_calls;
	int64		overflow_events;
	TimestampTz first_seen;
	TimestampTz last_seen;
	char		query[FLEXIBLE_ARRAY_MEMBER];	/* first text seen */
} PgcStatementEntry;

#define USAGE_DECAY_FACTOR	0.99
#define EVICT_PERCENT		5
#define EVICT_MIN			10

static HTAB *statements = NULL;

/* This backend's cache of entry locations, see the header comment. */
#define LOCAL_CACHE_SIZE	64

typedef struct LocalCacheSlot
{
	PgcStatementKey key;
	PgcStatementEntry *entry;	/* NULL: empty */
	uint64		generation;
} LocalCacheSlot;

static LocalCacheSlot local_cache[LOCAL_CACHE_SIZE];

static Size
entry_size(void)
{
	return MAXALIGN(offsetof(PgcStatementEntry, query) + pgc_max_query_length);
}

Size
pgc_statements_shmem_size(void)
{
	return hash_estimate_size(pgc_max_statements, entry_size());
}

/* Called under AddinShmemInitLock. */
void
pgc_statements_shmem_init(void)
{
	HASHCTL		info;

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(PgcStatementKey);
	info.entrysize = entry_size();
	statements = ShmemInitHash("pg_contention statements",
							   pgc_max_statements, pgc_max_statements,
							   &info, HASH_ELEM | HASH_BLOBS);
}

static int
compare_usage(const void *a, const void *b)
{
	double		ua = (*(PgcStatementEntry *const *) a)->usage;
	double		ub = (*(PgcStatementEntry *const *) b)->usage;

	return (ua > ub) - (ua < ub);
}

/*
 * Make room: decay every entry's usage, then remove the least used.
 * Caller holds statements_lock exclusively.
 */
static void
evict_least_used(void)
{
	HASH_SEQ_STATUS status;
	PgcStatementEntry **all;
	PgcStatementEntry *entry;
	long		n = hash_get_num_entries(statements);
	long		i = 0;
	long		victims;

	all = palloc(n * sizeof(PgcStatementEntry *));
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		entry->usage *= USAGE_DECAY_FACTOR;
		all[i++] = entry;
	}
	qsort(all, i, sizeof(PgcStatementEntry *), compare_usage);
	victims = Min(i, Max(EVICT_MIN, i * EVICT_PERCENT / 100));
	pgc_shared->statements_generation++;
	for (long v = 0; v < victims; v++)
		hash_search(statements, &all[v]->key, HASH_REMOVE, NULL);
	pgc_shared->statement_evictions += victims;
	pfree(all);
}

/*
 * Find or create the entry for "key".  Caller holds statements_lock
 * exclusively.  Returns NULL only if the hash cannot take an entry even
 * after eviction (it then counts nothing rather than fail the statement).
 */
static PgcStatementEntry *
enter_statement(const PgcStatementKey *key, const char *source_text,
				int stmt_location, int stmt_len, TimestampTz now)
{
	PgcStatementEntry *entry;
	bool		found;

	entry = hash_search(statements, key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	if (hash_get_num_entries(statements) >= pgc_max_statements)
		evict_least_used();
	entry = hash_search(statements, key, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		return NULL;
	if (!found)
	{
		memset((char *) entry + sizeof(PgcStatementKey), 0,
			   entry_size() - sizeof(PgcStatementKey));
		SpinLockInit(&entry->mutex);
		entry->first_seen = now;
		pgc_copy_statement_text(entry->query, pgc_max_query_length,
								source_text, stmt_location, stmt_len);
	}
	return entry;
}

/*
 * Count one statement for the current user and database.  counted_call:
 * an execution (ExecutorEnd) with its snapshot's flags; overflow_event: the
 * statement caused a subtransaction-cache overflow.
 */
void
pgc_statement_count(int64 query_id, const char *source_text,
					int stmt_location, int stmt_len,
					bool counted_call, bool suboverflowed,
					bool in_recovery, bool overflow_event)
{
	PgcStatementKey key;
	PgcStatementEntry *entry;
	LocalCacheSlot *slot;
	TimestampTz now = GetCurrentStatementStartTimestamp();

	if (pgc_shared == NULL)
		return;

	key.userid = GetUserId();
	key.dbid = MyDatabaseId;
	key.query_id = query_id;

	slot = &local_cache[(uint32) (query_id ^ (query_id >> 32)) % LOCAL_CACHE_SIZE];

	LWLockAcquire(pgc_shared->statements_lock, LW_SHARED);
	if (slot->entry != NULL &&
		slot->generation == pgc_shared->statements_generation &&
		memcmp(&slot->key, &key, sizeof(key)) == 0)
		entry = slot->entry;
	else
		entry = hash_search(statements, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		LWLockRelease(pgc_shared->statements_lock);
		LWLockAcquire(pgc_shared->statements_lock, LW_EXCLUSIVE);
		entry = enter_statement(&key, source_text, stmt_location, stmt_len,
								now);
		if (entry == NULL)
		{
			LWLockRelease(pgc_shared->statements_lock);
			return;
		}
	}
	slot->key = key;
	slot->entry = entry;
	slot->generation = pgc_shared->statements_generation;

	SpinLockAcquire(&entry->mutex);
	if (counted_call)
	{
		entry->calls++;
		entry->usage += 1.0;
		if (suboverflowed)
			entry->suboverflowed_calls++;
		if (in_recovery)
			entry->standby_calls++;
	}
	if (overflow_event)
		entry->overflow_events++;
	entry->last_seen = now;
	SpinLockRelease(&entry->mutex);

	LWLockRelease(pgc_shared->statements_lock);
}

/* Entries in the hash; caller holds statements_lock. */
int64
pgc_statements_count(void)
{
	return hash_get_num_entries(statements);
}

/* Called by pg_contention_reset() with statements_lock held exclusively. */
void
pgc_statements_reset(void)
{
	HASH_SEQ_STATUS status;
	PgcStatementEntry *entry;

	pgc_shared->statements_generation++;
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
		hash_search(statements, &entry->key, HASH_REMOVE, NULL);
	pgc_shared->statement_evictions = 0;
}

#define STATEMENT_COLS 10

/*
 * pg_contention_statements(): every entry.  Entries are copied out under
 * statements_lock in shared mode (counters under their spinlock); tuples
 * are built after it is released.
 */
Datum
pg_contention_statements(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	HASH_SEQ_STATUS status;
	PgcStatementEntry *entry;
	char	   *copy;
	long		n = 0;
	Size		size = entry_size();

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);

	/* Entries are only added under the exclusive lock: the count holds. */
	LWLockAcquire(pgc_shared->statements_lock, LW_SHARED);
	copy = palloc_extended(mul_size(Max(hash_get_num_entries(statements), 1), size),
						   MCXT_ALLOC_HUGE);
	hash_seq_init(&status, statements);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		PgcStatementEntry *dest = (PgcStatementEntry *) (copy + n * size);

		SpinLockAcquire(&entry->mutex);
		memcpy(dest, entry, size);
		SpinLockRelease(&entry->mutex);
		n++;
	}
	LWLockRelease(pgc_shared->statements_lock);

	for (long i = 0; i < n; i++)
	{
		PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);
		Datum		values[STATEMENT_COLS] = {0};
		bool		nulls[STATEMENT_COLS] = {0};
		bool		visible = pgc_can_see_details(e->key.userid);

		values[0] = ObjectIdGetDatum(e->key.userid);
		values[1] = ObjectIdGetDatum(e->key.dbid);
		if (visible)
			values[2] = Int64GetDatum(e->key.query_id);
		else
			nulls[2] = true;
		values[3] = Int64GetDatum(e->calls);
		values[4] = Int64GetDatum(e->suboverflowed_calls);
		values[5] = Int64GetDatum(e->standby_calls);
		values[6] = Int64GetDatum(e->overflow_events);
		values[7] = TimestampTzGetDatum(e->first_seen);
		values[8] = TimestampTzGetDatum(e->last_seen);
		values[9] = CStringGetTextDatum(visible ? e->query :
										"<insufficient privilege>");
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}
