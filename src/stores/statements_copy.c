/*-------------------------------------------------------------------------
 *
 * statements_copy.c
 *		The statement store's entries copied out for its readers and its
 *		file: all of them, those with a flag, those of a few statements,
 *		and those pg_contention_recent can use from a window
 *		(copy_notable_entries: only flagged slots are looked at).
 *
 * Owns no shared state.  Each copy is taken under the store's LWLock in
 * shared mode and each entry under its spinlock (statements.c).
 *
 *-------------------------------------------------------------------------
 */
#include "statements_store.h"
#include "stores.h"

#include "utils/memutils.h"

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
void
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


void
copies_init(EntryCopies *c, long capacity)
{
	c->size = entry_size();
	c->n = 0;
	c->capacity = Max(capacity, 1);
	c->data = palloc_extended(mul_size(c->capacity, c->size), MCXT_ALLOC_HUGE);
}

void
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
char *
copy_entries(long *n)
{
	HASH_SEQ_STATUS status;
	SharedStatement *entry;
	Size		size = entry_size();
	char	   *copy;
	long		i = 0;

	LWLockAcquire(pgc_stmts->lock, LW_SHARED);
	copy = palloc_extended(mul_size(Max(hash_get_num_entries(pgc_statements), 1), size),
						   MCXT_ALLOC_HUGE);
	hash_seq_init(&status, pgc_statements);
	while ((entry = hash_seq_search(&status)) != NULL)
		copy_entry((PgcStatementEntry *) (copy + i++ * size), entry, true);
	LWLockRelease(pgc_stmts->lock);
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
char *
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
	LWLockAcquire(pgc_stmts->lock, LW_SHARED);

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

		if ((entry = pgc_slot_entry[i]) == NULL)
			continue;
		if (pg_atomic_read_u32(&pgc_slot_flags[i]) & SLOT_SUBOVERFLOWED)
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
	LWLockRelease(pgc_stmts->lock);
	pfree(waiting.ids);
	*n = kept.n;
	return kept.data;
}


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

bool
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
char *
copy_dead_index_entries(long *n, IndexGroupKey **groups, long *ngroups)
{
	SharedStatement *entry;
	long		ng = 0;
	IndexGroupKey *keys;
	EntryCopies kept;

	LWLockAcquire(pgc_stmts->lock, LW_SHARED);
	/* Entries are added only under the exclusive lock: the count holds. */
	keys = palloc_extended(mul_size(Max(hash_get_num_entries(pgc_statements), 1),
									PGC_INDEX_SLOTS * sizeof(IndexGroupKey)),
						   MCXT_ALLOC_HUGE);
	/* Only the slots flagged with dead visits can have any (see above). */
	for (int i = 0; i < pgc_max_statements; i++)
	{
		if (!(pg_atomic_read_u32(&pgc_slot_flags[i]) & SLOT_DEAD_VISITS) ||
			(entry = pgc_slot_entry[i]) == NULL)
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
			entry = pgc_slot_entry[i];
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
	LWLockRelease(pgc_stmts->lock);
	*n = kept.n;
	*groups = keys;
	*ngroups = ng;
	return kept.data;
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
bool
entry_is_notable(const PgcStatementEntry *e, TimestampTz cutoff)
{
	int			notable = entry_counters_notable(e, cutoff);

	return notable > 0 || (notable == 0 && is_savepoint_text(e->query));
}

/* Order statement keys by statement (database, user, query id). */
int
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
char *
copy_notable_entries(long *n, TimestampTz cutoff)
{
	SharedStatement *entry;
	long		nothers = 0;
	EntryCopies kept;
	OtherEntry *others = NULL;
	bool	   *kept_slot = palloc0(pgc_max_statements * sizeof(bool));

	LWLockAcquire(pgc_stmts->lock, LW_SHARED);
	copies_init(&kept, 64);

	/* Only a flagged slot's entry can be notable (see the flags). */
	for (int i = 0; i < pgc_max_statements; i++)
	{
		uint32		flags = pg_atomic_read_u32(&pgc_slot_flags[i]);
		int			notable;

		if (!(flags & SLOT_NOTABLE) || (entry = pgc_slot_entry[i]) == NULL)
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
		others = palloc_extended(Max(hash_get_num_entries(pgc_statements), 1) * sizeof(OtherEntry),
								 MCXT_ALLOC_HUGE);
		for (int i = 0; i < pgc_max_statements; i++)
		{
			if (kept_slot[i] || !slot_in_set(i, &ids))
				continue;
			others[nothers].key = pgc_slot_entry[i]->key;
			others[nothers++].entry = pgc_slot_entry[i];
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
	LWLockRelease(pgc_stmts->lock);
	pfree(kept_slot);
	*n = kept.n;
	return kept.data;
}
