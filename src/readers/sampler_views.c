/*-------------------------------------------------------------------------
 *
 * sampler_views.c
 *		The SQL functions over the sampler's stores: the wait profile
 *		(pg_contention_waits), the per-second history
 *		(pg_contention_history) and the worker's status
 *		(pg_contention_sampler_status).
 *
 * Owns no shared state.  Each function copies what it needs through
 * sampler.c, which takes the sampler's lock in shared mode only for the
 * copy; names are decoded and rows built after it is released.  The
 * history's rows are kept for the rest of the client's statement while no
 * bucket is completed (rowcache.c: backend-local memory).
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_waits);
PG_FUNCTION_INFO_V1(pg_contention_history);
PG_FUNCTION_INFO_V1(pg_contention_sampler_status);

static const PgcResultColumn waits_columns[] = {
	{"dbid", OIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"wait_event_type", TEXTOID, PGC_SQL_V(1, 0)},
	{"wait_event", TEXTOID, PGC_SQL_V(1, 0)},
	{"samples", INT8OID, PGC_SQL_V(1, 0)},
	{"share", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"roleid", OIDOID, PGC_SQL_V(1, 0)},
};
static const PgcResultShape waits_shape = {
	"pg_contention_waits", waits_columns, lengthof(waits_columns)
};

#define WAITS_COLS lengthof(waits_columns)

/* pg_contention_waits(): the profile. */
Datum
pg_contention_waits(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcProfileEntry *copy;
	int			n;
	int64		total;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &waits_shape, &tupdesc);
	copy = pgc_sampler_copy_profile(&n, &total);

	for (int i = 0; i < n; i++)
	{
		Datum		values[WAITS_COLS] = {0};
		bool		nulls[WAITS_COLS] = {0};
		uint32		info = copy[i].key.wait_event_info;

		values[0] = ObjectIdGetDatum(copy[i].key.dbid);
		/* Others' query ids only for pg_read_all_stats, as elsewhere. */
		if (copy[i].key.query_id != 0 &&
			(!OidIsValid(copy[i].key.roleid) ||
			 pgc_can_see_details(copy[i].key.roleid)))
			values[1] = Int64GetDatum(copy[i].key.query_id);
		else
			nulls[1] = true;
		if (info == 0)
		{
			values[2] = CStringGetTextDatum("CPU");
			values[3] = CStringGetTextDatum("CPU");
		}
		else
		{
			const char *type = pgstat_get_wait_event_type(info);
			const char *event = pgstat_get_wait_event(info);

			values[2] = CStringGetTextDatum(type ? type : "???");
			values[3] = CStringGetTextDatum(event ? event : "???");
		}
		values[4] = Int64GetDatum(copy[i].samples);
		values[5] = Float8GetDatum(total > 0 ? (double) copy[i].samples / total : 0.0);
		pgc_put_oid(values, nulls, 6, copy[i].key.roleid);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

/* 1.3 added horizon_xid_age; 1.4 xids_assigned and subtrans_reader_lookups. */
static const PgcResultColumn history_columns[] = {
	{"bucket_start", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"ticks", INT8OID, PGC_SQL_V(1, 0)},
	{"avg_active_backends", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"idle_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"cpu_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"lwlock_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"lock_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"bufferpin_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"io_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"ipc_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"timeout_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"extension_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"client_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"other_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"subtrans_slru_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"subtrans_buffer_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"oldsnapshot_timemap_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"procarray_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"spindelay_samples", INT8OID, PGC_SQL_V(1, 0)},
	{"max_overflowed_backends", INT4OID, PGC_SQL_V(1, 0)},
	{"subtrans_lookups", INT8OID, PGC_SQL_V(1, 0)},
	{"subtrans_reads", INT8OID, PGC_SQL_V(1, 0)},
	{"horizon_xid_age", INT8OID, PGC_SQL_V(1, 3)},
	{"xids_assigned", INT8OID, PGC_SQL_V(1, 4)},
	{"subtrans_reader_lookups", INT8OID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape history_shape = {
	"pg_contention_history", history_columns, lengthof(history_columns)
};

#define HISTORY_COLS lengthof(history_columns)

/*
 * The rows of pg_contention_history, kept for the rest of the client's
 * statement while no bucket is completed (rowcache.c): the findings read
 * them in several rules, 900 rows of 25 columns each time.
 */
static PgcRowCache history_rows;

/*
 * pg_contention_history(since): the completed one-second buckets, oldest
 * first; with since (1.4), only those that start at it or later, without
 * copying the others or building their rows (top reads the seconds
 * completed since its last refresh, of the 15 minutes kept).
 */
Datum
pg_contention_history(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcHistoryBucket *copy;
	int			n;
	bool		named_found[PGC_NUM_NAMED_WAITS];
	PgcSamplerStatus status;
	uint64		version[2];
	/* A 1.1 to 1.3 declaration has no argument. */
	TimestampTz since = PG_NARGS() > 0 && !PG_ARGISNULL(0) ?
		PG_GETARG_TIMESTAMPTZ(0) : DT_NOBEGIN;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &history_shape, &tupdesc);

	/*
	 * Completed buckets do not change: the count written since the last
	 * reset (which zeroes it) says whether the kept rows are still the
	 * history.  Read before the copy: a bucket completed between the two
	 * leaves rows kept under a count no later call reads, so that call
	 * builds them again; kept rows are never older than their count.
	 */
	pgc_sampler_copy_status(&status, NULL);
	version[0] = (uint64) status.buckets_written;
	version[1] = (uint64) since;	/* the rows kept are those since it */
	if (pgc_row_cache_replay(&history_rows, version, tupdesc, tupstore))
		return (Datum) 0;
	copy = pgc_sampler_copy_history(since, &n, named_found);
	pgc_row_cache_begin(&history_rows, version, tupdesc);

	for (int i = 0; i < n; i++)
	{
		PgcHistoryBucket *b = &copy[i];
		Datum		values[HISTORY_COLS] = {0};
		bool		nulls[HISTORY_COLS] = {0};
		int			c = 0;

		values[c++] = TimestampTzGetDatum(b->bucket_start);
		values[c++] = Int64GetDatum(b->ticks);
		values[c++] = Float8GetDatum(b->ticks > 0 ? (double) b->active_samples / b->ticks : 0.0);
		values[c++] = Int64GetDatum(b->idle_samples);
		values[c++] = Int64GetDatum(b->cpu_samples);
		for (int k = 0; k < PGC_NUM_WAIT_CLASSES; k++)
			values[c++] = Int64GetDatum(b->class_samples[k]);
		for (int k = 0; k < PGC_NUM_NAMED_WAITS; k++)
		{
			if (named_found[k])
				values[c] = Int64GetDatum(b->named_samples[k]);
			else
				nulls[c] = true;	/* no such wait event in this version */
			c++;
		}
		values[c++] = Int32GetDatum(b->max_overflowed_backends);
		if (b->slru_known)
		{
			values[c++] = Int64GetDatum(b->subtrans_lookups);
			values[c++] = Int64GetDatum(b->subtrans_reads);
		}
		else
		{
			nulls[c++] = true;
			nulls[c++] = true;
		}
		if (b->horizon_xid_age >= 0)
			values[c++] = Int64GetDatum(b->horizon_xid_age);
		else
			nulls[c++] = true;
		if (b->xids_known)
			values[c++] = Int64GetDatum(b->xids_assigned);
		else
			nulls[c++] = true;
		if (b->xids_known && b->slru_known)
			values[c++] = Int64GetDatum(b->subtrans_reader_lookups);
		else
			nulls[c++] = true;
		Assert(c == HISTORY_COLS);
		pgc_row_cache_put(&history_rows, tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	pgc_row_cache_end(&history_rows);
	return (Datum) 0;
}

/*
 * 1.1 added memory_bytes; 1.4 last_tick_at, next_tick_due, stale and the
 * doze's dozing, dozes and doze_wakeups.
 */
static const PgcResultColumn status_columns[] = {
	{"running", BOOLOID, PGC_SQL_V(1, 0)},
	{"pid", INT4OID, PGC_SQL_V(1, 0)},
	{"started_at", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"enabled", BOOLOID, PGC_SQL_V(1, 0)},
	{"period_ms", INT4OID, PGC_SQL_V(1, 0)},
	{"ticks", INT8OID, PGC_SQL_V(1, 0)},
	{"last_tick_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"max_tick_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"mean_tick_us", FLOAT8OID, PGC_SQL_V(1, 0)},
	{"profile_entries", INT4OID, PGC_SQL_V(1, 0)},
	{"profile_max", INT4OID, PGC_SQL_V(1, 0)},
	{"profile_evictions", INT8OID, PGC_SQL_V(1, 0)},
	{"history_buckets", INT4OID, PGC_SQL_V(1, 0)},
	{"memory_bytes", INT8OID, PGC_SQL_V(1, 1)},
	{"last_tick_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"next_tick_due", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"stale", BOOLOID, PGC_SQL_V(1, 4)},
	{"dozing", BOOLOID, PGC_SQL_V(1, 4)},
	{"dozes", INT8OID, PGC_SQL_V(1, 4)},
	{"doze_wakeups", INT8OID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape status_shape = {
	"pg_contention_sampler_status", status_columns, lengthof(status_columns)
};

#define STATUS_COLS lengthof(status_columns)

/*
 * How late a promised tick may be before the sampler counts as stale:
 * 5 s, or 5 periods when that is longer.  The worker publishes when its
 * next tick is due (it sleeps exactly until then), so lateness is not the
 * sampler's own choice: it is the time the machine takes to schedule it,
 * a tick's own time (max_tick_us), and a save of the stores' file between
 * two ticks (a write and an fsync, which a busy disk can stretch to
 * seconds).  5 s rides over those; a sampler stopped for longer is seen
 * within 5 s of its due tick.
 */
#define STALE_MARGIN_US(period_ms) \
	((TimestampTz) Max(5000, 5 * (period_ms)) * 1000)

/*
 * Stale: sampling is on, and the tick the worker promised is later than the
 * margin (it stopped, hangs, or has exited without coming back).  Before its
 * first promise (the server starting) nothing is known: not stale.
 */
static bool
sampler_is_stale(const PgcSamplerStatus *s, TimestampTz now)
{
	return s->enabled && s->next_tick_due != 0 &&
		now > s->next_tick_due + STALE_MARGIN_US(s->period_ms);
}

/* pg_contention_sampler_status(): is the worker running, and what it costs. */
Datum
pg_contention_sampler_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS];
	bool		nulls[STATUS_COLS] = {0};
	PgcSamplerStatus s;

	pgc_require_loaded();
	tupdesc = pgc_result_tupdesc(fcinfo, &status_shape);
	pgc_sampler_copy_status(&s, NULL);

	values[0] = BoolGetDatum(s.worker_pid != 0);
	if (s.worker_pid != 0)
	{
		values[1] = Int32GetDatum(s.worker_pid);
		values[2] = TimestampTzGetDatum(s.worker_started);
	}
	else
		nulls[1] = nulls[2] = true;
	values[3] = BoolGetDatum(s.enabled);
	values[4] = Int32GetDatum(s.period_ms);
	values[5] = Int64GetDatum(s.ticks);
	values[6] = Float8GetDatum(s.last_tick_us);
	values[7] = Float8GetDatum(s.max_tick_us);
	values[8] = Float8GetDatum(s.ticks > 0 ? s.total_tick_us / s.ticks : 0.0);
	values[9] = Int32GetDatum(s.profile_used);
	values[10] = Int32GetDatum(pgc_max_profile_entries);
	values[11] = Int64GetDatum(s.profile_evictions);
	values[12] = Int32GetDatum((int32) Min(s.buckets_written, (int64) pgc_history_seconds));
	if (s.worker_pid != 0 && s.memory_bytes > 0)
		values[13] = Int64GetDatum(s.memory_bytes);
	else
		nulls[13] = true;
	if (s.last_tick_at != 0)
		values[14] = TimestampTzGetDatum(s.last_tick_at);
	else
		nulls[14] = true;
	if (s.enabled && s.next_tick_due != 0)
		values[15] = TimestampTzGetDatum(s.next_tick_due);
	else
		nulls[15] = true;
	values[16] = BoolGetDatum(sampler_is_stale(&s, GetCurrentTimestamp()));
	values[17] = BoolGetDatum(s.worker_pid != 0 && s.enabled && s.dozing);
	values[18] = Int64GetDatum(s.dozes);
	values[19] = Int64GetDatum(s.doze_wakeups);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
