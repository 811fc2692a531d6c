/*-------------------------------------------------------------------------
 *
 * problems.c
 *		pg_contention_problems(): the problems pg_contention finds, from
 *		the one list (problem_list.h), for the SQL that names them: the
 *		findings' order, the metrics' series, the incidents' rules.
 *
 * Owns no shared state and takes no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "../problem_list.h"

PG_FUNCTION_INFO_V1(pg_contention_problems);

static const PgcResultColumn problems_columns[] = {
	{"problem", TEXTOID, PGC_SQL_V(1, 4)},
	{"rank", INT4OID, PGC_SQL_V(1, 4)},
	{"incidents", BOOLOID, PGC_SQL_V(1, 4)},
	{"horizon", BOOLOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape problems_shape = {
	"pg_contention_problems", problems_columns, lengthof(problems_columns)
};

#define PROBLEMS_COLS lengthof(problems_columns)

/* The incidents file counts the list's first problems (problem_list.h). */
StaticAssertDecl(PGC_NUM_PROBLEMS >= PGC_NUM_COUNTED_PROBLEMS,
				 "the incidents file counts problems of the list");

Datum
pg_contention_problems(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &problems_shape, &tupdesc);
	for (int i = 0; i < PGC_NUM_PROBLEMS; i++)
	{
		Datum		values[PROBLEMS_COLS];
		bool		nulls[PROBLEMS_COLS] = {0};

		values[0] = CStringGetTextDatum(pgc_problems[i].name);
		values[1] = Int32GetDatum(pgc_problems[i].rank);
		values[2] = BoolGetDatum(pgc_problems[i].incidents);
		values[3] = BoolGetDatum(pgc_problems[i].horizon);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
