/*-------------------------------------------------------------------------
 *
 * statements_views.c
 *		The SQL functions over the statement store's totals:
 *		pg_contention_statements() and pg_contention_index_scans().
 *
 * Owns no shared state.  They read copies of the entries
 * (stores/statements_copy.c), masked by who reads them (activity.c).
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/statements.h"
#include "readers.h"

#include "funcapi.h"
#include "utils/builtins.h"
PG_FUNCTION_INFO_V1(pg_contention_statements);
PG_FUNCTION_INFO_V1(pg_contention_index_scans);


/*
 * The worst execution's constants, masked like the query text: NULL when
 * none were kept.
 */
void
put_literals(const char *literals, bool visible, Oid dbid, Datum *values,
			 bool *nulls, int col)
{
	nulls[col] = literals[0] == '\0';
	if (!nulls[col])
		values[col] = pgc_masked_text_datum(visible, literals, dbid);
}

/*
 * The key columns both views start with: user, database, and the query id,
 * which other roles see only with pg_read_all_stats.  Returns whether the
 * caller may show the statement's text.
 */
bool
put_key_columns(const PgcStatementEntry *e, Datum *values, bool *nulls)
{
	bool		visible = pgc_can_see_details(e->key.userid);

	values[0] = ObjectIdGetDatum(e->key.userid);
	values[1] = ObjectIdGetDatum(e->key.dbid);
	if (visible)
		values[2] = Int64GetDatum(e->key.query_id);
	else
		nulls[2] = true;
	return visible;
}

