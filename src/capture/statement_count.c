/*-------------------------------------------------------------------------
 *
 * statement_count.c
 *		Counting a statement in the statement store, in every backend's
 *		executor: find its entry (through this backend's cache of entry
 *		locations, without the store's LWLock when the cached entry is
 *		still live), create it when it is new, and add one execution's
 *		figures under the entry's spinlock.
 *
 * Owns this backend's cache of entry locations and its application's
 * name and hash.  The locking rules, and why the lock-free path is safe,
 * are in stores/statements.c's header comment.
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/statements_store.h"
#include "capture.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "utils/memutils.h"

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
 * in words so that it can be compared a word at a time, and its hash, the
 * key's app_hash.
 */
#define APP_NAME_WORDS	(NAMEDATALEN / sizeof(uint64))
static union
{
	char		name[NAMEDATALEN];
	uint64		words[APP_NAME_WORDS];
}			current_app;
static int	current_app_words = 1;	/* words up to its terminating zero */
static uint64 current_app_hash = 0;

StaticAssertDecl(NAMEDATALEN % sizeof(uint64) == 0,
				 "NAMEDATALEN must be a multiple of 8");

/*
 * application_name changed: note the new name (the NAMEDATALEN bytes from
 * "name", which hold it) and hash it, once.
 */
static pg_noinline void
application_changed(const char *name, bool whole_buffer)
{
	size_t		len;

	if (whole_buffer)
		memcpy(current_app.name, name, NAMEDATALEN);
	else
		strncpy(current_app.name, name, NAMEDATALEN);
	current_app.name[NAMEDATALEN - 1] = '\0';
	len = strlen(current_app.name);
	current_app_words = len / sizeof(uint64) + 1;
	current_app_hash = len == 0 ? 0 :
		hash_bytes_extended((const unsigned char *) current_app.name, len, 0);
}

/*
 * Without a status entry (PG13, or a process that has none): compare the
 * setting's string itself (strncmp, which reads no further than its end).
 */
static pg_noinline uint64
current_application_from_setting(void)
{
	const char *name = application_name ? application_name : "";

	if (strncmp(name, current_app.name, NAMEDATALEN - 1) != 0)
		application_changed(name, false);
	return current_app_hash;
}

/*
 * The key's app_hash for this backend's statement now.  The hash is
 * computed only when application_name changes.  What tells is this
 * backend's status entry (pg_stat_activity's application_name): every
 * assignment of the setting copies the name there (assign_application_name
 * calls pgstat_report_appname, on every version), into a buffer of
 * NAMEDATALEN bytes that only this backend writes, so it can be read here
 * without the entry's change count, a word at a time, and no further than
 * its NAMEDATALEN bytes.  The words up to our copy's terminating zero are
 * equal exactly when the name is (bytes after a terminating zero are
 * whatever an earlier, longer name left: a difference there only makes us
 * copy the buffer again).  The setting's pointer would not do: a SET frees
 * the old string, and two assignments between two counted statements
 * ("RESET ALL; SET application_name = 'b'", as a pool does on checkout)
 * can leave a different name at the address seen last.  The GUC's check
 * hook keeps the name printable ASCII, so a cut at any byte is a whole
 * character.  Two names with the same 64-bit hash would share entries
 * (under the first one's name).
 */
