/*-------------------------------------------------------------------------
 *
 * statements_file.c
 *		The statement store's section of the stores' file (persist.c):
 *		every entry written with its index figures and text, and read back
 *		with each field checked, at start.
 *
 * Owns no shared state.  The save takes the store's LWLock in shared
 * mode for a batch of entries at a time and writes with it released; the
 * load runs in the postmaster before any backend exists.
 *
 *-------------------------------------------------------------------------
 */
#include "statements_store.h"
#include "stores.h"

#include "common/hashfn.h"

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
		LWLockAcquire(pgc_stmts->lock, LW_SHARED);
	evictions = pgc_stmts->evictions;
	hash_seq_init(&status, pgc_statements);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (nkeys < pgc_max_statements)
			keys[nkeys++] = entry->key;
	if (take_locks)
		LWLockRelease(pgc_stmts->lock);
	pgc_write_bytes(writer, &evictions, sizeof(evictions));

	while (next < nkeys && !pgc_writer_failed(writer))
	{
		int			n = 0;

		if (take_locks)
			LWLockAcquire(pgc_stmts->lock, LW_SHARED);
		for (; next < nkeys && n < batch_max; next++)
		{
			PgcStatementEntry *dest = (PgcStatementEntry *) (batch + n * size);

			entry = hash_search(pgc_statements, &keys[next], HASH_FIND, NULL);
			if (entry == NULL)
				continue;
			copy_entry(dest, entry, take_locks);
			n++;
		}
		if (take_locks)
			LWLockRelease(pgc_stmts->lock);

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
		pgc_index_records[r].counters = e->indexes[k];
		load_index_period(&pgc_index_records[r].current, &e->current, k);
		load_index_period(&pgc_index_records[r].previous, &e->previous, k);
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
		entry = hash_search(pgc_statements, &key, HASH_ENTER_NULL, &found);
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
			hash_search(pgc_statements, &key, HASH_REMOVE, NULL);
			if (reader->failed)
				break;
			continue;
		}
		if (!pgc_statement_take_slot(entry))
		{
			hash_search(pgc_statements, &key, HASH_REMOVE, NULL);
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
	pgc_stmts->evictions = evictions + (int64) (read - *kept);
	pfree(loaded);
	pfree(heap);
}

/* The most a file's statements take: each record and its text at most. */
uint64
pgc_statements_largest_section(const PgcFileCapacities *capacities)
{
	return (uint64) capacities->max_statements *
		(pgc_statements_record_size() + sizeof(uint32) + (uint64) capacities->max_query_length);
}
