/*-------------------------------------------------------------------------
 *
 * hooks.c
 *		The statement path: executor and utility hooks, and the transaction
 *		callbacks that clean up after statements that failed.
 *
 * At the end of every executed statement (ExecutorEnd, any nesting level)
 * and of every utility statement, it checks whether this backend's
 * subtransaction cache has just overflowed (subxact.c records the event)
 * and counts the statement in the statement hash (statements.c): the
 * suboverflowed and standby flags of its snapshot, the backend's cached
 * subtransaction count, what its index scans read (indexscan.c, baselines
 * taken at ExecutorStart), and for the client's statement its rows and
 * buffers (indexscan.c keeps the baselines).  An execution whose index
 * scans met at least pg_contention.dead_visits_warning dead entries also
 * brings the constants it ran with (normalize.c), read before any lock,
 * and has its indexes and, for a function's statement, its function noted
 * for readers in other databases (index_names.c).  SAVEPOINT,
 * RELEASE and ROLLBACK TO are counted as calls too.  A cursor's plan,
 * which the server leaves without a query id, is counted under the id of
 * the DECLARE that opened it.  The client's
 * statement is noted when it starts executing and forgotten when it ends
 * (current_statement.c), which is what the sampler attributes samples to.
 *
 * A statement is top-level (the one the client sent) when its source text
 * is the client's query string, debug_query_string: the same pointer for a
 * simple query; for the extended protocol's Execute an equal copy, and the
 * text of the portal that runs (ActivePortal's).  Nested statements
 * (functions, EXECUTE's prepared statement, SPI) have texts of their own,
 * which differ from the first characters on, or, equal, are not the
 * client portal's (a trigger that runs the client's text again).  That test
 * replaces pg_stat_statements-style nesting counters, whose ExecutorRun
 * and ExecutorFinish wrappers and PG_TRY blocks would cost more than
 * everything else on this path.  (Before PG16 an ExecutorRun hook does
 * exist, only to add each run's rows to its execution: it keeps no state
 * an error could leave behind.)
 *
 * Owns no shared state.  Backend-local: only the query id of a DECLARE
 * while it runs (declaring_query_id).  That, and the state of subxact.c
 * and indexscan.c that a failed statement leaves behind, is cleared by the
 * abort callbacks below, so no hook needs PG_TRY.  Parallel
 * workers are skipped: they run parts of a statement the leader already
 * counts, and take no XIDs.
 *
 *-------------------------------------------------------------------------
 */
#include "capture.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * EXEC_FLAG_EXPLAIN_ONLY while a client's EXPLAIN runs, else 0: the
 * executors its ANALYZE runs are counted as the plain EXPLAIN's are, not
 * at all.  A DBA's EXPLAIN (ANALYZE) of the application's lookup would
 * otherwise name the application's statement with its own text, and its
 * one bad execution keep an index finding alive after the application's
 * own executions ran clean.  Or'd into the flags the hooks test anyway.
 */
static int	client_explain_flags = 0;

static inline bool
is_client_statement(const char *source_text)
{
	if (likely(source_text == debug_query_string))
		return source_text != NULL;

	/*
	 * The extended protocol's Execute: debug_query_string is a copy of the
	 * text of the portal it runs, and that portal's statements have that
	 * text itself.  A nested statement whose text is equal (a trigger's
	 * EXECUTE of the client's very statement) has a text of its own, under
	 * the client's portal: equal is not enough.  (A function's cursor over
	 * that very text runs in a portal of its own, and would pass.)
	 */
	return debug_query_string != NULL && source_text != NULL &&
		ActivePortal != NULL && source_text == ActivePortal->sourceText &&
		strcmp(source_text, debug_query_string) == 0;
}

/*
 * The query id of a DECLARE CURSOR while it runs: the cursor's plan, which
 * the server gives no query id of its own, is counted under it.
 */
static int64 declaring_query_id = 0;

/*
 * The query id a statement is counted under: the server's; for a cursor's
 * plan (which has none), the DECLARE's; otherwise (PG13, compute_query_id
 * off) a hash of the statement's text.
 */
static inline int64
statement_query_id(PlannedStmt *stmt, const char *source_text)
{
	int64		query_id = (int64) stmt->queryId;

	if (likely(query_id != 0))
		return query_id;
	if (declaring_query_id != 0)
		return declaring_query_id;
	return pgc_text_query_id(stmt, source_text);
}

