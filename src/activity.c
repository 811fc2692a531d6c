/*-------------------------------------------------------------------------
 *
 * activity.c
 *		Helpers shared by the views that describe backends: who may see
 *		what (the pg_stat_activity rules), how backend states and types are
 *		named, and the set-returning-function boilerplate.
 *
 * Owns no shared state and takes no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "parser/scansup.h"
#include "postmaster/bgworker.h"
#include "utils/acl.h"

/*
 * May the current user see the details (state, query, query id, times) of a
 * backend owned by "owner"?  The same rule as pg_stat_activity
 * (HAS_PGSTAT_PERMISSIONS): members of pg_read_all_stats, and members of the
 * owning role.
 */
bool
pgc_can_see_details(Oid owner)
{
	return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ||
		has_privs_of_role(GetUserId(), owner);
}

/* The names pg_stat_activity.state uses. */
const char *
pgc_backend_state_name(int state)
{
	switch ((BackendState) state)
	{
		case STATE_IDLE:
			return "idle";
		case STATE_RUNNING:
			return "active";
		case STATE_IDLEINTRANSACTION:
			return "idle in transaction";
		case STATE_FASTPATH:
			return "fastpath function call";
		case STATE_IDLEINTRANSACTION_ABORTED:
			return "idle in transaction (aborted)";
		case STATE_DISABLED:
			return "disabled";
			PGC_CASE_STATE_STARTING
		case STATE_UNDEFINED:
			break;
	}
	return NULL;
}

/* The names pg_stat_activity.backend_type uses. */
const char *
pgc_backend_type_name(const PgBackendStatus *beentry)
{
	if (beentry->st_backendType == B_BG_WORKER)
	{
		const char *name = GetBackgroundWorkerTypeByPid(beentry->st_procpid);

		if (name != NULL)
			return name;
	}
	return GetBackendTypeDesc(beentry->st_backendType);
}

/*
 * Set up a materialised set-returning function: check that the caller can
 * take a tuplestore, and create it in the per-query context.  Written out
 * rather than InitMaterializedSRF() because that only exists from PG15.
 */
Tuplestorestate *
pgc_materialize(FunctionCallInfo fcinfo, TupleDesc *tupdesc)
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
	if (get_call_result_type(fcinfo, NULL, tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	*tupdesc = CreateTupleDescCopy(*tupdesc);
	tupstore = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(oldcontext);

	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tupstore;
	rsinfo->setDesc = *tupdesc;
	return tupstore;
}

/*
 * Copy one statement out of a source text that may hold several (a
 * multi-statement simple query): the stmt_location/stmt_len slice, without
 * leading white space, truncated at a character boundary to fit destsize
 * bytes with its terminator.  A NULL source gives an empty string.
 */
void
pgc_copy_statement_text(char *dest, int destsize, const char *source_text,
						int stmt_location, int stmt_len)
{
	const char *start;
	int			len;

	if (source_text == NULL)
	{
		dest[0] = '\0';
		return;
	}
	if (stmt_location < 0)
	{
		stmt_location = 0;
		stmt_len = 0;
	}
	start = source_text + stmt_location;
	len = (stmt_len > 0) ? stmt_len : (int) strlen(start);
	while (len > 0 && scanner_isspace(*start))
	{
		start++;
		len--;
	}
	if (len > destsize - 1)
		len = pg_mbcliplen(start, len, destsize - 1);
	memcpy(dest, start, len);
	dest[len] = '\0';
}
