/*-------------------------------------------------------------------------
 *
 * incidents_file.c
 *		The incidents' section of the stores' file (persist.c): every
 *		incident written with its texts, and read back at start with each
 *		field and each JSON text checked.
 *
 * Owns no shared state.  The save copies one slot at a time under the
 * store's lock in shared mode; the load runs in the postmaster before any
 * backend exists.
 *
 *-------------------------------------------------------------------------
 */
#include "incidents_store.h"
#include "stores.h"

#include "utils/builtins.h"

/* ---- the file ---- */

uint32
pgc_incidents_record_size(void)
{
	return (uint32) offsetof(Incident, problem);
}

/* The most bytes a record can take in the file: its texts at their bounds. */
static uint64
pgc_incidents_record_max(void)
{
	return offsetof(Incident, frozen) + FROZEN_LEN + 11 * sizeof(uint32);
}

/* frozen: FROZEN_LEN bytes to put the frozen document's text in. */
static void
write_incident_texts(PgcWriter *writer, const Incident *inc, char *frozen)
{
	pgc_write_text(writer, inc->problem);
	pgc_write_text(writer, inc->key);
	pgc_write_text(writer, inc->subject);
	pgc_write_text(writer, inc->evidence);
	pgc_write_text(writer, inc->advice);
	pgc_write_text(writer, inc->open_subject);
	pgc_write_text(writer, inc->open_evidence);
	pgc_write_text(writer, inc->last_evidence);
	pgc_write_text(writer, inc->resolution);
	pgc_write_text(writer, inc->finding);
	unpack_frozen(&inc->frozen, frozen);
	pgc_write_text(writer, frozen);
}

/*
 * The section: the next id, the eviction counters and the opened
 * counters, then each incident (fixed part and texts).  One slot at a
 * time is copied under the lock in shared mode and written after
 * releasing it; a reset in between ends the section with what was copied.
 */
void
pgc_incidents_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	Incident   *one;
	char	   *frozen;
	int64		head[4];
	int64		opened[NUM_COUNTED][2];
	uint64		resets;

	*count = 0;
	one = palloc_extended(sizeof(Incident), MCXT_ALLOC_NO_OOM);
	frozen = palloc_extended(FROZEN_LEN, MCXT_ALLOC_NO_OOM);
	if (one == NULL || frozen == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		if (one)
			pfree(one);
		if (frozen)
			pfree(frozen);
		return;
	}
	if (take_locks)
		LWLockAcquire(pgc_incidents->lock, LW_SHARED);
	head[0] = pgc_incidents->next_id;
	head[1] = pgc_incidents->evictions;
	head[2] = pgc_incidents->not_opened;
	head[3] = pgc_incidents->open_evictions;
	memcpy(opened, pgc_incidents->opened, sizeof(opened));
	resets = pgc_incidents->reset_generation;
	if (take_locks)
		LWLockRelease(pgc_incidents->lock);
	pgc_write_bytes(writer, head, sizeof(head));
	pgc_write_bytes(writer, opened, sizeof(opened));

	for (int i = 0; i < pgc_max_incidents && !pgc_writer_failed(writer); i++)
	{
		bool		have = false;

		if (take_locks)
			LWLockAcquire(pgc_incidents->lock, LW_SHARED);
		if (pgc_incidents->reset_generation != resets)
		{
			if (take_locks)
				LWLockRelease(pgc_incidents->lock);
			break;
		}
		if (pgc_incident_slots[i].id != 0)
		{
			memcpy(one, &pgc_incident_slots[i], sizeof(Incident));
			have = true;
		}
		if (take_locks)
			LWLockRelease(pgc_incidents->lock);
		if (!have)
			continue;
		pgc_write_bytes(writer, one, offsetof(Incident, problem));
		write_incident_texts(writer, one, frozen);
		(*count)++;
	}
	pfree(one);
	pfree(frozen);
}

/* A server start while it was open: counted, its time kept (the latest). */
static void
note_restart(Incident *inc, TimestampTz at)
{
	int			kept = Min(inc->restarts, INCIDENT_RESTARTS);

	if (kept == INCIDENT_RESTARTS)
	{
		memmove(&inc->restarted[0], &inc->restarted[1],
				(INCIDENT_RESTARTS - 1) * sizeof(TimestampTz));
		kept--;
	}
	inc->restarted[kept] = at;
	if (inc->restarts < INT_MAX)
		inc->restarts++;
}

/*
 * Fill the empty store from the section, keeping the newest
 * max_incidents.  Postmaster only, before any other process: no lock.
 * Nothing read is trusted: ids must be positive and unique (others are
 * skipped), times plausible (an incident without its opening time is
 * skipped), severities in range, texts terminated and cut to their
 * fields, the JSON texts valid JSON (else dropped); the next id stays
 * above every id kept.  Each fix is counted in reader->fixed.
 */
