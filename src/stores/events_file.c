/*-------------------------------------------------------------------------
 *
 * events_file.c
 *		The overflow events' section of the stores' file (persist.c).
 *
 * Owns no shared state.  The save copies a batch of slots at a time under
 * the ring's lock in shared mode; the load runs in the postmaster before
 * any backend exists.
 *
 *-------------------------------------------------------------------------
 */
#include "events_store.h"
#include "stores.h"

/* A saved event: its fixed part, then its text. */
uint32
pgc_events_record_size(void)
{
	return (uint32) offsetof(OverflowEvent, query);
}

/*
 * The section: the count of events ever written, then the ring, oldest
 * first.  A batch of slots at a time is copied under the lock in shared
 * mode and written after releasing it.  Between batches writers may add
 * events (those after the count read first are left for the next save)
 * and overwrite the oldest slots (those events are skipped); a reset
 * bumps resets, and the section then ends with what was copied before it.
 * The slots are written whole under the exclusive lock, so a copy under
 * the shared lock is a whole event.
 */
void
pgc_events_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	Size		stride = event_stride();
	int			batch_max = Max(1, (int) (PGC_SAVE_BATCH_BYTES / stride));
	char	   *batch;
	int64		written;
	uint64		resets;
	int64		next;

	*count = 0;
	batch = palloc_extended(batch_max * stride, MCXT_ALLOC_NO_OOM);
	if (batch == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		return;
	}
	if (take_locks)
		LWLockAcquire(pgc_events->lock, LW_SHARED);
	written = pgc_events->written;
	resets = pgc_events->resets;
	if (take_locks)
		LWLockRelease(pgc_events->lock);
	pgc_write_bytes(writer, &written, sizeof(written));

	next = written - Min(written, (int64) pgc_max_events);
	while (next < written && !pgc_writer_failed(writer))
	{
		int			n = 0;

		if (take_locks)
			LWLockAcquire(pgc_events->lock, LW_SHARED);
		if (pgc_events->resets != resets)
		{
			if (take_locks)
				LWLockRelease(pgc_events->lock);
			break;
		}
		next = Max(next, pgc_events->written - (int64) pgc_max_events);
		for (; next < written && n < batch_max; next++, n++)
			memcpy(batch + n * stride,
				   EVENT_SLOT(pgc_event_ring, next % pgc_max_events), stride);
		if (take_locks)
			LWLockRelease(pgc_events->lock);

		for (int i = 0; i < n; i++)
		{
			OverflowEvent *ev = (OverflowEvent *) (batch + i * stride);

			pgc_write_bytes(writer, ev, offsetof(OverflowEvent, query));
			pgc_write_text(writer, ev->query);
		}
		*count += n;
	}
	pfree(batch);
}

/*
 * Put the saved events back in the empty ring, in their order, keeping the
 * newest pg_contention.max_events; the count written (and so the drops)
 * carries on.  Postmaster only, before any backend exists: no lock.
 *
 * Nothing read is trusted: the count written is clamped to [events kept,
 * PGC_COUNTER_MAX] (far from where written % max_events could go negative
 * or written++ overflow), an event with an implausible time is skipped,
 * a negative nesting depth is clamped, the strings are cut to their
 * buffers; each is counted in reader->fixed.
 */
void
pgc_events_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	int64		written;
	uint64		skip = count > (uint64) pgc_max_events ? count - pgc_max_events : 0;
	char	   *scratch = palloc(event_stride());
	int64		base;

	*kept = 0;
	if (!pgc_read_bytes(reader, &written, sizeof(written)))
	{
		pfree(scratch);
		return;
	}
	pgc_fix_counter(reader, &written);
	if (written < (int64) Min(count, (uint64) PGC_COUNTER_MAX))
	{
		written = (int64) Min(count, (uint64) PGC_COUNTER_MAX);
		reader->fixed++;
	}
	/* The kept events take the ring's slots from base on, oldest first. */
	base = written - (int64) Min(count - skip, (uint64) written);
	for (uint64 i = 0; i < count && !reader->failed; i++)
	{
		OverflowEvent *ev;

		/* Events that no longer fit are read into scratch and dropped. */
		ev = (i < skip) ? (OverflowEvent *) scratch :
			EVENT_SLOT(pgc_event_ring, (base + (int64) *kept) % pgc_max_events);
		if (!pgc_read_bytes(reader, ev, offsetof(OverflowEvent, query)) ||
			!pgc_read_text(reader, ev->query, pgc_max_query_length))
			break;
		pgc_fix_string(ev->application_name, NAMEDATALEN);
		if (i < skip)
			continue;
		pgc_fix_int32(reader, &ev->nesting_depth, 0, PG_INT32_MAX);
		/* The statement's counts: -1 is unknown, any other negative wrong. */
		if (ev->statement_subxacts < -1 || ev->statement_subxacts > PGC_COUNTER_MAX)
		{
			ev->statement_subxacts = -1;
			reader->fixed++;
		}
		if (ev->statement_rows < -1 || ev->statement_rows > PGC_COUNTER_MAX)
		{
			ev->statement_rows = -1;
			reader->fixed++;
		}
		if (!pgc_fix_time(reader, &ev->event_time) || ev->event_time == 0)
		{
			if (ev->event_time == 0)
				reader->fixed++;
			continue;			/* the slot is taken by the next one */
		}
		(*kept)++;
	}
	/* A short section or skipped events: the events kept stand as the newest. */
	pgc_events->written = base + (int64) *kept;
	pfree(scratch);
}

/* The most a file's events take: each record and its text at most. */
uint64
pgc_events_largest_section(const PgcFileCapacities *capacities)
{
	return (uint64) capacities->max_events *
		(pgc_events_record_size() + sizeof(uint32) + (uint64) capacities->max_query_length);
}
