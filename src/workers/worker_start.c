/*-------------------------------------------------------------------------
 *
 * worker_start.c
 *		The start of pg_contention's background workers, shared by the
 *		sampler and the incidents worker: their registration at server
 *		start, and in the worker its signals, the check that the library's
 *		shared memory is there, its connection, its name, and its pid as
 *		one of pg_contention's own processes (pgc_own_pid).
 *
 * Owns nothing; the pid is kept in the registry's header (stores/shmem.c),
 * written only by the worker itself.
 *
 *-------------------------------------------------------------------------
 */
#include "workers.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"

/*
 * Register one of the library's background workers: connected to shared
 * memory and (the function's choice) a database, started once the server
 * is consistent (on a hot standby too), restarted restart_seconds after it
 * exits.
 */
void
pgc_register_worker(const char *function, const char *name, int restart_seconds)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = restart_seconds;
	strlcpy(worker.bgw_library_name, "pg_contention", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, function, sizeof(worker.bgw_function_name));
	strlcpy(worker.bgw_name, name, sizeof(worker.bgw_name));
	strlcpy(worker.bgw_type, name, sizeof(worker.bgw_type));
	RegisterBackgroundWorker(&worker);
}

static void
forget_own_pid(int code, Datum arg)
{
	if (pgc_own_pid((PgcWorker) DatumGetInt32(arg)) == MyProcPid)
		pgc_set_own_pid((PgcWorker) DatumGetInt32(arg), 0);
}

/*
 * The start every worker makes: its signal handlers, then, when the
 * library's shared memory is attached (attached: the worker's store
 * too), its connection to database (NULL: none) under its name, and its
 * pid published.  A worker that loaded the library under another path
 * than the one preloaded is a second copy without the shared state: it
 * says so and exits 0, so the postmaster does not restart it.
 */
void
pgc_worker_start(PgcWorker which, const char *name, bool attached,
				 const char *database, pqsigfunc on_sigterm, pqsigfunc on_sigint)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, on_sigterm);
	pqsignal(SIGINT, on_sigint);
	BackgroundWorkerUnblockSignals();

	if (pgc_shared == NULL || !attached)
	{
		ereport(LOG,
				(errmsg("%s not started: the library was not preloaded as \"pg_contention\"", name),
				 errhint("List it as pg_contention in shared_preload_libraries.")));
		proc_exit(0);
	}

	BackgroundWorkerInitializeConnection(database, NULL, 0);
	pgstat_report_appname(name);
	pgc_set_own_pid(which, MyProcPid);
	before_shmem_exit(forget_own_pid, Int32GetDatum((int32) which));
}
