/*-------------------------------------------------------------------------
 *
 * srf.c
 *		The entry of the SQL functions that return rows: the contract
 *		between a function's SQL declaration and the row the library
 *		builds, and the set-returning-function boilerplate.
 *
 * A newer library runs beside an older installed version of the SQL
 * objects until ALTER EXTENSION UPDATE.  Each row-returning function
 * describes its columns in a PgcResultShape: every column the newest
 * version declares, with its type and the version that added it.  The
 * released declarations are prefixes of that list (a version only ever
 * appended columns), so the accepted column counts are where "since"
 * changes along the list, and the library fills the current columns and
 * the tuple keeps the declared prefix.  Any other declaration, of a wrong
 * count or type, fails here, before a row is built: a datum of one type
 * read as another would be a wrong answer or a crash.
 *
 * Owns no shared state and takes no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

/* Is "ncols" the column count of a released declaration of "shape"? */
static bool
is_released_count(const PgcResultShape *shape, int ncols)
{
	if (ncols < 1 || ncols > shape->ncolumns)
		return false;
	return ncols == shape->ncolumns ||
		shape->columns[ncols].since != shape->columns[ncols - 1].since;
}

/* "22 or 23", "10, 14 or 15": the released column counts, for messages. */
static char *
released_counts(const PgcResultShape *shape)
{
	StringInfoData buf;
	int			left = 0;

	for (int n = 1; n <= shape->ncolumns; n++)
		if (is_released_count(shape, n))
			left++;
	initStringInfo(&buf);
	for (int n = 1; n <= shape->ncolumns; n++)
	{
		if (!is_released_count(shape, n))
			continue;
		left--;
		appendStringInfo(&buf, "%d%s", n,
						 left > 1 ? ", " : left == 1 ? " or " : "");
	}
	return buf.data;
}

/* "1.0 to 1.3", or "1.3": the versions from "since" to this library's. */
static char *
versions_from(int since)
{
	char	   *first = psprintf("%d.%d", since / 100, since % 100);

	if (strcmp(first, PGC_VERSION) == 0)
		return first;
	return psprintf("%s to %s", first, PGC_VERSION);
}

/*
 * Check that a function's result descriptor, from its SQL declaration, is
 * one of the released declarations of "shape": their column count and
 * their types.  Names are not checked: the row does not depend on them.
 */
void
pgc_check_result_shape(TupleDesc tupdesc, const PgcResultShape *shape)
{
#ifdef USE_ASSERT_CHECKING
	/* Columns in order of the version that added them (see above). */
	for (int i = 1; i < shape->ncolumns; i++)
		Assert(shape->columns[i - 1].since <= shape->columns[i].since);
#endif

	if (!is_released_count(shape, tupdesc->natts))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg_plural("%s() is declared with %d column, this library fills %s",
							   "%s() is declared with %d columns, this library fills %s",
							   tupdesc->natts,
							   shape->function, tupdesc->natts,
							   released_counts(shape)),
				 errdetail("Its SQL declaration is none of those of pg_contention %s.",
						   versions_from(shape->columns[0].since)),
				 tupdesc->natts > shape->ncolumns ?
				 errhint("Install the pg_contention library of the extension's installed version, and restart the server.") :
				 errhint("Run ALTER EXTENSION pg_contention UPDATE.")));

	for (int i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(tupdesc, i);
		const PgcResultColumn *column = &shape->columns[i];

		if (attr->attisdropped || attr->atttypid != column->type)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s() declares column %d as %s, this library fills %s",
							shape->function, i + 1,
							attr->attisdropped ? "dropped" :
							format_type_be(attr->atttypid),
							format_type_be(column->type)),
					 errdetail("Column %d is %s in the declarations of pg_contention %s.",
							   i + 1, column->name, versions_from(column->since)),
					 errhint("Run ALTER EXTENSION pg_contention UPDATE, and call the extension's own functions.")));
	}
}

/*
 * The declared result descriptor of a function returning rows, checked
 * against "shape".  A declaration without columns (a scalar, or a record
 * called without a column list) is a wrong shape too.
 */
TupleDesc
pgc_result_tupdesc(FunctionCallInfo fcinfo, const PgcResultShape *shape)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s() is declared without result columns, this library fills %s",
						shape->function, released_counts(shape)),
				 errdetail("Its SQL declaration is none of those of pg_contention %s.",
						   versions_from(shape->columns[0].since)),
				 errhint("Run ALTER EXTENSION pg_contention UPDATE.")));
	pgc_check_result_shape(tupdesc, shape);
	return tupdesc;
}

/*
 * Set up a materialised set-returning function: check that the caller can
 * take a tuplestore and that the declared columns are a shape this library
 * fills, and create the tuplestore in the per-query context.  Written out
 * rather than InitMaterializedSRF() because that only exists from PG15.
 */
Tuplestorestate *
pgc_materialize(FunctionCallInfo fcinfo, const PgcResultShape *shape,
				TupleDesc *tupdesc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext oldcontext;
	Tuplestorestate *tupstore;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialize mode required, but it is not allowed in this context")));

	oldcontext = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	*tupdesc = pgc_result_tupdesc(fcinfo, shape);
	*tupdesc = CreateTupleDescCopy(*tupdesc);
	tupstore = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(oldcontext);

	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tupstore;
	rsinfo->setDesc = *tupdesc;
	return tupstore;
}
