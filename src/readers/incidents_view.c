/*-------------------------------------------------------------------------
 *
 * incidents_view.c
 *		pg_contention_incidents(): the incidents as one reader may see
 *		them, each with its details (the frozen evidence masked by who
 *		reads it, frozen_mask.c).
 *
 * Owns no shared state.  It copies the slots under the store's lock in
 * shared mode and builds the rows after releasing it.
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/incidents.h"
#include "readers.h"

#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "funcapi.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

static void
append_json_time(StringInfo buf, TimestampTz t)
{
	char		out[MAXDATELEN + 1];

	if (t == 0)
	{
		appendStringInfoString(buf, "null");
		return;
	}
	appendStringInfoChar(buf, '"');
	appendStringInfoString(buf, JsonEncodeDateTime(out, TimestampTzGetDatum(t),
												   TIMESTAMPTZOID, NULL));
	appendStringInfoChar(buf, '"');
}

/* A stored text in the reader's encoding, as a C string. */
static char *
reader_text(const char *s, Oid dbid)
{
	return TextDatumGetCString(pgc_text_datum(s, dbid));
}


/* A composed text of an incident, or MASKED_TEXT for a reader without privileges. */
#define MASKED_TEXT "<insufficient privilege>"

static char *
composed_text(bool privileged, const char *s, Oid dbid)
{
	return privileged ? reader_text(s, dbid) : pstrdup(MASKED_TEXT);
}

/*
 * The details document of an incident (a copy, out of the lock): the
 * frozen texts spliced into the contract's shape, each first made valid
 * in the reader's encoding.  The texts that are JSON (finding, frozen)
 * are checked again after that (a conversion may write a byte it cannot
 * show as \xNN, which is no JSON escape): one that fails is left out.
 *
 * For a reader without pg_read_all_stats (privileged false): the
 * subjects and evidence masked (the worker composed them from every
 * role's statements), the finding's own details too ({"masked": true}:
 * they hold query ids and the worst execution's constants), and each
 * frozen statement and holder masked by the role it came from
 * (pgc_mask_frozen, in the pass that checks it).
 */
static char *
details_text(const Incident *inc, bool privileged)
{
	StringInfoData buf;
	char	   *finding = reader_text(inc->finding, inc->dbid);
	char	   *as_kept = palloc(FROZEN_LEN);
	char	   *frozen;

	unpack_frozen(&inc->frozen, as_kept);
	frozen = reader_text(as_kept, inc->dbid);
	pfree(as_kept);

	if (finding[0] != '\0' && !json_valid(finding))
		finding = "";
	if (!privileged && finding[0] != '\0')
		finding = "{\"masked\": true}";
	/* Checked, and for such a reader masked, in one pass. */
	if (frozen[0] != '{' || frozen[1] == '}')
		frozen = "";
	else if (privileged ? !json_valid(frozen) : (frozen = pgc_mask_frozen(frozen)) == NULL)
		frozen = "";

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"key\": ");
	escape_json(&buf, reader_text(inc->key, inc->dbid));
	appendStringInfo(&buf, ", \"finding\": %s", finding[0] ? finding : "null");
	appendStringInfoString(&buf, ", \"opened\": {\"at\": ");
	append_json_time(&buf, inc->opened);
	appendStringInfo(&buf, ", \"severity\": \"%s\", \"subject\": ",
					 severity_name(inc->open_severity));
	escape_json(&buf, composed_text(privileged, inc->open_subject, inc->dbid));
	appendStringInfoString(&buf, ", \"evidence\": ");
	escape_json(&buf, composed_text(privileged, inc->open_evidence, inc->dbid));
	appendStringInfoString(&buf, "}, \"peak\": {\"at\": ");
	append_json_time(&buf, inc->peak);
	appendStringInfo(&buf, ", \"severity\": \"%s\", \"subject\": ",
					 severity_name(inc->peak_severity));
	escape_json(&buf, composed_text(privileged, inc->subject, inc->dbid));
	appendStringInfoString(&buf, ", \"evidence\": ");
	escape_json(&buf, composed_text(privileged, inc->evidence, inc->dbid));
	appendStringInfoString(&buf, "}, \"closed\": ");
	if (inc->closed != 0)
	{
		appendStringInfoString(&buf, "{\"at\": ");
		append_json_time(&buf, inc->closed);
		appendStringInfoString(&buf, ", \"evidence\": ");
		escape_json(&buf, composed_text(privileged, inc->last_evidence, inc->dbid));
		appendStringInfoChar(&buf, '}');
	}
	else
		appendStringInfoString(&buf, "null");
	/* The server's starts while it was open (the latest few), and how many. */
	appendStringInfo(&buf, ", \"restart_count\": %d, \"restarts\": [", inc->restarts);
	for (int i = 0, listed = 0; i < Min(inc->restarts, INCIDENT_RESTARTS); i++)
	{
		if (inc->restarted[i] == 0)
			continue;
		if (listed++ > 0)
			appendStringInfoString(&buf, ", ");
		append_json_time(&buf, inc->restarted[i]);
	}
	appendStringInfoChar(&buf, ']');
	/* frozen is an object: its members follow ours. */
	if (frozen[0] != '\0')
		appendStringInfo(&buf, ", %s", frozen + 1);
	else
		appendStringInfoString(&buf, ", \"statements\": [], \"holders\": [], \"history\": [], \"truncated\": true}");
	/* Said once at the top, for the reports: the reader's view is masked. */
	if (!privileged)
	{
		buf.data[--buf.len] = '\0';
		appendStringInfoString(&buf, ", \"masked\": true}");
	}
	return buf.data;
}