/* 1.1 added the columns from rows on. */
static const PgcResultColumn statement_columns[] = {
	{"userid", OIDOID, PGC_SQL_V(1, 0)},
	{"dbid", OIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"calls", INT8OID, PGC_SQL_V(1, 0)},
	{"suboverflowed_calls", INT8OID, PGC_SQL_V(1, 0)},
	{"standby_calls", INT8OID, PGC_SQL_V(1, 0)},
	{"overflow_events", INT8OID, PGC_SQL_V(1, 0)},
	{"first_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"last_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
	{"rows", INT8OID, PGC_SQL_V(1, 1)},
	{"shared_blks_hit", INT8OID, PGC_SQL_V(1, 1)},
	{"shared_blks_read", INT8OID, PGC_SQL_V(1, 1)},
	{"max_subxacts", INT4OID, PGC_SQL_V(1, 1)},
	{"near_overflow_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape statement_shape = {
	"pg_contention_statements", statement_columns, lengthof(statement_columns)
};

#define STATEMENT_COLS lengthof(statement_columns)

/*
 * pg_contention_statements(subtrans_only): every entry, or (1.4; before,
 * no argument) only those that ran on suboverflowed snapshots or have
 * pg_subtrans waits in the wait profile, which the view's filter
 * "suboverflowed_calls > 0 OR subtrans_wait_samples > 0" keeps; tuples
 * built after copying.
 */
Datum
pg_contention_statements(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	char	   *copy;
	long		n;
	Size		size = entry_size();
	bool		subtrans_only = PG_NARGS() > 0 && PG_GETARG_BOOL(0);

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &statement_shape, &tupdesc);
	if (subtrans_only)
	{
		int			nwaiters;
		PgcProfileKey *waiters = pgc_sampler_subtrans_keys(&nwaiters);

		copy = copy_subtrans_entries(&n, waiters, nwaiters);
		pfree(waiters);
	}
	else
		copy = copy_entries(&n);

	for (long i = 0; i < n; i++)
	{
		PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);
		Datum		values[STATEMENT_COLS] = {0};
		bool		nulls[STATEMENT_COLS] = {0};
		bool		visible = put_key_columns(e, values, nulls);

		values[3] = Int64GetDatum(e->calls);
		values[4] = Int64GetDatum(e->suboverflowed_calls);
		values[5] = Int64GetDatum(e->standby_calls);
		values[6] = Int64GetDatum(e->overflow_events);
		values[7] = TimestampTzGetDatum(e->first_seen);
		values[8] = TimestampTzGetDatum(e->last_seen);
		values[9] = pgc_masked_text_datum(visible, e->query, e->key.dbid);
		values[10] = Int64GetDatum(e->rows);
		values[11] = Int64GetDatum(e->shared_blks_hit);
		values[12] = Int64GetDatum(e->shared_blks_read);
		values[13] = Int32GetDatum(e->max_subxacts);
		values[14] = Int64GetDatum(e->near_overflow_calls);
		values[15] = CStringGetTextDatum(e->application_name);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

/* 1.1 added bitmap_lossy_pages. */
static const PgcResultColumn index_scan_columns[] = {
	{"userid", OIDOID, PGC_SQL_V(1, 0)},
	{"dbid", OIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"indexrelid", OIDOID, PGC_SQL_V(1, 0)},
	{"scans", INT8OID, PGC_SQL_V(1, 0)},
	{"entries_read", INT8OID, PGC_SQL_V(1, 0)},
	{"live_fetched", INT8OID, PGC_SQL_V(1, 0)},
	{"dead_visits", INT8OID, PGC_SQL_V(1, 0)},
	{"max_dead_visits_per_scan", INT8OID, PGC_SQL_V(1, 0)},
	{"index_only_scans", INT8OID, PGC_SQL_V(1, 0)},
	{"bitmap_scans", INT8OID, PGC_SQL_V(1, 0)},
	{"other_entries_read", INT8OID, PGC_SQL_V(1, 0)},
	{"last_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
	{"indexes_untracked", INT8OID, PGC_SQL_V(1, 0)},
	{"bitmap_lossy_pages", INT8OID, PGC_SQL_V(1, 1)},
	{"worst_literals", TEXTOID, PGC_SQL_V(1, 4)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape index_scan_shape = {
	"pg_contention_index_scans", index_scan_columns, lengthof(index_scan_columns)
};

#define INDEX_SCAN_COLS lengthof(index_scan_columns)

/*
 * pg_contention_index_scans(dead_only): one row per (statement entry,
 * index).  The view sums them per database, index and query id, and names
 * the index.  dead_only (1.4; before, no argument): only the rows of the
 * statements' indexes that visited dead entries, all of their rows.
 */
Datum
pg_contention_index_scans(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	char	   *copy;
	long		n;
	Size		size = entry_size();
	bool		dead_only = PG_NARGS() > 0 && PG_GETARG_BOOL(0);
	IndexGroupKey *groups = NULL;
	long		ngroups = 0;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &index_scan_shape, &tupdesc);
	if (dead_only)
		copy = copy_dead_index_entries(&n, &groups, &ngroups);
	else
		copy = copy_entries(&n);

	for (long i = 0; i < n; i++)
	{
		PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);

		for (int k = 0; k < PGC_INDEX_SLOTS; k++)
		{
			PgcIndexCounters *c = &e->indexes[k];
			Datum		values[INDEX_SCAN_COLS] = {0};
			bool		nulls[INDEX_SCAN_COLS] = {0};

			bool		visible;

			if (c->indexoid == InvalidOid ||
				(dead_only && !in_index_groups(groups, ngroups, e->key.dbid,
											   e->key.query_id, c->indexoid)))
				continue;
			visible = put_key_columns(e, values, nulls);
			values[3] = ObjectIdGetDatum(c->indexoid);
			values[4] = Int64GetDatum(c->scans);
			values[5] = Int64GetDatum(c->entries_read);
			values[6] = Int64GetDatum(c->live_fetched);
			values[7] = Int64GetDatum(c->dead_visits);
			values[8] = Int64GetDatum(c->max_dead_visits);
			values[9] = Int64GetDatum(c->index_only_scans);
			values[10] = Int64GetDatum(c->bitmap_scans);
			values[11] = Int64GetDatum(c->other_entries_read);
			values[12] = TimestampTzGetDatum(e->last_seen);
			values[13] = pgc_masked_text_datum(visible, e->query, e->key.dbid);
			values[14] = Int64GetDatum(e->indexes_untracked);
			values[15] = Int64GetDatum(c->bitmap_lossy_pages);
			/* The statement's worst execution in the recent periods. */
			put_literals(e->current.literals_dead >= e->previous.literals_dead ?
						 e->current.literals : e->previous.literals,
						 visible, e->key.dbid, values, nulls, 16);
			values[17] = CStringGetTextDatum(e->application_name);
			tuplestore_putvalues(tupstore, tupdesc, values, nulls);
		}
	}
	pfree(copy);
	return (Datum) 0;
}

