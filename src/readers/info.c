/*-------------------------------------------------------------------------
 *
 * info.c
 *		pg_contention_info() and pg_contention_reset(): the functions about
 *		every store, their capacities, fill, eviction and drop counters and
 *		file times, and their reset.  Each store gives its own figures and
 *		resets itself under its own lock (stores/).
 *
 * Owns no shared state and takes no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"
#include "../stores/events.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

PG_FUNCTION_INFO_V1(pg_contention_reset);
PG_FUNCTION_INFO_V1(pg_contention_info);

/*
 * pg_contention_reset(): empty every store (statements, events, the
 * sampler's profile and history, the old-snapshot totals) and their
 * eviction and drop counters.  Each store takes its own lock, one after
 * the other.  EXECUTE is revoked from PUBLIC in the install script.
 */
Datum
pg_contention_reset(PG_FUNCTION_ARGS)
{
	pgc_require_loaded();
	pgc_reset_stores();
	PG_RETURN_VOID();
}

/* 1.2 added the file's times. */
static const PgcResultColumn info_columns[] = {
	{"stats_reset", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"statements_max", INT4OID, PGC_SQL_V(1, 0)},
	{"statements", INT4OID, PGC_SQL_V(1, 0)},
	{"statement_evictions", INT8OID, PGC_SQL_V(1, 0)},
	{"events_max", INT4OID, PGC_SQL_V(1, 0)},
	{"events_written", INT8OID, PGC_SQL_V(1, 0)},
	{"events_dropped", INT8OID, PGC_SQL_V(1, 0)},
	{"last_saved", TIMESTAMPTZOID, PGC_SQL_V(1, 2)},
	{"last_loaded", TIMESTAMPTZOID, PGC_SQL_V(1, 2)},
	{"loaded_file_saved_at", TIMESTAMPTZOID, PGC_SQL_V(1, 2)},
	{"incidents_max", INT4OID, PGC_SQL_V(1, 4)},
	{"incidents", INT4OID, PGC_SQL_V(1, 4)},
	{"incident_evictions", INT8OID, PGC_SQL_V(1, 4)},
	{"incidents_not_opened", INT8OID, PGC_SQL_V(1, 4)},
	{"incidents_opened", JSONBOID, PGC_SQL_V(1, 4)},
	{"findings_not_kept", INT8OID, PGC_SQL_V(1, 4)},
	{"incident_open_evictions", INT8OID, PGC_SQL_V(1, 4)},
	{"index_names_max", INT4OID, PGC_SQL_V(1, 4)},
	{"index_names", INT4OID, PGC_SQL_V(1, 4)},
	{"index_name_evictions", INT8OID, PGC_SQL_V(1, 4)},
	{"event_role_evictions", INT8OID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape info_shape = {
	"pg_contention_info", info_columns, lengthof(info_columns)
};

#define INFO_COLS lengthof(info_columns)

/*
 * pg_contention_info(): capacities, fill and the eviction and drop counters
 * of the bounded stores, and when they were last reset.
 */
Datum
pg_contention_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[INFO_COLS];
	bool		nulls[INFO_COLS] = {0};
	int64		statements;
	int64		evictions;
	int64		written;
	TimestampTz reset;
	TimestampTz saved;
	TimestampTz loaded;
	TimestampTz loaded_saved_at;

	pgc_require_loaded();
	tupdesc = pgc_result_tupdesc(fcinfo, &info_shape);

	pgc_statements_info(&statements, &evictions);
	pgc_events_info(&written);
	reset = pgc_stats_reset_time();

	values[0] = TimestampTzGetDatum(reset);
	values[1] = Int32GetDatum(pgc_max_statements);
	values[2] = Int32GetDatum((int32) statements);
	values[3] = Int64GetDatum(evictions);
	values[4] = Int32GetDatum(pgc_max_events);
	values[5] = Int64GetDatum(written);
	values[6] = Int64GetDatum(Max(written - pgc_max_events, 0));
	pgc_persist_info(&saved, &loaded, &loaded_saved_at);
	values[7] = TimestampTzGetDatum(saved);
	nulls[7] = (saved == 0);
	values[8] = TimestampTzGetDatum(loaded);
	nulls[8] = (loaded == 0);
	values[9] = TimestampTzGetDatum(loaded_saved_at);
	nulls[9] = (loaded_saved_at == 0);
	if (tupdesc->natts > 10)
	{
		int			used;
		int64		incident_evictions;
		int64		not_opened;
		int64		open_evictions;
		char	   *opened;

		pgc_incidents_info(&used, &incident_evictions, &not_opened, &open_evictions, &opened);
		values[10] = Int32GetDatum(pgc_max_incidents);
		values[11] = Int32GetDatum(used);
		values[12] = Int64GetDatum(incident_evictions);
		values[13] = Int64GetDatum(not_opened);
		values[14] = DirectFunctionCall1(jsonb_in, CStringGetDatum(opened));
		values[15] = Int64GetDatum(pgc_findings_latest_too_large());
		values[16] = Int64GetDatum(open_evictions);
	}
	if (tupdesc->natts > 17)
	{
		int			used;
		int64		name_evictions;

		pgc_index_names_info(&used, &name_evictions);
		values[17] = Int32GetDatum(pgc_index_names_max());
		values[18] = Int32GetDatum(used);
		values[19] = Int64GetDatum(name_evictions);
		values[20] = Int64GetDatum(pgc_events_role_evictions());
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}


