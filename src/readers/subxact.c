/*-------------------------------------------------------------------------
 *
 * subxact.c
 *		Subtransaction caches as SQL sees them: pg_contention_subxact, the
 *		live view of every backend's cache, and
 *		pg_contention_overflow_events, the ring of overflow events and each
 *		(database, role)'s latest.
 *
 * Owns no shared state.  The live view reads other backends' PGPROCs in
 * one pass under ProcArrayLock held in shared mode, and their backend
 * status through the pgstat snapshot; the events are copied under the
 * ring's lock in shared mode (stores/events.c).
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/events.h"
#include "readers.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "storage/procarray.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_subxact);
PG_FUNCTION_INFO_V1(pg_contention_overflow_events);

static const PgcResultColumn event_columns[] = {
	{"event_time", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"pid", INT4OID, PGC_SQL_V(1, 0)},
	{"datid", OIDOID, PGC_SQL_V(1, 0)},
	{"usesysid", OIDOID, PGC_SQL_V(1, 0)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 0)},
	{"top_xid", XIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"nested_query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"nesting_depth", INT4OID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
	{"statement_subxacts", INT8OID, PGC_SQL_V(1, 4)},
	{"statement_rows", INT8OID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape event_shape = {
	"pg_contention_overflow_events", event_columns, lengthof(event_columns)
};

#define EVENT_COLS lengthof(event_columns)

/*
 * The rows of pg_contention_overflow_events, kept for the rest of the
 * client's statement while no event is written or reset (rowcache.c): the
 * findings read them in several rules.
 */
static PgcRowCache event_rows;

/*
 * pg_contention_overflow_events(): the ring, oldest first, after the
 * latest events of the (database, role)s the ring no longer holds.  The used slots'
 * events are copied out under the lock in shared mode (in ring order: the
 * slots before the oldest one come after it); tuples are built after it is
 * released, or an earlier call's given back (event_rows).
 */
Datum
pg_contention_overflow_events(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcEventsCopy copy;
	uint64		version[2];
	int			n;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &event_shape, &tupdesc);

	/* The rows of an earlier call of this statement, if no event came since. */
	pgc_events_version(version);
	if (pgc_row_cache_replay(&event_rows, version, tupdesc, tupstore))
		return (Datum) 0;
	n = pgc_events_copy(&copy, version);

	pgc_row_cache_begin(&event_rows, version, tupdesc);
	for (int i = 0; i < n; i++)
	{
		const OverflowEvent *ev = (const OverflowEvent *) (copy.heads + i * copy.stride);
		Datum		values[EVENT_COLS] = {0};
		bool		nulls[EVENT_COLS] = {0};
		bool		visible = pgc_can_see_details(ev->userid);

		values[0] = TimestampTzGetDatum(ev->event_time);
		values[1] = Int32GetDatum(ev->pid);
		values[2] = ObjectIdGetDatum(ev->dbid);
		values[3] = ObjectIdGetDatum(ev->userid);
		values[4] = CStringGetTextDatum(ev->application_name);
		values[5] = TransactionIdGetDatum(ev->top_xid);
		if (visible && ev->query_id != 0)
			values[6] = Int64GetDatum(ev->query_id);
		else
			nulls[6] = true;
		if (visible && ev->nested_query_id != 0)
			values[7] = Int64GetDatum(ev->nested_query_id);
		else
			nulls[7] = true;
		values[8] = Int32GetDatum(ev->nesting_depth);
		/* Captured in its database's encoding: made valid in ours. */
		values[9] = pgc_masked_text_datum(visible, copy.texts + copy.text_at[i], ev->dbid);
		/* Given at the statement's end: unknown until then, or if it failed. */
		if (ev->statement_subxacts >= 0)
			values[10] = Int64GetDatum(ev->statement_subxacts);
		else
			nulls[10] = true;
		if (ev->statement_rows >= 0)
			values[11] = Int64GetDatum(ev->statement_rows);
		else
			nulls[11] = true;
		pgc_row_cache_put(&event_rows, tupstore, tupdesc, values, nulls);
	}
	pgc_row_cache_end(&event_rows);
	pgc_events_copy_free(&copy);
	return (Datum) 0;
}

static const PgcResultColumn subxact_columns[] = {
	{"pid", INT4OID, PGC_SQL_V(1, 0)},
	{"datid", OIDOID, PGC_SQL_V(1, 0)},
	{"usesysid", OIDOID, PGC_SQL_V(1, 0)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 0)},
	{"backend_type", TEXTOID, PGC_SQL_V(1, 0)},
	{"state", TEXTOID, PGC_SQL_V(1, 0)},
	{"xact_start", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"top_xid", XIDOID, PGC_SQL_V(1, 0)},
	{"backend_xmin", XIDOID, PGC_SQL_V(1, 0)},
	{"subxact_count", INT4OID, PGC_SQL_V(1, 0)},
	{"subxact_overflowed", BOOLOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
};
static const PgcResultShape subxact_shape = {
	"pg_contention_subxact", subxact_columns, lengthof(subxact_columns)
};

#define SUBXACT_COLS lengthof(subxact_columns)

Datum
pg_contention_subxact(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcBackend *backends;
	int			n;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &subxact_shape, &tupdesc);
	backends = pgc_collect_backends(&n);

	for (int i = 0; i < n; i++)
	{
		PgBackendStatus *be = backends[i].status;
		PgcProcState *st = backends[i].proc;
		Datum		values[SUBXACT_COLS] = {0};
		bool		nulls[SUBXACT_COLS] = {0};

		/* Only backends that have a transaction open. */
		if (be->st_xact_start_timestamp == 0 &&
			!TransactionIdIsValid(st->xid) &&
			!TransactionIdIsValid(st->xmin) &&
			st->subxact_count == 0 && !st->subxact_overflowed)
			continue;

		/* Visible to everyone, as in pg_stat_activity. */
		values[0] = Int32GetDatum(st->pid);
		pgc_put_oid(values, nulls, 1, be->st_databaseid);
		pgc_put_oid(values, nulls, 2, be->st_userid);
		if (be->st_appname)
			values[3] = CStringGetTextDatum(be->st_appname);
		else
			nulls[3] = true;
		values[4] = CStringGetTextDatum(pgc_backend_type_name(be));
		if (TransactionIdIsValid(st->xid))
			values[7] = TransactionIdGetDatum(st->xid);
		else
			nulls[7] = true;
		if (TransactionIdIsValid(st->xmin))
			values[8] = TransactionIdGetDatum(st->xmin);
		else
			nulls[8] = true;
		values[9] = Int32GetDatum(st->subxact_count);
		values[10] = BoolGetDatum(st->subxact_overflowed);

		/* State, times and statement only for the owner and pg_read_all_stats. */
		nulls[6] = nulls[11] = true;
		if (pgc_put_state_and_query(be, values, nulls, 5, 12))
		{
			int64		query_id = PGC_BEENTRY_QUERY_ID(be);

			if (be->st_xact_start_timestamp != 0)
			{
				values[6] = TimestampTzGetDatum(be->st_xact_start_timestamp);
				nulls[6] = false;
			}
			if (query_id != 0)
			{
				values[11] = Int64GetDatum(query_id);
				nulls[11] = false;
			}
		}
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---- the file (persist.c) ---- */
