/*-------------------------------------------------------------------------
 *
 * subxact.c
 *		The live subtransaction view: for every backend with a transaction
 *		open, how many subtransaction XIDs its PGPROC caches and whether the
 *		cache has overflowed (which makes every snapshot in the cluster
 *		suboverflowed).
 *
 * Owns no shared state.  Reads other backends' PGPROCs in one pass under
 * ProcArrayLock held in shared mode, and their backend status through the
 * pgstat snapshot (which takes no lock of ours).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/transam.h"
#include "funcapi.h"
#include "storage/procarray.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_subxact);

/* Transaction state of one live PGPROC, copied out of shared memory. */
typedef struct ProcXactState
{
	int			pid;
	TransactionId xid;
	TransactionId xmin;
	int			subxact_count;
	bool		subxact_overflowed;
} ProcXactState;

static int
compare_pid(const void *a, const void *b)
{
	int			pa = ((const ProcXactState *) a)->pid;
	int			pb = ((const ProcXactState *) b)->pid;

	return (pa > pb) - (pa < pb);
}

/*
 * Copy the transaction state of every live PGPROC into "states" (sized for
 * ProcGlobal->allProcCount entries) and return how many were copied, sorted
 * by pid.
 *
 * Why this is safe: ProcArrayLock is held in shared mode for this one pass
 * only, so a transaction cannot end (ProcArrayEndTransaction needs it
 * exclusively) while we read its xid, xmin and cache status, and the copy
 * is consistent against commits.  New subtransaction XIDs are added under
 * XidGenLock, not ProcArrayLock, so the count can still grow while we read;
 * each field is read once, is at most four bytes and aligned, so it cannot
 * be torn, and a count that is one behind is harmless for monitoring.  A
 * PGPROC whose latch has no owner belongs to no live process (before PG17
 * ProcKill leaves pid set, but always disowns the latch).
 */
static int
collect_proc_states(ProcXactState *states)
{
	uint32		nprocs;
	int			n = 0;

	LWLockAcquire(ProcArrayLock, LW_SHARED);
	nprocs = ProcGlobal->allProcCount;
	for (uint32 i = 0; i < nprocs; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		int			pid = ((volatile PGPROC *) proc)->pid;

		if (pid == 0 || ((volatile PGPROC *) proc)->procLatch.owner_pid == 0)
			continue;
		states[n].pid = pid;
		states[n].xid = PGC_PROC_XID(proc);
		states[n].xmin = PGC_PROC_XMIN(proc);
		states[n].subxact_count = PGC_PROC_SUBXID_COUNT(proc);
		states[n].subxact_overflowed = PGC_PROC_SUBXID_OVERFLOWED(proc);
		n++;
	}
	LWLockRelease(ProcArrayLock);

	qsort(states, n, sizeof(ProcXactState), compare_pid);
	return n;
}

#define SUBXACT_COLS 13

Datum
pg_contention_subxact(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	ProcXactState *states;
	int			nstates;
	int			nbackends;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);

	/* Allocate before taking the lock: palloc may fail. */
	states = palloc(sizeof(ProcXactState) * ProcGlobal->allProcCount);
	nstates = collect_proc_states(states);

	nbackends = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= nbackends; i++)
	{
		LocalPgBackendStatus *local = pgc_local_beentry(i);
		PgBackendStatus *be;
		ProcXactState key;
		ProcXactState *st;
		Datum		values[SUBXACT_COLS] = {0};
		bool		nulls[SUBXACT_COLS] = {0};

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		key.pid = be->st_procpid;
		st = bsearch(&key, states, nstates, sizeof(ProcXactState), compare_pid);
		if (st == NULL)
			continue;			/* exited since the status snapshot */

		/* Only backends that have a transaction open. */
		if (be->st_xact_start_timestamp == 0 &&
			!TransactionIdIsValid(st->xid) &&
			!TransactionIdIsValid(st->xmin) &&
			st->subxact_count == 0 && !st->subxact_overflowed)
			continue;

		/* Visible to everyone, as in pg_stat_activity. */
		values[0] = Int32GetDatum(st->pid);
		if (OidIsValid(be->st_databaseid))
			values[1] = ObjectIdGetDatum(be->st_databaseid);
		else
			nulls[1] = true;
		if (OidIsValid(be->st_userid))
			values[2] = ObjectIdGetDatum(be->st_userid);
		else
			nulls[2] = true;
		if (be->st_appname)
			values[3] = CStringGetTextDatum(be->st_appname);
		else
			nulls[3] = true;
		values[4] = CStringGetTextDatum(pgc_backend_type_name(be));
		if (TransactionIdIsValid(st->xid))
			values[7] = TransactionIdGetDatum(st->xid);
		else
			nulls[7] = true;
		if (TransactionIdIsValid(st->xmin))
			values[8] = TransactionIdGetDatum(st->xmin);
		else
			nulls[8] = true;
		values[9] = Int32GetDatum(st->subxact_count);
		values[10] = BoolGetDatum(st->subxact_overflowed);

		/* State, times and statement only for the owner and pg_read_all_stats. */
		if (pgc_can_see_details(be->st_userid))
		{
			const char *state = pgc_backend_state_name(be->st_state);
			char	   *query = pgstat_clip_activity(be->st_activity_raw);
			int64		query_id = PGC_BEENTRY_QUERY_ID(be);

			if (state)
				values[5] = CStringGetTextDatum(state);
			else
				nulls[5] = true;
			if (be->st_xact_start_timestamp != 0)
				values[6] = TimestampTzGetDatum(be->st_xact_start_timestamp);
			else
				nulls[6] = true;
			if (query_id != 0)
				values[11] = Int64GetDatum(query_id);
			else
				nulls[11] = true;
			values[12] = CStringGetTextDatum(query);
			pfree(query);
		}
		else
		{
			nulls[5] = nulls[6] = nulls[11] = true;
			values[12] = CStringGetTextDatum("<insufficient privilege>");
		}

		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}

	pfree(states);
	return (Datum) 0;
}
