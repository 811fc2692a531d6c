/*-------------------------------------------------------------------------
 *
 * incidents_worker.c
 *		The incidents worker ("pg_contention incidents", connected to
 *		pg_contention.incident_database): every
 *		pg_contention.incident_interval it evaluates the findings in its own
 *		transaction (SPI), opens an incident when a finding reaches warning
 *		or critical for a subject, escalates it when its severity rises,
 *		closes it when it has been gone (or below warning) for
 *		pg_contention.incident_close_after, freezes its evidence at open
 *		and at the peak, and writes the LOG lines.  Its queries about one
 *		incident (evidence, resolution) are in incident_queries.c; while
 *		the extension is missing it says so in the store
 *		(pg_contention_incidents_status) and looks again when a reader asks.
 *
 * Owns no shared memory.  The incident store and its LWLock belong to
 * stores/incidents.c, whose locking rules this file follows as the store's
 * only writer: it evaluates without the lock, copies the open incidents'
 * keys under the lock in shared mode, then takes it exclusively once to
 * apply what it found (memcpy of bounded texts, nothing that can ERROR),
 * and LOGs after releasing it.  A reset between the copy and the apply is
 * seen through reset_generation: that evaluation's updates are dropped.
 *
 * What the worker runs is kept out of the stores it reads: it turns
 * pg_contention.track_statements off for itself (no statement counted;
 * jit too: compiling its queries costs more than running them), the
 * sampler skips its pid, and pg_contention_horizon leaves out the process
 * that reads it.
 *
 *-------------------------------------------------------------------------
 */
#include "evaluation.h"
#include "workers.h"

#include <limits.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "common/pg_lzcompress.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "commands/dbcommands.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"


PGDLLEXPORT void pgc_incidents_main(Datum main_arg);

/* ---- the worker ---- */


/*
 * The subjects refused at the last evaluation ("problem key"), this
 * worker's own: a subject is counted and LOGged when it is first refused,
 * not at every evaluation while it stays so.
 */
static char **refused_keys = NULL;
static int	n_refused = 0;

static bool
refused_before(const Found *f)
{
	for (int i = 0; i < n_refused; i++)
	{
		const char *sep = strchr(refused_keys[i], ' ');

		if (sep && strncmp(refused_keys[i], f->problem, sep - refused_keys[i]) == 0 &&
			f->problem[sep - refused_keys[i]] == '\0' && strcmp(sep + 1, f->key) == 0)
			return true;
	}
	return false;
}

/* Remember this evaluation's refused subjects for the next one. */
static void
remember_refused(const Found *found, int nfound)
{
	for (int i = 0; i < n_refused; i++)
		pfree(refused_keys[i]);
	if (refused_keys)
		pfree(refused_keys);
	refused_keys = NULL;
	n_refused = 0;
	for (int i = 0; i < nfound; i++)
	{
		if (!found[i].refused)
			continue;
		if (refused_keys == NULL)
			refused_keys = MemoryContextAlloc(TopMemoryContext, nfound * sizeof(char *));
		refused_keys[n_refused++] = MemoryContextStrdup(TopMemoryContext,
														psprintf("%s %s", found[i].problem, found[i].key));
	}
}


/*
 * A finding whose cause is gone (its overflowing sessions ended) but that
 * its window still shows: was it already an incident, closed while the
 * window kept showing it (closed after the finding's start)?  Then it
 * opens none again.  With no start known, any closed one of its key.
 */
static bool
covered_by_closed(const Found *f, const ClosedCopy *closed, int nclosed)
{
	for (int i = 0; i < nclosed; i++)
		if (strcmp(closed[i].problem, f->problem) == 0 &&
			strncmp(closed[i].key, f->key, KEY_LEN - 1) == 0 &&
			(f->since == 0 || closed[i].closed >= f->since))
			return true;
	return false;
}


static volatile sig_atomic_t evaluating = false;
MemoryContext pgc_eval_context = NULL;
char	   *pgc_ext_schema = NULL;	/* quoted, in TopMemoryContext */
/* This evaluation's index findings' states (JSON), in eval_context. */
char	   *pgc_eval_index_states = NULL;
static SPIPlanPtr findings_plan = NULL; /* read_findings' query, kept */
static bool told_missing = false;
static char last_failure[256];	/* the last evaluation's error, LOGged once */

