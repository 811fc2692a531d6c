/*-------------------------------------------------------------------------
 *
 * sampler_file.c
 *		The wait profile's and the history's sections of the stores' file
 *		(persist.c): written by the worker or the postmaster at exit, read
 *		back with each field checked at start.
 *
 * Owns no shared state; the locking is described before each save.
 *
 *-------------------------------------------------------------------------
 */
#include "sampler_store.h"
#include "stores.h"

/* ---- the file (persist.c) ---- */

uint32
pgc_profile_record_size(void)
{
	return (uint32) sizeof(PgcProfileEntry);
}

/*
 * The section: evictions and samples since reset, then the entries.
 *
 * This save and the history's copy a batch of records under the lock in
 * shared mode and write it after releasing the lock.  Between batches
 * nothing moves: the worker, the only writer of the profile and the
 * history, is the process saving (or the postmaster saves at exit,
 * alone); only a reset can change them, and it bumps reset_generation,
 * which ends the section with what was copied before it.
 */
void
pgc_profile_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	int			batch_max = PGC_SAVE_BATCH_BYTES / sizeof(PgcProfileEntry);
	PgcProfileEntry *batch;
	int64		evictions;
	int64		samples;
	int			used;
	int			next = 0;
	uint64		generation;

	*count = 0;
	batch = palloc_extended(batch_max * sizeof(PgcProfileEntry), MCXT_ALLOC_NO_OOM);
	if (batch == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		return;
	}
	if (take_locks)
		LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	evictions = pgc_sampler->status.profile_evictions;
	samples = pgc_sampler->status.profile_samples;
	used = pgc_sampler->status.profile_used;
	generation = pgc_sampler->reset_generation;
	if (take_locks)
		LWLockRelease(pgc_sampler->lock);
	pgc_write_bytes(writer, &evictions, sizeof(evictions));
	pgc_write_bytes(writer, &samples, sizeof(samples));

	while (next < used && !pgc_writer_failed(writer))
	{
		int			n = 0;

		if (take_locks)
			LWLockAcquire(pgc_sampler->lock, LW_SHARED);
		if (pgc_sampler->reset_generation == generation)
		{
			n = Min(batch_max, used - next);
			memcpy(batch, pgc_profile + next, n * sizeof(PgcProfileEntry));
			next += n;
		}
		if (take_locks)
			LWLockRelease(pgc_sampler->lock);
		if (n == 0)
			break;
		pgc_write_bytes(writer, batch, n * sizeof(PgcProfileEntry));
		*count += n;
	}
	pfree(batch);
}

static int
compare_profile_keys(const void *a, const void *b)
{
	return memcmp(&((const PgcProfileEntry *) a)->key,
				  &((const PgcProfileEntry *) b)->key, sizeof(PgcProfileKey));
}

/* The heap's order while loading: the least sampled at the root. */
static bool
fewer_samples(const void *a, const void *b)
{
	return ((const PgcProfileEntry *) a)->samples < ((const PgcProfileEntry *) b)->samples;
}

/*
 * Put the saved profile back, the most sampled entries when the profile
 * is smaller now (the rest count as evictions): profile[] itself is the
 * heap that keeps them, so the load allocates nothing; then sorted by
 * key, so that the entries of one key (a file the worker did not write
 * could repeat one) are merged.  Counters are clamped to [0,
 * PGC_COUNTER_MAX], an entry without samples is skipped, and the samples
 * since reset are at least those of the entries.  Postmaster only, before the worker exists: no
 * lock; the worker builds its index of the profile when it starts.
 */
void
pgc_profile_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	int64		evictions;
	int64		samples;
	int64		sum = 0;
	uint64		n = 0;
	uint64		read = 0;
	uint64		most = (uint64) pgc_max_profile_entries;
	uint64		merged = 0;
	uint64		kept_n = 0;

	*kept = 0;
	if (!pgc_read_bytes(reader, &evictions, sizeof(evictions)) ||
		!pgc_read_bytes(reader, &samples, sizeof(samples)))
		return;
	pgc_fix_counter(reader, &evictions);
	pgc_fix_counter(reader, &samples);
	for (; read < count; read++)
	{
		PgcProfileEntry e;

		if (!pgc_read_bytes(reader, &e, sizeof(e)))
			break;
		e.key.padding = 0;		/* the key is hashed as bytes */
		pgc_fix_counter(reader, &e.samples);
		if (e.samples == 0)
		{
			reader->fixed++;
			continue;
		}
		n = pgc_keep_largest(pgc_profile, n, most, sizeof(PgcProfileEntry), &e,
							 fewer_samples);
	}

	/* One entry per key: sorted by key, repeated ones merged. */
	qsort(pgc_profile, n, sizeof(PgcProfileEntry), compare_profile_keys);
	for (uint64 i = 0; i < n; i++)
	{
		if (kept_n > 0 &&
			memcmp(&pgc_profile[kept_n - 1].key, &pgc_profile[i].key, sizeof(PgcProfileKey)) == 0)
		{
			pgc_profile[kept_n - 1].samples = Min(pgc_profile[kept_n - 1].samples + pgc_profile[i].samples,
											  PGC_COUNTER_MAX);
			merged++;
			continue;
		}
		pgc_profile[kept_n++] = pgc_profile[i];
	}
	reader->fixed += merged;
	n = kept_n;
	for (uint64 i = 0; i < n; i++)
		sum = Min(sum + pgc_profile[i].samples, PGC_COUNTER_MAX);
	*kept = n;
	pgc_sampler->status.profile_used = (int) n;
	pgc_sampler->status.profile_evictions = Min(evictions + (int64) (read - n - merged),
											PGC_COUNTER_MAX);
	pgc_sampler->status.profile_samples = Max(samples, sum);
}