void
pgc_incidents_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	int64		head[4];
	int64		opened[NUM_COUNTED][2];
	Incident   *all;
	char	   *frozen;
	int			n = 0;
	int64		max_id = 0;
	TimestampTz now = GetCurrentTimestamp();

	*kept = 0;
	if (!pgc_read_bytes(reader, head, sizeof(head)) ||
		!pgc_read_bytes(reader, opened, sizeof(opened)))
		return;
	for (int i = 0; i < (int) lengthof(head); i++)
		pgc_fix_counter(reader, &head[i]);
	for (int i = 0; i < (int) NUM_COUNTED; i++)
		for (int j = 0; j < 2; j++)
			pgc_fix_counter(reader, &opened[i][j]);

	/* The newest max_incidents by id: read all, keep the largest ids. */
	all = palloc_extended(mul_size(pgc_max_incidents + 1, sizeof(Incident)),
						  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	frozen = palloc_extended(FROZEN_LEN, MCXT_ALLOC_NO_OOM);
	if (all == NULL || frozen == NULL)
	{
		if (all)
			pfree(all);
		return;
	}
	for (uint64 r = 0; r < count && !reader->failed; r++)
	{
		Incident   *inc = &all[n];
		bool		dup = false;

		memset(inc, 0, sizeof(Incident));
		if (!pgc_read_bytes(reader, inc, offsetof(Incident, problem)) ||
			!pgc_read_text(reader, inc->problem, PROBLEM_LEN) ||
			!pgc_read_text(reader, inc->key, KEY_LEN) ||
			!pgc_read_text(reader, inc->subject, SUBJECT_LEN) ||
			!pgc_read_text(reader, inc->evidence, EVIDENCE_LEN) ||
			!pgc_read_text(reader, inc->advice, ADVICE_LEN) ||
			!pgc_read_text(reader, inc->open_subject, SUBJECT_LEN) ||
			!pgc_read_text(reader, inc->open_evidence, EVIDENCE_LEN) ||
			!pgc_read_text(reader, inc->last_evidence, EVIDENCE_LEN) ||
			!pgc_read_text(reader, inc->resolution, RESOLUTION_LEN) ||
			!pgc_read_text(reader, inc->finding, FINDING_LEN) ||
			!pgc_read_text(reader, frozen, FROZEN_LEN))
			break;
		if (inc->id <= 0 || inc->id > PGC_COUNTER_MAX ||
			!pgc_fix_time(reader, &inc->opened) || inc->opened == 0 ||
			inc->problem[0] == '\0')
		{
			reader->fixed++;
			continue;
		}
		for (int i = 0; i < n; i++)
			dup |= (all[i].id == inc->id);
		if (dup)
		{
			reader->fixed++;
			continue;
		}
		pgc_fix_time(reader, &inc->peak);
		pgc_fix_time(reader, &inc->closed);
		pgc_fix_time(reader, &inc->last_seen);
		if (inc->peak == 0)
			inc->peak = inc->opened;
		pgc_fix_int32(reader, &inc->open_severity, SEV_WARNING, SEV_CRITICAL);
		pgc_fix_int32(reader, &inc->peak_severity, SEV_WARNING, SEV_CRITICAL);
		pgc_fix_int32(reader, &inc->severity, SEV_NONE, SEV_CRITICAL);
		pgc_fix_int32(reader, &inc->members, 0, INT_MAX);
		pgc_fix_int32(reader, &inc->restarts, 0, INT_MAX);
		for (int i = 0; i < INCIDENT_RESTARTS; i++)
			pgc_fix_time(reader, &inc->restarted[i]);
		inc->padding = 0;
		/* Open across this start: its timeline shows the restart. */
		if (inc->closed == 0)
			note_restart(inc, now);
		if (inc->finding[0] != '\0' && !json_valid(inc->finding))
		{
			inc->finding[0] = '\0';
			reader->fixed++;
		}
		if (frozen[0] != '\0' && (frozen[0] != '{' || !json_valid(frozen)))
		{
			frozen[0] = '\0';
			reader->fixed++;
		}
		/*
		 * One too large for a slot even compressed (the build before kept
		 * 48 kB as they came): none, the view says "truncated", and the
		 * load counts it among what it changed.
		 */
		if (!pack_frozen(frozen, &inc->frozen))
			reader->fixed++;
		max_id = Max(max_id, inc->id);
		n++;
		if (n > pgc_max_incidents)
		{
			/* Drop the smallest id: the last slot is free again. */
			qsort(all, n, sizeof(Incident), compare_incident_ids);
			memmove(&all[0], &all[1], (n - 1) * sizeof(Incident));
			n--;
		}
	}
	for (int i = 0; i < n; i++)
		memcpy(&pgc_incident_slots[i], &all[i], sizeof(Incident));
	*kept = n;
	pgc_incidents->next_id = Max(head[0], max_id + 1);
	pgc_incidents->evictions = head[1];
	pgc_incidents->not_opened = head[2];
	pgc_incidents->open_evictions = head[3];
	memcpy(pgc_incidents->opened, opened, sizeof(opened));
	pfree(all);
	pfree(frozen);
}

/* The most a file's incidents take: their counters, each with its texts at their bounds. */
uint64
pgc_incidents_largest_section(const PgcFileCapacities *capacities)
{
	return sizeof(int64) * 32 + (uint64) capacities->max_incidents * pgc_incidents_record_max();
}