static inline uint64
current_application(void)
{
	PgBackendStatus *status = PGC_MY_STATUS_ENTRY();
	const char *status_name;

	if (unlikely(status == NULL))
		return current_application_from_setting();
	status_name = status->st_appname;
	for (int i = 0; i < current_app_words; i++)
	{
		uint64		word;

		memcpy(&word, status_name + i * sizeof(uint64), sizeof(uint64));
		if (unlikely(word != current_app.words[i]))
		{
			application_changed(status_name, true);
			break;
		}
	}
	return current_app_hash;
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

	entry = hash_search(pgc_statements, key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	if (hash_get_num_entries(pgc_statements) >= pgc_max_statements)
		evict_least_used(NULL);
	entry = hash_search(pgc_statements, key, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		return NULL;
	if (!found && !pgc_statement_take_slot(entry))
	{
		hash_search(pgc_statements, key, HASH_REMOVE, NULL);
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
			strlcpy(entry->application_name, current_app.name, NAMEDATALEN);
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
		int64		caller = 0;
		int			location;
		int			len;

		ps->worst_dead = dead;
		ps->worst_entries = entries;
		ps->worst_blks = top ? exec->shared_blks_hit + exec->shared_blks_read : -1;
		ps->worst_rows = top ? exec->rows : -1;
		ps->worst_at = now;
		/* Nested (a function's statement): the client statement around it. */
		if (!top && !pgc_current_statement(&caller, &location, &len))
			caller = 0;
		ps->worst_caller = caller;
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
				pgc_index_records[entry->index_record[slot]].counters.indexoid = indexoid;
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
			int64		dead = Max(delta->dead, 0);

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

	LWLockAcquire(pgc_stmts->lock, exclusive ? LW_EXCLUSIVE : LW_SHARED);
	entry = hash_search(pgc_statements, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		/*
		 * A new statement (rare): its text normalised once, here, with no
		 * lock held (normalize.c scans it and may catch the scanner's
		 * error).
		 */
		char	   *text;

		LWLockRelease(pgc_stmts->lock);
		text = palloc(pgc_max_query_length);
		if (exec->flags & PGC_COUNT_SAVEPOINT)
		{
			char	   *pattern = pgc_savepoint_pattern(source_text, stmt_location, stmt_len);

			pgc_normalize_query(pattern, 0, strlen(pattern), text, pgc_max_query_length);
			pfree(pattern);
		}
		else
			pgc_normalize_query(source_text, stmt_location, stmt_len, text,
								pgc_max_query_length);
		LWLockAcquire(pgc_stmts->lock, LW_EXCLUSIVE);
		exclusive = true;
		entry = enter_statement(&key, text, now);
		pfree(text);
		if (entry == NULL)
		{
			LWLockRelease(pgc_stmts->lock);
			return;
		}
	}

	/*
	 * Records for the indexes this execution meets the first time: when
	 * the pool has too few, the least used statements make room (evicted
	 * and counted like the hash's).
	 */
	if (exclusive && pgc_stmts->nfree_records < records_needed(entry, exec))
		evict_least_used(entry);

	/* No removal can happen while we hold the LWLock: the generation holds. */
	slot->key = key;
	slot->entry = entry;
	slot->generation = pg_atomic_read_u64(&pgc_stmts->generation);

	SpinLockAcquire(&entry->mutex);
	counted = update_entry(entry, now, exec, exclusive);
	SpinLockRelease(&entry->mutex);

	LWLockRelease(pgc_stmts->lock);

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
 * subtransaction-cache overflow; PGC_COUNT_SAVEPOINT for a savepoint
 * statement, whose entry shows its pattern (pgc_savepoint_pattern).  The
 * text is read only if the entry must be created.
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
	Assert(pgc_stmts != NULL);
	if (!OidIsValid(userid))
		userid = GetUserId();

	/*
	 * Fast path: a cached entry, still live.  Why the generation is enough
	 * (stores/statements.c's header comment): a remover bumps it before it
	 * takes a victim's spinlock.  Why taking the spinlock of an entry that
	 * may have been removed is safe: the store's table is a dynahash table
	 * in shared memory, which never moves an entry nor gives its memory
	 * back: a removed entry's memory goes on the table's free list and is
	 * reused only as another entry of this table, whose spinlock is
	 * initialised (under it) when the entry is created.  So the cached
	 * place is always an entry's, live or not, and its spinlock a
	 * spinlock.  t/039 churns the store under cached places.
	 */
	slot = &local_cache[(uint32) (query_id ^ (query_id >> 32) ^ app_hash) % LOCAL_CACHE_SIZE];
	entry = slot->entry;
	if (entry != NULL && slot->key.query_id == query_id &&
		slot->key.userid == userid && slot->key.dbid == MyDatabaseId &&
		slot->key.app_hash == app_hash)
	{
		SpinLockAcquire(&entry->mutex);
		live = pg_atomic_read_u64(&pgc_stmts->generation) == slot->generation;
		/* A live cached entry is the statement's, in its slot. */
		Assert(!live || memcmp(&entry->key, &slot->key, sizeof(PgcStatementKey)) == 0);
		Assert(!live || (entry->slot >= 0 && entry->slot < pgc_max_statements &&
						 pgc_slot_entry[entry->slot] == entry));
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
