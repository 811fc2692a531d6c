/*-------------------------------------------------------------------------
 *
 * old_snapshot_view.c
 *		pg_contention_old_snapshot(window_seconds): old_snapshot_threshold's
 *		state in the server (compat.c reads oldSnapshotControl) and the
 *		pressure on its spinlocks over a window of the sampler's history
 *		and since the last reset (stores/old_snapshot.c).
 *
 * Owns no shared state; the history and the totals are copied out under
 * their stores' locks.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_old_snapshot);

/*
 * Shares of active time (cpu_share_of_active) need this many active
 * samples, one busy backend for a second at the default period; below it
 * they are NULL, not a ratio of a handful of samples.
 */
#define PGC_MIN_ACTIVE_SAMPLES 100

/* Figures of the completed seconds since "since", from the history. */
typedef struct OldSnapWindow
{
	int			seconds;		/* completed seconds in the window */
	int64		ticks;
	int64		active_samples;
	int64		cpu_samples;
	int64		timemap_samples;
	int64		procarray_samples;
	bool		have_timemap;
	PgcOldSnapFigures figures;
} OldSnapWindow;

/*
 * Sum the last window_seconds completed seconds.  The window ends with the
 * latest completed second: the one before the current second, or, in the
 * few milliseconds after a second starts and before the sampler's next
 * tick has closed the previous one, the second before that.  So (1) is
 * the latest completed second, never an empty window.
 */
static void
sum_window(int window_seconds, OldSnapWindow *window)
{
	bool		named_found[PGC_NUM_NAMED_WAITS];
	int			n;
	PgcHistoryBucket *history = pgc_sampler_copy_history(DT_NOBEGIN, &n, named_found);
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz last = now - (now % USECS_PER_SEC) - USECS_PER_SEC;
	TimestampTz latest = 0;
	TimestampTz since;

	for (int i = 0; i < n; i++)
		latest = Max(latest, history[i].bucket_start);
	if (latest == last - USECS_PER_SEC)
		last = latest;
	since = last - (TimestampTz) (window_seconds - 1) * USECS_PER_SEC;

	memset(window, 0, sizeof(*window));
	window->have_timemap = named_found[PGC_NAMED_OLDSNAPSHOT_TIMEMAP];
	for (int i = 0; i < n; i++)
	{
		PgcHistoryBucket *b = &history[i];

		if (b->bucket_start < since || b->bucket_start > last)
			continue;
		window->seconds++;
		window->ticks += b->ticks;
		window->active_samples += b->active_samples;
		window->cpu_samples += b->cpu_samples;
		window->timemap_samples += b->named_samples[PGC_NAMED_OLDSNAPSHOT_TIMEMAP];
		window->procarray_samples += b->named_samples[PGC_NAMED_PROCARRAY];
		pgc_oldsnap_add(&window->figures, &b->oldsnap);
	}
	pfree(history);
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

static const PgcResultColumn oldsnap_columns[] = {
	{"setting_minutes", INT4OID, PGC_SQL_V(1, 0)},
	{"enabled", BOOLOID, PGC_SQL_V(1, 0)},
	{"applicable", BOOLOID, PGC_SQL_V(1, 0)},
	{"snapshot_timestamp", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"latest_xmin", XIDOID, PGC_SQL_V(1, 0)},
	{"next_map_update", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"threshold_timestamp", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"threshold_xid", XIDOID, PGC_SQL_V(1, 0)},
	{"map_entries_used", INT4OID, PGC_SQL_V(1, 0)},
	{"window_seconds_covered", INT4OID, PGC_SQL_V(1, 0)},
	{"probes", INT8OID, PGC_SQL_V(1, 0)},
	{"probe_p50_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"probe_p99_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"probe_max_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"lock_held_pct", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"lock_ops_per_sec_estimate", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"cpu_share_of_active", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"avg_active_backends", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"oldsnapshot_timemap_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"procarray_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"total_probes", INT8OID, PGC_SQL_V(1, 0)},
	{"total_probe_p50_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"total_probe_p99_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"total_probe_max_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"total_lock_held_pct", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"total_lock_ops_estimate", INT8OID, PGC_SQL_V(1, 0)},
};
static const PgcResultShape oldsnap_shape = {
	"pg_contention_old_snapshot", oldsnap_columns, lengthof(oldsnap_columns)
};

#define OLDSNAP_COLS lengthof(oldsnap_columns)

static void
put_timestamp(Datum *values, bool *nulls, int col, TimestampTz t)
{
	if (t != 0)
		values[col] = TimestampTzGetDatum(t);
	else
		nulls[col] = true;
}

static void
put_xid(Datum *values, bool *nulls, int col, TransactionId xid)
{
	if (TransactionIdIsValid(xid))
		values[col] = TransactionIdGetDatum(xid);
	else
		nulls[col] = true;
}

/*
 * pg_contention_old_snapshot(window_seconds): one row.  The state of
 * oldSnapshotControl (NULL while the setting is off), then the pressure
 * figures over the last window_seconds completed seconds of history, then
 * since the last reset.  NULL (1.4's default, the view's) is 60 seconds, or
 * the whole history when pg_contention.history_seconds is shorter; 1.0 to
 * 1.3 declare the function STRICT with a default of 60.
 */
Datum
pg_contention_old_snapshot(PG_FUNCTION_ARGS)
{
	int			window_seconds = PG_ARGISNULL(0) ? Min(60, pgc_history_seconds) :
		PG_GETARG_INT32(0);
	TupleDesc	tupdesc;
	Datum		values[OLDSNAP_COLS] = {0};
	bool		nulls[OLDSNAP_COLS] = {0};
	PgcOldSnapshotState state;
	OldSnapWindow window;
	PgcOldSnapFigures total;
	bool		supported = pgc_oldsnap_supported();
	int			setting = pgc_oldsnap_setting();
	int			c = 0;

	pgc_require_loaded();
	if (window_seconds < 1 || window_seconds > pgc_history_seconds)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window_seconds must be between 1 and %d", pgc_history_seconds),
				 errhint("The history keeps pg_contention.history_seconds (%d) seconds; NULL reads the last 60 seconds, or all of them when there are fewer.",
						 pgc_history_seconds)));
	tupdesc = pgc_result_tupdesc(fcinfo, &oldsnap_shape);

	sum_window(window_seconds, &window);
	pgc_oldsnap_total(&total);

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
	if (supported && setting >= 0 && pgc_oldsnap_read_state(&state))
	{
		/* Zero until the server first sets them: not a time, so NULL. */
		put_timestamp(values, nulls, c++, state.current_timestamp);
		put_xid(values, nulls, c++, state.latest_xmin);
		put_timestamp(values, nulls, c++, state.next_map_update);
		put_timestamp(values, nulls, c++, state.threshold_timestamp);
		put_xid(values, nulls, c++, state.threshold_xid);
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
	/* A share of almost nothing is noise: NULL below a minimum. */
	if (window.active_samples >= PGC_MIN_ACTIVE_SAMPLES)
		values[c] = Float8GetDatum((double) window.cpu_samples / window.active_samples);
	else
		nulls[c] = true;
	c++;
	if (window.ticks > 0)
		values[c] = Float8GetDatum((double) window.active_samples / window.ticks);
	else
		nulls[c] = true;
	c++;
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
