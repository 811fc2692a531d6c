/*-------------------------------------------------------------------------
 *
 * findings_kept.c
 *		pg_contention_findings_kept(): the incidents worker's last
 *		evaluation of the findings (stores/findings_latest.c), when it is
 *		the caller's own answer: the store judges its age, database and
 *		settings; this reader, whether the caller sees every text the
 *		worker saw.
 *
 * Owns no shared state and takes no lock (the store copies its rows out
 * under its own).
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

PG_FUNCTION_INFO_V1(pg_contention_findings_kept);

static const PgcResultColumn kept_columns[] = {
	{"evaluated_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"problem", TEXTOID, PGC_SQL_V(1, 4)},
	{"severity", TEXTOID, PGC_SQL_V(1, 4)},
	{"subject", TEXTOID, PGC_SQL_V(1, 4)},
	{"evidence", TEXTOID, PGC_SQL_V(1, 4)},
	{"advice", TEXTOID, PGC_SQL_V(1, 4)},
	{"details", JSONBOID, PGC_SQL_V(1, 4)},
	{"since", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape kept_shape = {
	"pg_contention_findings_kept", kept_columns, lengthof(kept_columns)
};

#define KEPT_COLS lengthof(kept_columns)

/* A text column, or NULL. */
static void
put_text(Datum *values, bool *nulls, int col, const char *s)
{
	nulls[col] = s == NULL;
	if (s != NULL)
		values[col] = CStringGetTextDatum(s);
}

/*
 * pg_contention_findings_kept(): a row per finding of the worker's last
 * evaluation, or, when it found nothing, one row whose columns but
 * evaluated_at are NULL.  No row at all: the caller must evaluate
 * (pg_contention_findings).
 */
Datum
pg_contention_findings_kept(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	TimestampTz at;
	int			nrows;
	PgcFindingRow *rows;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &kept_shape, &tupdesc);

	/*
	 * Only a reader who sees every text the worker (a superuser) saw: the
	 * rules mask others' statements for anyone else.
	 */
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		return (Datum) 0;
	rows = pgc_findings_latest_read(&at, &nrows);
	if (rows == NULL)
		return (Datum) 0;

	for (int i = 0; i < nrows; i++)
	{
		Datum		values[KEPT_COLS] = {0};
		bool		nulls[KEPT_COLS] = {0};

		values[0] = TimestampTzGetDatum(at);
		put_text(values, nulls, 1, rows[i].problem);
		put_text(values, nulls, 2, rows[i].severity);
		put_text(values, nulls, 3, rows[i].subject);
		put_text(values, nulls, 4, rows[i].evidence);
		put_text(values, nulls, 5, rows[i].advice);
		nulls[6] = rows[i].details == NULL;
		if (rows[i].details != NULL)
			values[6] = DirectFunctionCall1(jsonb_in, CStringGetDatum(rows[i].details));
		values[7] = TimestampTzGetDatum(rows[i].since);
		nulls[7] = rows[i].since == 0;
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	if (nrows == 0)
	{
		Datum		values[KEPT_COLS] = {0};
		bool		nulls[KEPT_COLS];

		memset(nulls, true, sizeof(nulls));
		values[0] = TimestampTzGetDatum(at);
		nulls[0] = false;
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
