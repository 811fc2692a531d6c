/*-------------------------------------------------------------------------
 *
 * oldsnapshot.c
 *		old_snapshot_threshold pressure (PostgreSQL 13-16): the state of the
 *		server's oldSnapshotControl and figures that rise with contention on
 *		its spinlocks, which have no wait event before PostgreSQL 17.
 *
 * The figures are gathered by the sampler (sampler.c) only while the
 * setting is on: each tick it times a few acquisitions of mutex_current
 * (the spinlock every snapshot takes) into a latency histogram, and reads
 * the three lock words a few dozen times without taking them to see how
 * often one is held; once a second it estimates the operations that take
 * these locks from the statistics the server keeps.  This file owns the
 * histogram arithmetic and the view; it owns no shared state.  Reading the
 * server's state takes the server's spinlocks and OldSnapshotTimeMapLock
 * in shared mode, briefly (compat.c).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <math.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_old_snapshot);

void
pgc_oldsnap_add_probe(PgcOldSnapFigures *f, int64 ns)
{
	int			k = 0;

	while (k < PGC_PROBE_HIST_BUCKETS - 1 && ((int64) 1 << k) <= ns)
		k++;
	f->probe_hist[k]++;
	f->probes++;
	f->probe_max_ns = Max(f->probe_max_ns, ns);
}

void
pgc_oldsnap_merge(PgcOldSnapFigures *into, const PgcOldSnapFigures *from)
{
	into->active |= from->active;
	into->probes += from->probes;
	into->probe_max_ns = Max(into->probe_max_ns, from->probe_max_ns);
	for (int k = 0; k < PGC_PROBE_HIST_BUCKETS; k++)
		into->probe_hist[k] += from->probe_hist[k];
	into->lock_word_reads += from->lock_word_reads;
	into->lock_word_held += from->lock_word_held;
	into->lock_op_estimate += from->lock_op_estimate;
}

/*
 * The latency below which a fraction q of the probes fell, in microseconds:
 * the upper bound of the histogram bucket (a power of two nanoseconds).
 */
static double
probe_quantile_us(const PgcOldSnapFigures *f, double q)
{
	int64		need = (int64) ceil(q * f->probes);
	int64		seen = 0;

	for (int k = 0; k < PGC_PROBE_HIST_BUCKETS; k++)
	{
		seen += f->probe_hist[k];
		if (seen >= need)
			return (double) ((int64) 1 << k) / 1000.0;
	}
	return (double) f->probe_max_ns / 1000.0;
}

/* Columns 'first' .. first+5: probes, p50, p99, max, held %, ops per second. */
static void
put_figures(Datum *values, bool *nulls, int first,
			const PgcOldSnapFigures *f, int seconds)
{
	values[first] = Int64GetDatum(f->probes);
	if (f->probes > 0)
	{
		values[first + 1] = Float8GetDatum(probe_quantile_us(f, 0.5));
		values[first + 2] = Float8GetDatum(probe_quantile_us(f, 0.99));
		values[first + 3] = Float8GetDatum((double) f->probe_max_ns / 1000.0);
	}
	else
		nulls[first + 1] = nulls[first + 2] = nulls[first + 3] = true;
	values[first + 4] = Float8GetDatum(f->lock_word_reads > 0 ?
									   100.0 * f->lock_word_held / f->lock_word_reads : 0.0);
	if (seconds > 0)
		values[first + 5] = Float8GetDatum((double) f->lock_op_estimate / seconds);
	else
		nulls[first + 5] = true;
}

#define OLDSNAP_COLS 26

/*
 * pg_contention_old_snapshot(window_seconds): one row.  The state of
 * oldSnapshotControl, then the pressure figures over the last
 * window_seconds completed seconds of history, then since the last reset.
 */
Datum
pg_contention_old_snapshot(PG_FUNCTION_ARGS)
{
	int			window_seconds = PG_GETARG_INT32(0);
	TupleDesc	tupdesc;
	Datum		values[OLDSNAP_COLS] = {0};
	bool		nulls[OLDSNAP_COLS] = {0};
	PgcOldSnapshotState state;
	PgcOldSnapWindow window;
	PgcOldSnapFigures total;
	bool		supported = pgc_oldsnap_supported();
	int			setting = pgc_oldsnap_setting();
	int			c = 0;

	pgc_require_loaded();
	if (window_seconds < 1 || window_seconds > pgc_history_seconds)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window_seconds must be between 1 and %d", pgc_history_seconds),
				 errhint("The history keeps pg_contention.history_seconds seconds.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	pgc_sampler_oldsnap_window(GetCurrentTimestamp() - (TimestampTz) window_seconds * USECS_PER_SEC,
							   &window, &total);

	/* The setting, and the server's state (only where it exists). */
	if (supported)
	{
		values[c++] = Int32GetDatum(setting);
		values[c++] = BoolGetDatum(setting >= 0);
	}
	else
	{
		nulls[c++] = true;
		nulls[c++] = true;
	}
	values[c++] = BoolGetDatum(supported);
	if (supported && pgc_oldsnap_read_state(&state))
	{
		values[c++] = TimestampTzGetDatum(state.current_timestamp);
		values[c++] = TransactionIdGetDatum(state.latest_xmin);
		values[c++] = TimestampTzGetDatum(state.next_map_update);
		values[c++] = TimestampTzGetDatum(state.threshold_timestamp);
		values[c++] = TransactionIdGetDatum(state.threshold_xid);
		values[c++] = Int32GetDatum(state.map_entries_used);
	}
	else
	{
		for (int i = 0; i < 6; i++)
			nulls[c++] = true;
	}

	/* The window. */
	values[c++] = Int32GetDatum(window.seconds);
	put_figures(values, nulls, c, &window.figures, window.seconds);
	c += 6;
	values[c++] = Float8GetDatum(window.active_samples > 0 ?
								 (double) window.cpu_samples / window.active_samples : 0.0);
	values[c++] = Float8GetDatum(window.ticks > 0 ?
								 (double) window.active_samples / window.ticks : 0.0);
	if (window.have_timemap)
		values[c] = Int64GetDatum(window.timemap_samples);
	else
		nulls[c] = true;
	c++;
	values[c++] = Int64GetDatum(window.procarray_samples);

	/* Since the last reset (no per-second rate: its duration is unknown here). */
	put_figures(values, nulls, c, &total, 0);
	nulls[c + 5] = false;
	values[c + 5] = Int64GetDatum(total.lock_op_estimate);
	c += 6;

	Assert(c == OLDSNAP_COLS);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