/* ---- the view ---- */



PG_FUNCTION_INFO_V1(pg_contention_incidents);

static const PgcResultColumn incidents_columns[] = {
	{"id", INT8OID, PGC_SQL_V(1, 4)},
	{"problem", TEXTOID, PGC_SQL_V(1, 4)},
	{"peak_severity", TEXTOID, PGC_SQL_V(1, 4)},
	{"subject", TEXTOID, PGC_SQL_V(1, 4)},
	{"opened", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"peak", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"closed", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"evidence", TEXTOID, PGC_SQL_V(1, 4)},
	{"resolution", TEXTOID, PGC_SQL_V(1, 4)},
	{"details", JSONBOID, PGC_SQL_V(1, 4)},
	{"severity", TEXTOID, PGC_SQL_V(1, 4)},
	{"advice", TEXTOID, PGC_SQL_V(1, 4)},
	{"last_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape incidents_shape = {
	"pg_contention_incidents", incidents_columns, lengthof(incidents_columns)
};

#define INCIDENT_COLS lengthof(incidents_columns)

/*
 * pg_contention_incidents(with_details, incident): every incident kept
 * (incident 0), else the one with that id, newest first.  Masked as the
 * live views mask, by the role each text came from: the subject, evidence
 * and advice (composed by the worker from every role's statements) are
 * shown to roles with pg_read_all_stats only, others get "<insufficient
 * privilege>"; in details, each frozen statement and holder is shown to
 * its own role too (details_text).  Being the role the finding names
 * grants nothing about other roles.  The problem, severity, times and the
 * resolution (pids, slot names, prepared transactions' gids: what the
 * live views show everyone) are shown to all.  details, the costly column
 * (its frozen document unpacked, checked and, for a reader without
 * pg_read_all_stats, masked), is NULL without with_details, for the readers that count or
 * list incidents.
 */
Datum
pg_contention_incidents(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	Incident   *copy;
	int			n = 0;
	bool		with_details = PG_NARGS() < 1 || PG_GETARG_BOOL(0);
	int64		only_id = PG_NARGS() > 1 ? PG_GETARG_INT64(1) : 0;
	bool		privileged;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &incidents_shape, &tupdesc);
	privileged = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	/* Copied under the store's lock, newest first. */
	copy = pgc_incidents_copy(only_id, with_details, &n);
	for (int k = 0; k < n; k++)
	{
		Incident   *inc = &copy[k];
		Datum		values[INCIDENT_COLS] = {0};
		bool		nulls[INCIDENT_COLS] = {0};
		const char *sev;

		values[0] = Int64GetDatum(inc->id);
		values[1] = pgc_text_datum(inc->problem, inc->dbid);
		values[2] = CStringGetTextDatum(severity_name(inc->peak_severity));
		values[3] = pgc_masked_text_datum(privileged, inc->subject, inc->dbid);
		values[4] = TimestampTzGetDatum(inc->opened);
		values[5] = TimestampTzGetDatum(inc->peak);
		values[6] = TimestampTzGetDatum(inc->closed);
		nulls[6] = (inc->closed == 0);
		values[7] = pgc_masked_text_datum(privileged, inc->evidence, inc->dbid);
		if (inc->closed == 0 || inc->resolution[0] == '\0')
			nulls[8] = true;
		else
			values[8] = pgc_text_datum(inc->resolution, inc->dbid);
		if (!with_details)
			nulls[9] = true;
		else
		{
			/* In the reader's encoding, masked for the reader, then parsed. */
			values[9] = DirectFunctionCall1(jsonb_in,
											CStringGetDatum(details_text(inc, privileged)));
		}
		sev = inc->closed == 0 ? severity_name(inc->severity) : NULL;
		if (sev)
			values[10] = CStringGetTextDatum(sev);
		else
			nulls[10] = true;
		values[11] = pgc_masked_text_datum(privileged, inc->advice, inc->dbid);
		values[12] = TimestampTzGetDatum(inc->last_seen);
		nulls[12] = (inc->last_seen == 0);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(pg_contention_incidents_status);

/*
 * pg_contention_incidents_status(): whether the incidents are being kept,
 * and if not, why and what to do, so that a reader (check, incidents) never
 * takes the worker's silence for a calm server.  state: 'kept', 'off'
 * (pg_contention.incident_interval is 0), 'not running', 'waiting' (for
 * the extension in its database), 'stalled' (no evaluation for three
 * intervals and its 30-second limit).  A worker that waits for the
 * extension in the reader's own database, where this function exists, finds
 * it at its next evaluation: kept.  Reads the store's header under its
 * lock in shared mode.
 */
Datum
pg_contention_incidents_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[5] = {0};
	bool		nulls[5] = {0};
	TimestampTz now = GetCurrentTimestamp();
	PgcIncidentsWorkerState worker;
	int			pid = pgc_own_pid(PGC_WORKER_INCIDENTS);
	const char *state;
	char	   *problem = NULL;

	pgc_require_loaded();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	pgc_incidents_worker_state(&worker);

	/*
	 * Waiting, as of its last look: the extension may have been created
	 * since.  Ask it to look again and wait for that look (at most 2 s),
	 * so that the answer is of now, not of its last interval.
	 */
	if (worker.waiting_since != 0 && pid != 0 && pgc_incident_interval > 0)
	{
		uint64		request = pgc_incidents_request_look();
		PGPROC	   *proc;

		/* Why this is safe: BackendPidGetProc takes ProcArrayLock. */
		proc = BackendPidGetProc(pid);
		if (proc != NULL)
			SetLatch(&proc->procLatch);
		for (int i = 0; i < 200; i++)
		{
			if (pgc_incidents_look_answered(request, &worker))
				break;
			CHECK_FOR_INTERRUPTS();
			pg_usleep(10000);
		}
	}

	if (pgc_incident_interval <= 0)
	{
		state = "off";
		problem = psprintf("incidents are off: pg_contention.incident_interval is 0");
	}
	else if (pid == 0)
	{
		state = "not running";
		problem = psprintf("the incidents worker is not running (it starts with the server when pg_contention.incident_interval is above 0 then; after a failure it starts again within 10 s): see the server log");
	}
	else if (worker.waiting_since != 0 &&
			 strcmp(worker.waiting_database, get_database_name(MyDatabaseId)) != 0)
	{
		state = "waiting";
		problem = psprintf("the incidents worker waits for the extension in database \"%s\": CREATE EXTENSION pg_contention there, or set pg_contention.incident_database to a database that has it",
						   worker.waiting_database);
	}
	else if (worker.last_evaluated != 0 &&
			 TimestampDifferenceExceeds(worker.last_evaluated, now,
										(3 * pgc_incident_interval + 30) * 1000))
	{
		long		secs;
		int			usecs;

		TimestampDifference(worker.last_evaluated, now, &secs, &usecs);
		state = "stalled";
		problem = psprintf("the incidents worker has not evaluated the findings for %ld s (pg_contention.incident_interval is %d s): see the server log",
						   secs, pgc_incident_interval);
	}
	else
		state = "kept";

	values[0] = CStringGetTextDatum(state);
	if (problem)
		values[1] = CStringGetTextDatum(problem);
	else
		nulls[1] = true;
	if (pid != 0)
		values[2] = Int32GetDatum(pid);
	else
		nulls[2] = true;
	values[3] = TimestampTzGetDatum(worker.last_evaluated);
	nulls[3] = (worker.last_evaluated == 0);
	values[4] = TimestampTzGetDatum(worker.waiting_since);
	nulls[4] = (worker.waiting_since == 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
