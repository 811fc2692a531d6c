/*-------------------------------------------------------------------------
 *
 * activity.c
 *		Helpers shared by the views that describe backends: who may see
 *		what (the pg_stat_activity rules), and how backend states and types
 *		are named.
 *
 * Owns no shared state.  pgc_collect_procs() takes ProcArrayLock in shared
 * mode for one pass over the PGPROC array; nothing else here locks.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "catalog/pg_authid.h"
#include "postmaster/bgworker.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
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

static int
compare_pid(const void *a, const void *b)
{
	int			pa = ((const PgcProcState *) a)->pid;
	int			pb = ((const PgcProcState *) b)->pid;

	return (pa > pb) - (pa < pb);
}

/*
 * A parallel worker's leader, or 0.  Read as pg_stat_activity's leader_pid
 * is, without the lock group's partition lock: a worker joins its group
 * before it runs anything and leaves it as it exits, and a PGPROC is never
 * freed, so the pointer read is at worst a moment stale, never invalid; a
 * pid is four aligned bytes.
 */
static int
parallel_leader_pid(volatile PGPROC *proc)
{
	volatile PGPROC *leader = proc->lockGroupLeader;

	if (leader == NULL || leader == proc)
		return 0;
	return leader->pid;
}

/*
 * Copy the transaction state of every live PGPROC, sorted by pid, into a
 * palloc'd array; *n is set to the count.
 *
 * Why this is safe: ProcArrayLock is held in shared mode for this one pass
 * only, so a transaction cannot end (ProcArrayEndTransaction needs it
 * exclusively) while we read its xid, xmin and flags, and each backend's
 * copy is consistent against commits.  New subtransaction XIDs are added
 * under XidGenLock, not ProcArrayLock, so a cache count can still grow
 * while we read; each field is read once, is at most four bytes and
 * aligned, so it cannot be torn, and a count one behind is harmless for
 * monitoring.  A PGPROC whose latch has no owner belongs to no live process
 * (before PG17 ProcKill leaves pid set, but always disowns the latch).
 * Prepared transactions' dummy PGPROCs (pid 0, beyond allProcCount) are
 * not included.
 */
PgcProcState *
pgc_collect_procs(int *n)
{
	uint32		nprocs = ProcGlobal->allProcCount;
	PgcProcState *states = palloc(sizeof(PgcProcState) * Max(nprocs, 1));
	int			count = 0;

	LWLockAcquire(ProcArrayLock, LW_SHARED);
	for (uint32 i = 0; i < nprocs; i++)
	{
		volatile PGPROC *proc = &ProcGlobal->allProcs[i];
		int			pid = proc->pid;

		if (pid == 0 || proc->procLatch.owner_pid == 0)
			continue;
		states[count].pid = pid;
		states[count].xid = PGC_PROC_XID(proc);
		states[count].xmin = PGC_PROC_XMIN(proc);
		states[count].subxact_count = PGC_PROC_SUBXID_COUNT(proc);
		states[count].subxact_overflowed = PGC_PROC_SUBXID_OVERFLOWED(proc);
		states[count].status_flags = PGC_PROC_STATUS_FLAGS(proc);
		states[count].dbid = proc->databaseId;
		states[count].leader_pid = parallel_leader_pid(proc);
		count++;
	}
	LWLockRelease(ProcArrayLock);

	qsort(states, count, sizeof(PgcProcState), compare_pid);
	*n = count;
	return states;
}

PgcProcState *
pgc_find_proc(PgcProcState *states, int n, int pid)
{
	PgcProcState key;

	key.pid = pid;
	return bsearch(&key, states, n, sizeof(PgcProcState), compare_pid);
}

/*
 * Every backend that has both an entry in this transaction's snapshot of
 * backend status (as pg_stat_activity shows) and a live PGPROC, joined by
 * pid; palloc'd, *n set to the count.
 */
PgcBackend *
pgc_collect_backends(int *n)
{
	int			nstates;
	PgcProcState *states = pgc_collect_procs(&nstates);
	int			nbackends = pgstat_fetch_stat_numbackends();
	PgcBackend *backends = palloc(sizeof(PgcBackend) * Max(nbackends, 1));
	int			count = 0;
	int			incidents_pid = pgc_own_pid(PGC_WORKER_INCIDENTS);

	for (int i = 1; i <= nbackends; i++)
	{
		LocalPgBackendStatus *local = pgc_local_beentry(i);
		PgcProcState *proc;

		/*
		 * The incidents worker's evaluations (a transaction of a few ms
		 * every incident_interval) are pg_contention's own, not the
		 * workload's: left out as the sampler leaves them out.
		 */
		if (local == NULL || (incidents_pid != 0 &&
							  local->backendStatus.st_procpid == incidents_pid))
			continue;
		proc = pgc_find_proc(states, nstates, local->backendStatus.st_procpid);
		if (proc == NULL)
			continue;			/* exited since the status snapshot */
		backends[count].status = &local->backendStatus;
		backends[count].proc = proc;
		count++;
	}
	*n = count;
	return backends;
}

/*
 * The columns pg_stat_activity shows only to the backend's role and to
 * pg_read_all_stats: its state into values[state_col] and its statement
 * into values[query_col], or NULL and "<insufficient privilege>".  Returns
 * whether the caller may show the backend's other details.
 */
bool
pgc_put_state_and_query(const PgBackendStatus *be, Datum *values, bool *nulls,
						int state_col, int query_col)
{
	const char *state;
	char	   *query;

	if (!pgc_can_see_details(be->st_userid))
	{
		nulls[state_col] = true;
		values[query_col] = CStringGetTextDatum("<insufficient privilege>");
		return false;
	}
	state = pgc_backend_state_name(be->st_state);
	if (state)
		values[state_col] = CStringGetTextDatum(state);
	else
		nulls[state_col] = true;
	query = pgstat_clip_activity(be->st_activity_raw);
	/* In the backend's database's encoding: made valid in ours. */
	values[query_col] = pgc_text_datum(query, be->st_databaseid);
	pfree(query);
	return true;
}

/* An oid, or NULL when invalid. */
void
pgc_put_oid(Datum *values, bool *nulls, int col, Oid oid)
{
	if (OidIsValid(oid))
		values[col] = ObjectIdGetDatum(oid);
	else
		nulls[col] = true;
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