uint32
pgc_history_record_size(void)
{
	return (uint32) sizeof(PgcHistoryBucket);
}

/* The section: buckets written since reset, then the ring, oldest first. */
void
pgc_history_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	int			batch_max = Max(1, (int) (PGC_SAVE_BATCH_BYTES / sizeof(PgcHistoryBucket)));
	PgcHistoryBucket *batch;
	int64		written;
	int64		next;
	uint64		generation;

	*count = 0;
	batch = palloc_extended(batch_max * sizeof(PgcHistoryBucket), MCXT_ALLOC_NO_OOM);
	if (batch == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		return;
	}
	if (take_locks)
		LWLockAcquire(pgc_sampler->lock, LW_SHARED);
	written = pgc_sampler->status.buckets_written;
	generation = pgc_sampler->reset_generation;
	if (take_locks)
		LWLockRelease(pgc_sampler->lock);
	pgc_write_bytes(writer, &written, sizeof(written));

	next = written - Min(written, (int64) pgc_history_seconds);
	while (next < written && !pgc_writer_failed(writer))
	{
		int			n = 0;

		/* Only a reset changes the ring meanwhile: see above. */
		if (take_locks)
			LWLockAcquire(pgc_sampler->lock, LW_SHARED);
		if (pgc_sampler->reset_generation == generation)
			for (; next < written && n < batch_max; next++, n++)
				batch[n] = pgc_history[next % pgc_history_seconds];
		if (take_locks)
			LWLockRelease(pgc_sampler->lock);
		if (n == 0)
			break;
		pgc_write_bytes(writer, batch, n * sizeof(PgcHistoryBucket));
		*count += n;
	}
	pfree(batch);
}

/* A saved second's counters, clamped; false when it cannot be kept. */
static bool
fix_bucket(PgcReader *reader, PgcHistoryBucket *b)
{
	PgcOldSnapFigures *o = &b->oldsnap;

	if (!pgc_fix_time(reader, &b->bucket_start) || b->bucket_start == 0)
	{
		if (b->bucket_start == 0)
			reader->fixed++;
		return false;
	}
	o->active = (o->active != 0);
	pgc_fix_counter(reader, &o->probes);
	pgc_fix_counter(reader, &o->probe_max_ns);
	for (int i = 0; i < PGC_PROBE_HIST_BUCKETS; i++)
		pgc_fix_int32(reader, &o->probe_hist[i], 0, PG_INT32_MAX);
	pgc_fix_counter(reader, &o->lock_word_reads);
	pgc_fix_counter(reader, &o->lock_word_held);
	pgc_fix_counter(reader, &o->lock_op_estimate);
	pgc_fix_counter(reader, &b->ticks);
	pgc_fix_counter(reader, &b->active_samples);
	pgc_fix_counter(reader, &b->idle_samples);
	pgc_fix_counter(reader, &b->cpu_samples);
	for (int i = 0; i < PGC_NUM_WAIT_CLASSES; i++)
		pgc_fix_counter(reader, &b->class_samples[i]);
	for (int i = 0; i < PGC_NUM_NAMED_WAITS; i++)
		pgc_fix_counter(reader, &b->named_samples[i]);
	pgc_fix_int32(reader, &b->max_overflowed_backends, 0, PG_INT32_MAX);
	b->slru_known = (b->slru_known != 0);
	pgc_fix_counter(reader, &b->subtrans_lookups);
	pgc_fix_counter(reader, &b->subtrans_reads);
	if (b->horizon_xid_age != -1)
		pgc_fix_counter(reader, &b->horizon_xid_age);
	b->xids_known = (b->xids_known != 0);
	pgc_fix_counter(reader, &b->xids_assigned);
	pgc_fix_counter(reader, &b->subtrans_reader_lookups);
	return true;
}

/*
 * Put the saved seconds back, with their timestamps (the seconds the
 * server was down are a gap), the newest pg_contention.history_seconds of
 * them.  A second whose time is not plausible or not after the one kept
 * before it is skipped; counters are clamped (fix_bucket).  Postmaster
 * only, before the worker exists: no lock.
 */
void
pgc_history_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	int64		written;
	uint64		n;
	uint64		skip;
	TimestampTz last = 0;

	*kept = 0;
	if (!pgc_read_bytes(reader, &written, sizeof(written)))
		return;
	n = Min(count, (reader->len - reader->pos) / sizeof(PgcHistoryBucket));
	skip = n > (uint64) pgc_history_seconds ? n - pgc_history_seconds : 0;
	pgc_reader_seek(reader, reader->pos + skip * sizeof(PgcHistoryBucket));
	for (uint64 i = 0; i < n - skip; i++)
	{
		PgcHistoryBucket *b = &pgc_history[*kept];

		if (!pgc_read_bytes(reader, b, sizeof(PgcHistoryBucket)))
			break;
		if (!fix_bucket(reader, b))
			continue;
		if (b->bucket_start <= last)
		{
			reader->fixed++;
			continue;
		}
		last = b->bucket_start;
		(*kept)++;
	}
	/* The ring restarts at slot 0 with the kept seconds, oldest first. */
	pgc_sampler->status.buckets_written = (int64) *kept;
	if (n < count)
		reader->failed = true;	/* the section ends early */
	(void) written;
}

/* The most a file's wait profile takes. */
uint64
pgc_profile_largest_section(const PgcFileCapacities *capacities)
{
	return (uint64) capacities->max_profile_entries * pgc_profile_record_size();
}

/* The most a file's history takes. */
uint64
pgc_history_largest_section(const PgcFileCapacities *capacities)
{
	return (uint64) capacities->history_seconds * pgc_history_record_size();
}