static PGC_FLATTEN void
pgc_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		top_level;
	int64		query_id;

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	if (IsParallelWorker())
		return;

	/*
	 * The statement the client sent: what an overflow event will name.  An
	 * executor a client's utility statement runs (CREATE TABLE AS, EXPLAIN
	 * ANALYZE) has the same text, and is nested in it.
	 */
	top_level = is_client_statement(queryDesc->sourceText) &&
		!pgc_client_utility_running;
	query_id = statement_query_id(queryDesc->plannedstmt, queryDesc->sourceText);
	if (top_level)
		pgc_statement_begin(query_id, queryDesc->sourceText,
							queryDesc->plannedstmt->stmt_location,
							queryDesc->plannedstmt->stmt_len,
							IsTransactionBlock());

	if (pgc_track_statements && ((eflags | client_explain_flags) & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		pgc_index_scans_start(queryDesc, query_id, top_level);
}

/*
 * Installed only where the server keeps no total of an execution's rows
 * over several runs (before PG16, see compat.h): before a run resets
 * es_processed, add the previous run's to the execution's frame.  The
 * first run finds none (the common case: one compare).
 */
static void
pgc_ExecutorRun(PGC_EXECUTOR_RUN_PARAMS)
{
	if (unlikely(queryDesc->estate->es_processed != 0))
		pgc_index_scans_ran(queryDesc);
	if (prev_ExecutorRun)
		prev_ExecutorRun(PGC_EXECUTOR_RUN_ARGS);
	else
		standard_ExecutorRun(PGC_EXECUTOR_RUN_ARGS);
}

/*
 * A statement ends with an overflow to record, or work pending: record
 * it, and if this executor is the client's statement and its overflow
 * event waits, give the event its counts (rows: the execution's, known
 * for a top-level one).  Out of line: the common path is the inline test.
 */
static pg_noinline void
overflow_at_executor_end(const char *source_text, int64 query_id, int64 rows)
{
	(void) pgc_record_overflow(query_id, false);
	if ((pgc_overflow_pending & PGC_OVERFLOW_EVENT_OPEN) &&
		is_client_statement(source_text) && !pgc_client_utility_running)
		pgc_overflow_statement_done(rows);
}

/* The same for a utility statement: COPY's rows; a CALL's or DO's unknown. */
static pg_noinline void
overflow_at_utility_end(int64 query_id, bool client_statement, QueryCompletion *qc)
{
	(void) pgc_record_overflow(query_id, false);
	if ((pgc_overflow_pending & PGC_OVERFLOW_EVENT_OPEN) && client_statement)
		pgc_overflow_statement_done(qc != NULL && qc->nprocessed > 0 ?
									(int64) qc->nprocessed : -1);
}

static PGC_FLATTEN void
pgc_ExecutorEnd(QueryDesc *queryDesc)
{
	if (!IsParallelWorker())
	{
		PlannedStmt *stmt = queryDesc->plannedstmt;
		bool		counted = pgc_track_statements &&
			(queryDesc->estate == NULL ||
			 ((queryDesc->estate->es_top_eflags | client_explain_flags) & EXEC_FLAG_EXPLAIN_ONLY) == 0);
		PgcExecution exec;
		int64		query_id;
		char		literals[PGC_LITERALS_LEN];

		exec.flags = PGC_COUNT_CALL;
		exec.ndeltas = 0;
		exec.max_dead = 0;
		exec.literals = NULL;

		/* Its frame knows the id it started under (a cursor's). */
		if (!counted || !pgc_index_scans_end(queryDesc, &query_id, &exec))
			query_id = statement_query_id(queryDesc->plannedstmt, queryDesc->sourceText);

		if (pgc_overflow_attention())
			overflow_at_executor_end(queryDesc->sourceText, query_id,
									 (exec.flags & PGC_COUNT_TOP_LEVEL) ? exec.rows : -1);

		/* EXPLAIN without ANALYZE runs nothing: not a call. */
		if (counted)
		{
			Snapshot	snapshot = queryDesc->snapshot;
			bool		mvcc = snapshot != NULL &&
				snapshot->snapshot_type == SNAPSHOT_MVCC;

			if (mvcc && snapshot->suboverflowed)
				exec.flags |= PGC_COUNT_SUBOVERFLOWED;
			if (mvcc && snapshot->takenDuringRecovery)
				exec.flags |= PGC_COUNT_STANDBY;

			/* Only this backend writes its PGPROC's cache count. */
			exec.subxacts = PGC_PROC_SUBXID_COUNT(MyProc);

			/*
			 * An execution whose index scans met many dead entries may be
			 * its statement's worst: note the constants it ran with, here,
			 * outside any lock (output functions may run).  A healthy
			 * execution pays one compare.
			 */
			if (unlikely(exec.max_dead >= pgc_dead_visits_warning))
			{
				pgc_execution_literals(queryDesc, literals);
				exec.literals = literals;
				pgc_note_dead_index_names(&exec);
				/* A function's statement: which function, for the finding. */
				if ((exec.flags & PGC_COUNT_TOP_LEVEL) == 0)
					pgc_nested_context_note(query_id, exec.max_dead);
			}
			pgc_statement_count(InvalidOid, query_id, queryDesc->sourceText,
								stmt->stmt_location, stmt->stmt_len, &exec);
		}
		pgc_statement_end(queryDesc->sourceText);
	}

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

/* The kind of a transaction-control statement, or -1 for another. */
static int
transaction_statement_kind(PlannedStmt *pstmt)
{
	TransactionStmt *stmt = (TransactionStmt *) pstmt->utilityStmt;

	if (stmt == NULL || !IsA(stmt, TransactionStmt))
		return -1;
	return (int) stmt->kind;
}

/* COMMIT, ROLLBACK, PREPARE TRANSACTION: their work follows their return. */
static bool
is_transaction_end(int kind)
{
	return kind == TRANS_STMT_COMMIT || kind == TRANS_STMT_ROLLBACK ||
		kind == TRANS_STMT_PREPARE;
}

/* SAVEPOINT, RELEASE, ROLLBACK TO: counted as calls, a driver's fingerprint. */
static bool
is_savepoint_statement(int kind)
{
	return kind == TRANS_STMT_SAVEPOINT || kind == TRANS_STMT_RELEASE ||
		kind == TRANS_STMT_ROLLBACK_TO;
}

/*
 * A savepoint statement's query id: a hash of its text without digits, on
 * every version.  The server's ignores the savepoint's name from 16 on (all
 * savepoints would be one row, labelled with whichever name came first),
 * and keeps every numbered name apart before; a driver's fixed name
 * (PGJDBC_AUTOSAVE) must stay recognisable, and an ORM's numbered names
 * (sa_savepoint_1, 2, ...; psycopg 3's _pg3_1, 2, ...) must not fill the
 * hash.  The text its entry shows, its pattern, is built only when the
 * entry is created (pgc_savepoint_pattern).  A statement of the usual
 * length is copied on the stack.
 */
#define SAVEPOINT_TEXT_ON_STACK 128

static int64
savepoint_query_id(PlannedStmt *pstmt, const char *source_text)
{
	int			location = Max(pstmt->stmt_location, 0);
	int			len = pstmt->stmt_len > 0 ? pstmt->stmt_len :
		(int) strlen(source_text + location);
	const char *stmt = source_text + location;
	char		on_stack[SAVEPOINT_TEXT_ON_STACK];
	char	   *text = len <= SAVEPOINT_TEXT_ON_STACK ? on_stack : palloc(len);
	int			n = 0;
	uint64		id;

	for (int i = 0; i < len; i++)
	{
		if (stmt[i] < '0' || stmt[i] > '9')
			text[n++] = stmt[i];
	}
	id = hash_bytes_extended((const unsigned char *) text, n, 0);
	if (text != on_stack)
		pfree(text);
	return (int64) (id != 0 ? id : 1);
}

static void
pgc_ProcessUtility(PGC_PROCESS_UTILITY_PARAMS)
{
	int			kind = transaction_statement_kind(pstmt);
	bool		savepoint = is_savepoint_statement(kind) && queryString != NULL;
	int64		query_id = savepoint ?
		savepoint_query_id(pstmt, queryString) :
		statement_query_id(pstmt, queryString);
	bool		declares = pstmt->utilityStmt != NULL &&
		IsA(pstmt->utilityStmt, DeclareCursorStmt);

	/*
	 * The client's statement, not a part of it (CREATE SCHEMA's
	 * subcommands come back here with the same text).  It ends when this
	 * call returns, even if it opened a cursor whose executor noted itself
	 * with the cursor's own copy of the text meanwhile.
	 */
	bool		client_statement = context == PROCESS_UTILITY_TOPLEVEL &&
		!IsParallelWorker() && is_client_statement(queryString);

	/*
	 * It runs until this call returns, across the transactions it may end
	 * inside (CALL, DO, VACUUM, CREATE INDEX CONCURRENTLY), with the
	 * executors it starts nested in it; DECLARE CURSOR's executor is the
	 * cursor's, a statement of its own (current_statement.c).
	 */
	bool		whole_call = client_statement && !declares;
	bool		explains = whole_call && IsA(pstmt->utilityStmt, ExplainStmt);

	if (client_statement)
		pgc_statement_begin(query_id, queryString,
							pstmt->stmt_location, pstmt->stmt_len, false);

	/* An error leaves it set: the abort callback clears it. */
	if (declares)
		declaring_query_id = query_id;

	if (whole_call)
	{
		/* The transactions inside are not this statement's end, even on error. */
		pgc_client_utility_running = true;
		if (explains)
			client_explain_flags = EXEC_FLAG_EXPLAIN_ONLY;
		PG_TRY();
		{
			if (prev_ProcessUtility)
				prev_ProcessUtility(PGC_PROCESS_UTILITY_ARGS);
			else
				standard_ProcessUtility(PGC_PROCESS_UTILITY_ARGS);
		}
		PG_FINALLY();
		{
			pgc_client_utility_running = false;
			client_explain_flags = 0;
		}
		PG_END_TRY();
	}
	else if (prev_ProcessUtility)
		prev_ProcessUtility(PGC_PROCESS_UTILITY_ARGS);
	else
		standard_ProcessUtility(PGC_PROCESS_UTILITY_ARGS);

	if (declares)
		declaring_query_id = 0;

	/*
	 * Utility statements can write too (COPY, DDL).  They are not counted
	 * as calls (they have no snapshot of their own in the executor), only
	 * checked for an overflow, except the savepoint statements.  COMMIT
	 * has ended the transaction by now, so its check finds nothing.
	 */
	if (!IsParallelWorker())
	{
		if (pgc_overflow_attention())
			overflow_at_utility_end(query_id, client_statement, qc);
		if (pgc_track_statements && savepoint)
		{
			PgcExecution exec;

			exec.flags = PGC_COUNT_CALL | PGC_COUNT_SAVEPOINT;
			exec.subxacts = PGC_PROC_SUBXID_COUNT(MyProc);
			exec.ndeltas = 0;
			exec.max_dead = 0;
			exec.literals = NULL;
			pgc_statement_count(InvalidOid, query_id, queryString,
								pstmt->stmt_location, pstmt->stmt_len, &exec);
		}
		if (client_statement)
			pgc_statement_end_utility(is_transaction_end(kind));
	}
}

/*
 * Transaction callbacks.  Every XID is taken inside a statement, so an
 * overflow is seen at that statement's end, or, if it fails inside a
 * subtransaction, when that subtransaction aborts (the event then names
 * the top-level statement around it).  If the whole transaction fails,
 * the server clears the flag before we could look: that overflow is not
 * recorded.
 *
 * Index-scan baselines: an executor that fails never reaches ExecutorEnd,
 * and it need not belong to the subtransaction that aborts (a cursor
 * opened before a savepoint and fetched after it).  So every abort, and
 * the end of the transaction, drops them all; an outer statement that is
 * still running then goes uncounted for that one execution, which is the
 * price of never keeping a pointer to a dead executor.
 */
static pg_noinline void
transaction_ended(bool aborted)
{
	pgc_transaction_end(aborted);
	pgc_index_scans_forget();
	if (aborted)
		pgc_overflow_forget_open_event();
	declaring_query_id = 0;
}

static void
pgc_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
			transaction_ended(true);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			transaction_ended(false);
			break;
		default:
			break;
	}
}

static void
pgc_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	/*
	 * A subtransaction that took an XID (one that fills the cache) ends:
	 * counted, for the event of a statement that overflows.  It is still
	 * the current transaction state while its callbacks run.
	 */
	if ((event == SUBXACT_EVENT_COMMIT_SUB || event == SUBXACT_EVENT_ABORT_SUB) &&
		TransactionIdIsValid(GetCurrentTransactionIdIfAny()))
		pgc_subxid_ended();
	if (event != SUBXACT_EVENT_ABORT_SUB || IsParallelWorker())
		return;
	(void) pgc_check_overflow(0, true);
	pgc_index_scans_forget();
	declaring_query_id = 0;
}

void
pgc_hooks_install(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = pgc_ExecutorStart;
	if (PGC_SUM_ROWS_BEFORE_RUN)
	{
		prev_ExecutorRun = ExecutorRun_hook;
		ExecutorRun_hook = pgc_ExecutorRun;
	}
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = pgc_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = pgc_ProcessUtility;

	RegisterXactCallback(pgc_xact_callback, NULL);
	RegisterSubXactCallback(pgc_subxact_callback, NULL);
}