/*
 * SIGTERM: leave at the next loop; an evaluation under way is cancelled
 * (its ERROR is caught), so that the worker exits promptly.
 */
static void
incidents_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	ShutdownRequestPending = true;
	if (evaluating)
	{
		QueryCancelPending = true;
		InterruptPending = true;
	}
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * SIGINT (pg_cancel_backend(), and the statement timeout the worker arms,
 * whose handler signals the process itself): cancel an evaluation under
 * way; between evaluations there is nothing to cancel.
 */
static void
incidents_sigint(SIGNAL_ARGS)
{
	if (evaluating)
		StatementCancelHandler(postgres_signal_arg);
}

static char *
spi_text(HeapTuple tuple, TupleDesc desc, int col)
{
	char	   *s = SPI_getvalue(tuple, desc, col);

	return s ? s : pstrdup("");
}

/*
 * The extension's schema in this database, with the functions this
 * library calls (1.4), quoted; NULL when not installed (or older).
 */
static char *
find_schema(void)
{
	int			rc;

	rc = SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension AS e"
					 " JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace"
					 " WHERE e.extname = 'pg_contention'"
					 " AND pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname)"
					 " || '.pg_contention_incident_evidence(text,jsonb,integer)') IS NOT NULL",
					 true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed == 0)
		return NULL;
	return MemoryContextStrdup(TopMemoryContext,
							   spi_text(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

/* Forget the extension's schema and the plan that names it. */
static void
forget_schema(void)
{
	if (findings_plan)
		SPI_freeplan(findings_plan);
	findings_plan = NULL;
	if (pgc_ext_schema)
		pfree(pgc_ext_schema);
	pgc_ext_schema = NULL;
}

/*
 * Read the findings: every one into *rows (what pg_contention_findings
 * gives, for findings_latest.c), and those an incident can follow (a key,
 * and not sampler_stale: a sampler that stopped is said by the findings
 * and the metrics, it is no incident) with their keys into *found.  Both
 * in eval_context; returns the count of *found.
 */
static int
read_findings(Found **found, PgcFindingRow **rows, int *nrows)
{
	int			rc;
	int			n;
	int			nfound = 0;
	StringInfoData states;

	/*
	 * Planned once and kept: parsing and planning it at every evaluation
	 * was a large part of the evaluation's cost.  (The key function is
	 * PL/pgSQL, which keeps its plan too: a SQL function's body would be
	 * planned again at every evaluation.)  The plan cache plans it again when a function it
	 * calls changes (ALTER EXTENSION UPDATE); a dropped or moved extension
	 * makes it fail, and a failed evaluation forgets it (forget_schema).
	 */
	if (findings_plan == NULL)
	{
		char	   *sql;
		SPIPlanPtr	plan;

		sql = psprintf("SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, k.finding::text,"
					   " k.key, k.culprit, f.since, k.cause_gone, f.details::text, k.touched,"
					   " CASE WHEN (f.details OPERATOR(pg_catalog.->>) 'state') IS NOT NULL"
					   " AND (f.details OPERATOR(pg_catalog.->>) 'indexrelid') IS NOT NULL"
					   " THEN pg_catalog.jsonb_build_object('problem', f.problem,"
					   " 'database_oid', f.details OPERATOR(pg_catalog.->) 'database_oid',"
					   " 'indexrelid', f.details OPERATOR(pg_catalog.->) 'indexrelid',"
					   " 'state', f.details OPERATOR(pg_catalog.->) 'state')::pg_catalog.text END,"
					   " CAST(f.details OPERATOR(pg_catalog.->>) 'touched_count' AS pg_catalog.int4)"
					   " FROM %s.pg_contention_findings(NULL::pg_catalog.interval) AS f"
					   " CROSS JOIN LATERAL %s.pg_contention_incident_key(f.problem, f.details) AS k",
					   pgc_ext_schema, pgc_ext_schema);
		plan = SPI_prepare(sql, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		findings_plan = plan;
	}
	rc = SPI_execute_plan(findings_plan, NULL, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %d", rc);
	n = (int) SPI_processed;
	{
		/* in eval_context: its appends stay there (repalloc) */
		MemoryContext old = MemoryContextSwitchTo(pgc_eval_context);

		initStringInfo(&states);
		MemoryContextSwitchTo(old);
	}
	appendStringInfoChar(&states, '[');
	*found = MemoryContextAllocZero(pgc_eval_context, Max(n, 1) * sizeof(Found));
	*rows = MemoryContextAllocZero(pgc_eval_context, Max(n, 1) * sizeof(PgcFindingRow));
	*nrows = n;
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		PgcFindingRow *r = &(*rows)[i];
		Found	   *f;
		MemoryContext old = MemoryContextSwitchTo(pgc_eval_context);
		bool		isnull;
		Datum		culprit;
		Datum		value;
		char	   *key;

		r->problem = SPI_getvalue(tup, desc, 1);
		r->severity = SPI_getvalue(tup, desc, 2);
		r->subject = SPI_getvalue(tup, desc, 3);
		r->evidence = SPI_getvalue(tup, desc, 4);
		r->advice = SPI_getvalue(tup, desc, 5);
		r->details = SPI_getvalue(tup, desc, 11);
		value = SPI_getbinval(tup, desc, 9, &isnull);
		r->since = isnull ? 0 : DatumGetTimestampTz(value);
		value = SPI_getbinval(tup, desc, 13, &isnull);
		if (!isnull)
		{
			if (states.len > 1)
				appendStringInfoString(&states, ", ");
			appendStringInfoString(&states, TextDatumGetCString(value));
		}

		key = SPI_getvalue(tup, desc, 7);
		if (key == NULL || r->problem == NULL ||
			strcmp(r->problem, "sampler_stale") == 0)
		{
			MemoryContextSwitchTo(old);
			continue;
		}
		f = &(*found)[nfound++];
		f->problem = spi_text(tup, desc, 1);
		f->severity = severity_from_name(r->severity);
		f->subject = spi_text(tup, desc, 3);
		f->evidence = spi_text(tup, desc, 4);
		f->advice = spi_text(tup, desc, 5);
		f->details = spi_text(tup, desc, 6);
		f->key = key;
		culprit = SPI_getbinval(tup, desc, 8, &isnull);
		f->culprit = isnull ? InvalidOid : DatumGetObjectId(culprit);
		f->since = r->since;
		value = SPI_getbinval(tup, desc, 10, &isnull);
		f->cause_gone = !isnull && DatumGetBool(value);
		f->touched = SPI_getvalue(tup, desc, 12);
		/* The indexes of one cause, grouped by pg_contention_findings. */
		value = SPI_getbinval(tup, desc, 14, &isnull);
		f->members = isnull ? 1 : Max(DatumGetInt32(value), 1);
		f->grouped = !isnull;
		f->seen_details = f->details;
		MemoryContextSwitchTo(old);
	}
	appendStringInfoChar(&states, ']');
	pgc_eval_index_states = states.data;
	return nfound;
}

/*
 * A reader asked the worker, while it waits for the extension, to look
 * again now (pg_contention_incidents_status(): the extension may have been
 * created since its last look).
 */
static bool
look_requested(void)
{
	bool		requested;

	if (pgc_ext_schema != NULL)
		return false;
	LWLockAcquire(pgc_incidents->lock, LW_SHARED);
	requested = pgc_incidents->look_requests > pgc_incidents->looks_done;
	LWLockRelease(pgc_incidents->lock);
	return requested;
}

/*
 * Publish whether the worker waits for the extension (readers say so
 * rather than take its silence for calm), and, when it does not, that it
 * is evaluating now.
 */
static void
note_waiting(bool waiting, uint64 requests_seen)
{
	const char *dbname = waiting ? get_database_name(MyDatabaseId) : NULL;

	LWLockAcquire(pgc_incidents->lock, LW_EXCLUSIVE);
	/* Found (PG_UINT64_MAX): every request so far is answered. */
	if (requests_seen == PG_UINT64_MAX)
		requests_seen = pgc_incidents->look_requests;
	pgc_incidents->looks_done = Max(pgc_incidents->looks_done, requests_seen);
	if (waiting)
	{
		if (pgc_incidents->waiting_since == 0)
			pgc_incidents->waiting_since = GetCurrentTimestamp();
		strlcpy(pgc_incidents->waiting_database, dbname ? dbname : "", NAMEDATALEN);
	}
	else
	{
		pgc_incidents->waiting_since = 0;
		pgc_incidents->last_evaluated = GetCurrentTimestamp();
	}
	LWLockRelease(pgc_incidents->lock);
}

/*
 * A free slot, or the oldest closed incident's (evicted, counted); NULL
 * when every slot holds an open incident.  An open incident is never
 * evicted: its finding is still there, so it would open again at the next
 * evaluation and evict another, a new "opened" line every interval.
 */
static Incident *
take_incident_slot(void)
{
	Incident   *oldest_closed = NULL;

	for (int i = 0; i < pgc_max_incidents; i++)
	{
		Incident   *s = &pgc_incident_slots[i];

		if (s->id == 0)
			return s;
		if (s->closed != 0 && (oldest_closed == NULL || s->id < oldest_closed->id))
			oldest_closed = s;
	}
	if (oldest_closed)
		pgc_incidents->evictions++;
	return oldest_closed;
}

static Incident *
find_slot(int64 id)
{
	for (int i = 0; i < pgc_max_incidents; i++)
		if (pgc_incident_slots[i].id == id)
			return &pgc_incident_slots[i];
	return NULL;
}

typedef struct LogLine
{
	int64		id;
	int			kind;			/* 0 opened, 1 escalated, 2 closed, 3 refused,
								 * 4 evicted while open */
	int			severity;
	const char *problem;
	const char *text;			/* subject, or the resolution */
	TimestampTz opened;
	TimestampTz at;
	char		closed_problem[PROBLEM_LEN];	/* a closed or evicted one's, copied */
	Oid			role;			/* an evicted one's, and how many it held */
	int			role_holds;
	int			count;			/* refused: how many (one line for them) */
	bool		for_cluster;	/* evicted for a cluster-wide incident */
	const char *role_name;		/* role_text(role), named in the transaction */
} LogLine;

/* A culprit role for a LOG line: "role NAME", or what stands for none. */
static const char *
role_text(Oid role)
{
	char	   *name;

	if (!OidIsValid(role))
		return "no role (the cluster, a slot, a standby)";
	name = GetUserNameFromId(role, true);
	return name ? psprintf("role %s", log_text(name)) : psprintf("role %u (dropped)", role);
}

/* "4 min", "1 h 5 min", "12 s": how long an incident lasted. */
static char *
duration_text(TimestampTz from, TimestampTz to)
{
	int64		s = Max((to - from) / USECS_PER_SEC, 0);

	if (s < 60)
		return psprintf(INT64_FORMAT " s", s);
	if (s < 3600)
		return psprintf(INT64_FORMAT " min", s / 60);
	return psprintf(INT64_FORMAT " h " INT64_FORMAT " min", s / 3600, (s % 3600) / 60);
}

/*
 * One evaluation: read the findings, decide what opens, escalates and
 * closes, freeze and resolve in the same transaction, then apply it all
 * to the store under its lock at once.  An ERROR in one incident's
 * evidence or resolution costs that incident its part (query_text); any
 * other ERROR aborts the whole evaluation (the caller LOGs it): the store
 * is unchanged.
 */
static void
evaluate(void)
{
	Found	   *found;
	int			nfound;
	PgcFindingRow *rows = NULL;
	int			nrows = 0;
	OpenCopy   *open;
	int			nopen = 0;
	ClosedCopy *closed;
	int			nclosed = 0;
	uint64		generation;
	TimestampTz now;
	TimestampTz found_at;
	LogLine    *lines = NULL;	/* allocated before the apply: no palloc */
	int			nlines = 0;		/* under the lock */
	LogLine    *refused_line = NULL;
	bool		applied;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_contention incidents: evaluating the findings");
	/* Bounded: a lock it waits for or a slow evaluation is an ERROR. */
	SPI_execute("SET LOCAL lock_timeout = '1s'", false, 0);
	enable_timeout_after(STATEMENT_TIMEOUT, 30000);

	if (pgc_ext_schema == NULL)
	{
		uint64		requests_seen;

		/* The requests made before this look are answered by it. */
		LWLockAcquire(pgc_incidents->lock, LW_SHARED);
		requests_seen = pgc_incidents->look_requests;
		LWLockRelease(pgc_incidents->lock);
		pgc_ext_schema = find_schema();
		if (pgc_ext_schema == NULL)
		{
			note_waiting(true, requests_seen);
			if (!told_missing)
				ereport(LOG,
						(errmsg("pg_contention incidents: the extension pg_contention %s is not installed in database \"%s\"; incidents wait for it",
								PGC_VERSION, get_database_name(MyDatabaseId)),
						 errhint("Run CREATE EXTENSION pg_contention (or ALTER EXTENSION pg_contention UPDATE) in that database, or set pg_contention.incident_database.")));
			told_missing = true;
		}
		if (pgc_ext_schema != NULL && told_missing)
		{
			ereport(LOG,
					(errmsg("pg_contention incidents: found the extension in schema %s", pgc_ext_schema)));
			told_missing = false;
		}
	}

	if (pgc_ext_schema != NULL)
	{
		/* Evaluating: what pg_contention_incidents_status() reads. */
		note_waiting(false, PG_UINT64_MAX);
		now = GetCurrentTimestamp();
		nfound = read_findings(&found, &rows, &nrows);
		/* Every session the findings name had started by then. */
		found_at = GetCurrentTimestamp();
		nfound = group_findings(found, nfound);

		/* The open incidents, copied. */
		open = MemoryContextAllocZero(pgc_eval_context, Max(pgc_max_incidents, 1) * sizeof(OpenCopy));
		closed = MemoryContextAllocZero(pgc_eval_context, Max(pgc_max_incidents, 1) * sizeof(ClosedCopy));
		LWLockAcquire(pgc_incidents->lock, LW_SHARED);
		generation = pgc_incidents->reset_generation;
		for (int i = 0; i < pgc_max_incidents; i++)
		{
			Incident   *s = &pgc_incident_slots[i];
			OpenCopy   *o;

			if (s->id == 0)
				continue;
			if (s->closed != 0)
			{
				memcpy(closed[nclosed].problem, s->problem, PROBLEM_LEN);
				memcpy(closed[nclosed].key, s->key, KEY_LEN);
				closed[nclosed++].closed = s->closed;
				continue;
			}
			o = &open[nopen++];
			o->id = s->id;
			memcpy(o->problem, s->problem, PROBLEM_LEN);
			memcpy(o->key, s->key, KEY_LEN);
			o->peak_severity = s->peak_severity;
			o->culprit = s->culprit;
			o->opened = s->opened;
			o->last_seen = s->last_seen;
			o->finding = MemoryContextStrdup(pgc_eval_context, s->finding);
		}
		LWLockRelease(pgc_incidents->lock);

		/* Match. */
		for (int i = 0; i < nfound; i++)
		{
			Found	   *f = &found[i];

			for (int j = 0; j <= nopen; j++)
			{
				OpenCopy   *o = j < nopen ? &open[j] : NULL;

				/*
				 * An open incident of its problem and key; after them all,
				 * one it goes on (its key moved with its cause), if any.
				 */
				if (o != NULL && (strcmp(o->problem, f->problem) != 0 ||
								  strncmp(o->key, f->key, KEY_LEN - 1) != 0))
					continue;
				if (o == NULL && (o = continues_incident(f, open, nopen)) == NULL)
					break;
				f->match_id = o->id;
				/* Its cause gone, it counts as gone: it closes. */
				if (f->severity >= SEV_WARNING && !f->cause_gone)
				{
					o->seen = true;
					/* What ends it is judged on what it was last seen with. */
					incident_memory_note(o->id, f->seen_details, found_at);
					f->escalate = f->severity > o->peak_severity;
					o->peak_severity = Max(o->peak_severity, f->severity);
				}
				break;
			}
			/* (One finding per key: group_findings.) */
			if (f->match_id == 0 && f->severity >= SEV_WARNING)
				f->open = !(f->cause_gone && covered_by_closed(f, closed, nclosed));
		}

		/*
		 * What opens and escalates now, before anything is frozen: bounded
		 * work whatever the number of findings, nothing frozen for a
		 * finding that gets no slot.  The worker is the store's only
		 * writer: the slots counted here are the same at the apply below
		 * (a reset in between drops the whole evaluation).
		 */
		plan_openings(found, nfound, open, nopen, pgc_max_incidents - nopen);
		for (int i = 0; i < nfound; i++)
			if (found[i].open || found[i].escalate)
				found[i].frozen = incident_freeze(&found[i]);
		for (int j = 0; j < nopen; j++)
		{
			OpenCopy   *o = &open[j];

			if (!o->seen && now - o->last_seen >= (TimestampTz) pgc_incident_close_after * USECS_PER_SEC)
			{
				o->close = true;
				o->resolution = incident_resolve(o);
			}
		}
		incident_memory_keep_open(open, nopen);

		/*
		 * Apply, at once, with nothing that can ERROR under the lock: the
		 * LOG lines (at most two per finding, an eviction and an opening,
		 * and one per open incident) are allocated before, where they
		 * outlive SPI's memory.
		 */
		lines = MemoryContextAllocZero(pgc_eval_context, (2 * nfound + nopen + 1) * sizeof(LogLine));
		MemoryContextSwitchTo(pgc_eval_context);
		LWLockAcquire(pgc_incidents->lock, LW_EXCLUSIVE);
		if (pgc_incidents->reset_generation == generation)
		{
			for (int i = 0; i < nfound; i++)
			{
				Found	   *f = &found[i];
				Incident   *s = NULL;
				LogLine    *line = NULL;

				if (f->open && f->evict_id != 0 && (s = find_slot(f->evict_id)) != NULL)
				{
					/* An open incident gives its slot to another role's. */
					pgc_incidents->open_evictions++;
					line = &lines[nlines++];
					line->kind = 4;
					line->id = s->id;
					line->severity = s->peak_severity;
					memcpy(line->closed_problem, s->problem, PROBLEM_LEN);
					line->problem = line->closed_problem;
					line->role = s->culprit;
					line->for_cluster = ONE_AT_A_TIME(f->key);
					line->role_holds = 0;
					for (int k = 0; k < pgc_max_incidents; k++)
						line->role_holds += (pgc_incident_slots[k].id != 0 && pgc_incident_slots[k].closed == 0 &&
											 pgc_incident_slots[k].culprit == s->culprit);
					line = NULL;
				}
				else if (f->open)
					s = take_incident_slot();
				if (f->refused || (f->open && s == NULL))
				{
					/*
					 * Counted once while it stays refused; one LOG line
					 * for all refused at an evaluation, naming the first.
					 */
					f->refused = true;
					if (!refused_before(f))
					{
						pgc_incidents->not_opened++;
						if (refused_line != NULL)
						{
							refused_line->count++;
							continue;
						}
						line = refused_line = &lines[nlines++];
						line->kind = 3;
						line->count = 1;
						line->problem = f->problem;
						line->severity = f->severity;
						line->text = f->subject;
						line->role = f->culprit;
						line->role_holds = 0;
						for (int k = 0; k < pgc_max_incidents; k++)
							line->role_holds += (pgc_incident_slots[k].id != 0 && pgc_incident_slots[k].closed == 0 &&
												 pgc_incident_slots[k].culprit == f->culprit);
					}
					continue;
				}
				if (f->open)
				{
					memset(s, 0, sizeof(Incident));
					s->id = pgc_incidents->next_id++;
					s->dbid = MyDatabaseId;
					s->culprit = f->culprit;
					s->opened = now;
					s->open_severity = f->severity;
					put_text(s->problem, PROBLEM_LEN, f->problem);
					put_text(s->key, KEY_LEN, f->key);
					put_text(s->open_subject, SUBJECT_LEN, f->subject);
					put_text(s->open_evidence, EVIDENCE_LEN, f->evidence);
					pgc_incidents->opened[counted_index(f->problem)][f->severity == SEV_CRITICAL]++;
				}
				else if (f->match_id != 0)
					s = find_slot(f->match_id);
				if (s == NULL)
					continue;
				s->severity = f->severity;
				put_text(s->last_evidence, EVIDENCE_LEN, f->evidence);
				if (f->severity >= SEV_WARNING && (!f->cause_gone || f->open))
					s->last_seen = now;
				if (f->open || f->escalate)
				{
					s->peak = now;
					s->peak_severity = f->severity;
					s->members = f->members;
					if (OidIsValid(f->culprit))
						s->culprit = f->culprit;
					put_text(s->subject, SUBJECT_LEN, f->subject);
					put_text(s->evidence, EVIDENCE_LEN, f->evidence);
					put_text(s->advice, ADVICE_LEN, f->advice);
					/* Only whole documents: a cut one would not parse. */
					if (strlen(f->details) < FINDING_LEN)
						put_text(s->finding, FINDING_LEN, f->details);
					else
						put_text(s->finding, FINDING_LEN, "{\"truncated\": true}");
					memcpy(&s->frozen, f->frozen,
						   offsetof(FrozenText, data) + f->frozen->stored);
					line = &lines[nlines++];
					line->kind = f->open ? 0 : 1;
				}
				else if (f->members > s->members && f->severity == s->peak_severity &&
						 !f->cause_gone && strncmp(s->key, f->key, KEY_LEN - 1) == 0 &&
						 strlen(f->details) < FINDING_LEN)
				{
					/*
					 * Its cause has spread (one holder's dead entries in
					 * more indexes) at its peak's severity: its subject and
					 * details count what it touches now, never fewer than
					 * it touched at its opening.  What was frozen stays.
					 */
					s->members = f->members;
					put_text(s->subject, SUBJECT_LEN, f->subject);
					put_text(s->finding, FINDING_LEN, f->details);
				}
				if (line)
				{
					line->problem = f->problem;
					line->id = s->id;
					line->severity = f->severity;
					line->text = f->subject;
				}
			}
			for (int j = 0; j < nopen; j++)
			{
				Incident   *s;
				LogLine    *line;

				if (!open[j].close || (s = find_slot(open[j].id)) == NULL)
					continue;
				s->closed = now;
				s->severity = SEV_NONE;
				put_text(s->resolution, RESOLUTION_LEN, open[j].resolution);
				line = &lines[nlines++];
				line->id = s->id;
				line->kind = 2;
				line->severity = s->peak_severity;
				memcpy(line->closed_problem, s->problem, PROBLEM_LEN);
				line->problem = line->closed_problem;
				line->text = open[j].resolution;
				line->opened = s->opened;
				line->at = now;
			}
		}
		applied = (pgc_incidents->reset_generation == generation);
		LWLockRelease(pgc_incidents->lock);
		/* The roles' names, while there is a transaction to read them in. */
		for (int i = 0; i < nlines; i++)
			if (lines[i].kind >= 3)
				lines[i].role_name = role_text(lines[i].role);
		if (applied)
		{
			remember_refused(found, nfound);
			/* What check reads instead of evaluating again. */
			pgc_findings_latest_publish(now, nrows, rows);
		}
	}
	else
		pgc_findings_latest_forget();

	/* Opened, escalated or closed: into the stores' file soon (crash). */
	if (nlines > 0)
		pgc_sampler_request_save();

	disable_timeout(STATEMENT_TIMEOUT, false);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(pgc_eval_context);
	pgstat_report_activity(STATE_IDLE, NULL);

	for (int i = 0; i < nlines; i++)
	{
		LogLine    *line = &lines[i];

		/* Not an incident's opening or closing: said whatever incident_log is. */
		if (line->kind == 3)
			ereport(LOG,
					(line->count == 1 ?
					 errmsg("pg_contention: incident not opened: all %d incident slots hold open incidents, %d of them of %s: %s %s: %s",
							pgc_max_incidents, line->role_holds, line->role_name,
							severity_name(line->severity), log_text(line->problem), log_text(line->text)) :
					 errmsg("pg_contention: %d incidents not opened: all %d incident slots hold open incidents; the first, of %s, which holds %d of them: %s %s: %s",
							line->count, pgc_max_incidents, line->role_name, line->role_holds,
							severity_name(line->severity), log_text(line->problem), log_text(line->text)),
					 errhint("Raise pg_contention.max_incidents (it takes a restart); an open incident gives its slot only to a role that holds fewer.")));
		else if (line->kind == 4)
			ereport(LOG,
					(errmsg("pg_contention: incident " INT64_FORMAT " evicted while open, for %s: %s %s, of %s, which held %d of the %d incident slots",
							line->id,
							line->for_cluster ? "a cluster-wide incident" : "an incident of a role that held fewer",
							severity_name(line->severity), log_text(line->problem),
							line->role_name, line->role_holds, pgc_max_incidents),
					 errhint("Raise pg_contention.max_incidents (it takes a restart); the evicted incident opens again when there is room.")));
		else if (!pgc_incident_log)
			continue;
		else if (line->kind == 2)
			ereport(LOG,
					(errmsg("pg_contention: incident " INT64_FORMAT " closed after %s: %s",
							line->id, duration_text(line->opened, line->at),
							line->text ? log_text(line->text) : "the finding is gone")));
		else
			ereport(LOG,
					(errmsg("pg_contention: incident " INT64_FORMAT " %s: %s %s: %s",
							line->id, line->kind == 0 ? "opened" : "escalated",
							severity_name(line->severity), log_text(line->problem),
							log_text(line->text))));
	}
}

void
pgc_incidents_main(Datum main_arg)
{
	TimestampTz next;

	pgc_worker_start(PGC_WORKER_INCIDENTS, "pg_contention incidents", pgc_incidents != NULL,
					 pgc_incident_database, incidents_sigterm, incidents_sigint);
	/* Its own statements are not the workload's: counted nowhere. */
	SetConfigOption("pg_contention.track_statements", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "pg_contention incidents", PGC_USERSET, PGC_S_OVERRIDE);

	/*
	 * It runs as the bootstrap superuser: no name in its queries may be
	 * resolved in a schema another role can write (a planted operator with
	 * an exact match for an argument's type would run as superuser).  The
	 * extension's own objects are named with its schema, the rest resolve
	 * in pg_catalog; the functions it calls pin the same path themselves.
	 * A session setting, not an override: that would silence their SET
	 * clauses.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION);
	/*
	 * No JIT: its queries cross jit_above_cost by their estimates
	 * (functions of a thousand rows), not by their work, and compiling
	 * them costs ten times what running them does, at every evaluation.
	 */
	SetConfigOption("jit", "off", PGC_USERSET, PGC_S_OVERRIDE);

	pgc_eval_context = AllocSetContextCreate(TopMemoryContext,
										 "pg_contention incidents",
										 ALLOCSET_DEFAULT_SIZES);

	next = GetCurrentTimestamp();
	for (;;)
	{
		TimestampTz now;
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			next = Min(next, GetCurrentTimestamp() +
					   (TimestampTz) pgc_incident_interval * USECS_PER_SEC);
		}

		now = GetCurrentTimestamp();
		if (pgc_incident_interval > 0 && (now >= next || look_requested()))
		{
			MemoryContext old = CurrentMemoryContext;

			next = now + (TimestampTz) pgc_incident_interval * USECS_PER_SEC;
			evaluating = true;
			PG_TRY();
			{
				MemoryContextSwitchTo(pgc_eval_context);
				evaluate();
				last_failure[0] = '\0';
			}
			PG_CATCH();
			{
				ErrorData  *edata;

				/*
				 * The evaluation failed (a timeout, a cancel, a dropped
				 * extension, any ERROR): LOG it and try again next
				 * interval.  Nothing of it reached the store.
				 */
				evaluating = false;
				MemoryContextSwitchTo(old);
				HOLD_INTERRUPTS();
				edata = CopyErrorData();
				FlushErrorState();
				disable_all_timeouts(false);
				QueryCancelPending = false;
				AbortCurrentTransaction();
				LWLockReleaseAll();
				RESUME_INTERRUPTS();
				pgc_findings_latest_forget();
				pgstat_report_activity(STATE_IDLE, NULL);
				/* The same failure again and again is LOGged once. */
				if (!ShutdownRequestPending &&
					strncmp(last_failure, edata->message, sizeof(last_failure) - 1) != 0)
					ereport(LOG,
							(errcode(edata->sqlerrcode),
							 errmsg("pg_contention incidents: the evaluation failed: %s",
									edata->message),
							 errdetail("It is tried again every pg_contention.incident_interval; the same failure is not logged again.")));
				strlcpy(last_failure, edata->message, sizeof(last_failure));
				FreeErrorData(edata);
				/* The extension may be gone or updated: look again. */
				forget_schema();
			}
			PG_END_TRY();
			evaluating = false;
			/* A cancel that came as it ended has nothing left to cancel. */
			QueryCancelPending = false;
			MemoryContextSwitchTo(old);
			MemoryContextReset(pgc_eval_context);
			pgc_eval_index_states = NULL;
			/*
			 * What the evaluation's transaction freed goes back to the
			 * kernel: after one that needed hundreds of megabytes (a hundred
			 * thousand index rows), the worker returns to its working size.
			 */
			pgc_release_free_memory();
		}

		if (pgc_incident_interval > 0)
		{
			TimestampTz wait_us = next - GetCurrentTimestamp();

			sleep_ms = wait_us > 0 ? (long) ((wait_us + 999) / 1000) : 0;
		}
		else
			sleep_ms = -1;
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
						 (sleep_ms >= 0 ? WL_TIMEOUT : 0),
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* Register the worker; called from _PG_init while preloading. */
void
pgc_incidents_register(void)
{
	if (pgc_incident_interval <= 0)
		return;
	/* A missing database is a FATAL at connection: retry, not in a loop. */
	pgc_register_worker("pgc_incidents_main", "pg_contention incidents", 10);
}
