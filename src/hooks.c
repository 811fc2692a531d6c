/*-------------------------------------------------------------------------
 *
 * hooks.c
 *		The statement path: executor and utility hooks, the nesting level,
 *		and the transaction callbacks that bound the per-statement context.
 *
 * At the end of every executed statement (ExecutorEnd, any nesting level)
 * and of every utility statement, it checks whether this backend's
 * subtransaction cache has just overflowed (subxact.c records the event)
 * and counts the statement, with the suboverflowed and standby flags of its
 * snapshot, in the statement hash (statements.c).
 *
 * Owns no shared state.  Backend-local state: the nesting level, kept right
 * across errors with PG_FINALLY.  Parallel workers are skipped: they run
 * parts of a statement the leader already counts, and take no XIDs.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Executor or utility calls currently running in this backend. */
static int	nesting_level = 0;

static void
pgc_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* The statement the client sent: what an overflow event will name. */
	if (nesting_level == 0 && !IsParallelWorker())
		pgc_note_top_statement((int64) queryDesc->plannedstmt->queryId,
							   queryDesc->sourceText,
							   queryDesc->plannedstmt->stmt_location,
							   queryDesc->plannedstmt->stmt_len);
}

static void
pgc_ExecutorRun(PGC_EXECUTOR_RUN_PARAMS)
{
	nesting_level++;
	PG_TRY();
	{
		if (prev_ExecutorRun)
			prev_ExecutorRun(PGC_EXECUTOR_RUN_ARGS);
		else
			standard_ExecutorRun(PGC_EXECUTOR_RUN_ARGS);
	}
	PG_FINALLY();
	{
		nesting_level--;
	}
	PG_END_TRY();
}

static void
pgc_ExecutorFinish(QueryDesc *queryDesc)
{
	nesting_level++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		nesting_level--;
	}
	PG_END_TRY();
}

static void
pgc_ExecutorEnd(QueryDesc *queryDesc)
{
	if (!IsParallelWorker())
	{
		PlannedStmt *stmt = queryDesc->plannedstmt;

		(void) pgc_check_overflow((int64) stmt->queryId);

		if (pgc_track_statements)
		{
			Snapshot	snapshot = queryDesc->snapshot;
			bool		mvcc = snapshot != NULL &&
				snapshot->snapshot_type == SNAPSHOT_MVCC;

			pgc_statement_count((int64) stmt->queryId, queryDesc->sourceText,
								stmt->stmt_location, stmt->stmt_len,
								true,
								mvcc && snapshot->suboverflowed,
								mvcc && snapshot->takenDuringRecovery,
								false);
		}
	}

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);

	if (nesting_level == 0)
		pgc_forget_top_statement();
}

static void
pgc_ProcessUtility(PGC_PROCESS_UTILITY_PARAMS)
{
	bool		top_level = (nesting_level == 0);
	int64		query_id = pgc_utility_query_id(pstmt, queryString);

	if (top_level && !IsParallelWorker())
		pgc_note_top_statement(query_id, queryString,
							   pstmt->stmt_location, pstmt->stmt_len);

	nesting_level++;
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(PGC_PROCESS_UTILITY_ARGS);
		else
			standard_ProcessUtility(PGC_PROCESS_UTILITY_ARGS);
	}
	PG_FINALLY();
	{
		nesting_level--;
	}
	PG_END_TRY();

	/*
	 * Utility statements can write too (COPY, DDL).  They are not counted
	 * as calls (they have no snapshot of their own in the executor), only
	 * checked for an overflow.  COMMIT has ended the transaction by now, so
	 * its check finds nothing.
	 */
	if (!IsParallelWorker())
		(void) pgc_check_overflow(query_id);
	if (top_level)
		pgc_forget_top_statement();
}

/*
 * Transaction callbacks.  Before commit: a last chance to notice an overflow
 * no statement end saw (the statement that overflowed failed, and the
 * transaction went on after ROLLBACK TO SAVEPOINT).  At the end of the
 * transaction, or when a top-level statement's subtransaction aborts (an
 * error at nesting level 0), the top-level statement's text may be freed:
 * forget it.
 */
static void
pgc_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (!IsParallelWorker())
				(void) pgc_check_overflow(0);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			pgc_forget_top_statement();
			break;
		default:
			break;
	}
}

static void
pgc_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB || IsParallelWorker())
		return;
	/* The statement that took the XID failed; name the one around it. */
	(void) pgc_check_overflow(0);
	if (nesting_level == 0)
		pgc_forget_top_statement();
}

void
pgc_hooks_install(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = pgc_ExecutorStart;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = pgc_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = pgc_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = pgc_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = pgc_ProcessUtility;

	RegisterXactCallback(pgc_xact_callback, NULL);
	RegisterSubXactCallback(pgc_subxact_callback, NULL);
}
