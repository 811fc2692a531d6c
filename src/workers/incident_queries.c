/*-------------------------------------------------------------------------
 *
 * incident_queries.c
 *		The incidents worker's queries about one incident: what it freezes
 *		at an opening or escalation (pg_contention_incident_evidence) and
 *		what ended it at its close (pg_contention_incident_resolution), each
 *		in a subtransaction of its own, so that one incident's failure is a
 *		LOG line and not the evaluation's end.
 *
 * Owns no shared state; runs in the worker only, inside its evaluation's
 * transaction (incidents_worker.c), in its evaluation context.
 *
 *-------------------------------------------------------------------------
 */
#include "evaluation.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

/*
 * One text-returning query with text arguments (NULL: SQL NULL), for one
 * incident, in a subtransaction of its own: an ERROR in it (a function the
 * query calls failing on that incident's details, a lock_timeout) is one
 * LOG line and a NULL result, and the evaluation goes on with the other
 * incidents.  A cancel (statement_timeout, pg_cancel_backend()) ends the
 * whole evaluation, as it asks.
 */
static char *
query_text(const char *what, int64 id, const char *sql,
		   int nargs, Oid *types, Datum *args, const char *argnulls)
{
	MemoryContext caller_context = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;
	char	   *volatile result = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller_context);
	PG_TRY();
	{
		int			rc = SPI_execute_with_args(sql, nargs, types, args, argnulls, true, 1);
		char	   *s;

		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed: %d", rc);
		if (SPI_processed > 0)
		{
			s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			if (s)
				result = MemoryContextStrdup(pgc_eval_context, s);
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(pgc_eval_context);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		if (id > 0)
			ereport(LOG,
					(errmsg("pg_contention incidents: the %s of incident " INT64_FORMAT " failed: %s",
							what, id, log_text(edata->message))));
		else
			ereport(LOG,
					(errmsg("pg_contention incidents: the %s of a new incident failed: %s",
							what, log_text(edata->message))));
		FreeErrorData(edata);
		result = NULL;
	}
	PG_END_TRY();
	return result;
}

/*
 * The frozen statements, holders and history of a finding at its peak, in
 * a slot's form.  At most FROZEN_LEN bytes of text, which a slot keeps
 * compressed; what does not fit even so (long statements and holders'
 * queries, which compress less than the history) is frozen again with a
 * smaller bound, and at last with one a slot keeps as it is: the
 * function drops the oldest history first, then all but the first
 * statement and holder, and says "truncated".
 */
FrozenText *
incident_freeze(const Found *f)
{
	static const int32 bounds[] = {FROZEN_LEN - 1, FROZEN_LEN / 2, FROZEN_STORED_LEN};
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		args[3];
	char	   *sql;
	FrozenText *frozen = MemoryContextAlloc(pgc_eval_context, sizeof(FrozenText));

	sql = psprintf("SELECT %s.pg_contention_incident_evidence($1, $2::pg_catalog.jsonb, $3)::pg_catalog.text", pgc_ext_schema);
	args[0] = CStringGetTextDatum(f->problem);
	args[1] = CStringGetTextDatum(f->details);
	for (int i = 0; i < lengthof(bounds); i++)
	{
		char	   *s;

		args[2] = Int32GetDatum(bounds[i]);
		s = query_text("evidence", f->match_id, sql, 3, types, args, NULL);
		if (s == NULL)			/* it failed, and said why in the log */
		{
			(void) pack_frozen("{\"statements\": [], \"holders\": [], \"history\": [], \"unavailable\": true}",
							   frozen);
			return frozen;
		}
		/* The function keeps within the bound; whatever it did not: dropped. */
		if ((int) strlen(s) > bounds[i] || s[0] != '{')
			break;
		if (pack_frozen(s, frozen))
			return frozen;
	}
	(void) pack_frozen("{\"statements\": [], \"holders\": [], \"history\": [], \"truncated\": true}",
					   frozen);
	return frozen;
}

/*
 * What ended it, judged on details seen at seen_at; NULL if it cannot
 * tell.
 */
static char *
resolve_on(const OpenCopy *o, const char *details, TimestampTz seen_at)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TIMESTAMPTZOID, TEXTOID};
	Datum		args[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	char	   *sql;

	sql = psprintf("SELECT %s.pg_contention_incident_resolution($1, $2::pg_catalog.jsonb, $3,"
				   " $4::pg_catalog.jsonb)", pgc_ext_schema);
	args[0] = CStringGetTextDatum(o->problem);
	args[1] = CStringGetTextDatum(details);
	args[2] = TimestampTzGetDatum(seen_at);
	/* The indexes' states as this evaluation read them (read_findings). */
	args[3] = CStringGetTextDatum(pgc_eval_index_states ? pgc_eval_index_states : "[]");
	return query_text("resolution", o->id, sql, 4, types, args, nulls);
}

/*
 * What ended it, as far as the server can tell now; NULL if it cannot.
 * Judged on the findings it was last seen with (their culprits: sessions
 * that overflowed after the first ones ended, or after a restart); on
 * its peak's only when the worker has not seen it since it started.  The
 * peak's culprits are never a fallback: when the last ones have not
 * ended, the peak's ended long before and did not end it.
 */
char *
incident_resolve(const OpenCopy *o)
{
	TimestampTz seen_at;
	const char *last = incident_memory_details(o->id, &seen_at);

	if (last != NULL)
		return resolve_on(o, last, seen_at);
	return resolve_on(o, o->finding[0] ? o->finding : "{}", o->opened);
}

