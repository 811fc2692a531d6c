/*-------------------------------------------------------------------------
 *
 * oldsnapshot.c
 *		old_snapshot_threshold pressure (PostgreSQL 13-16): the state of the
 *		server's oldSnapshotControl and figures that rise with contention on
 *		its spinlocks, which have no wait event before PostgreSQL 17.
 *
 * Everything about the setting is here: the sampler's worker calls in
 * only while it is on.  Each tick, the three lock words are read a few
 * dozen times without taking them to see how often one is held; every
 * fifth tick, a few acquisitions of mutex_current (the spinlock every
 * snapshot takes) are timed into a latency histogram; once a second the
 * operations that take these locks are estimated from the statistics the
 * server keeps.  The per-second figures ride in the sampler's history
 * buckets; the view sums a window of them.  The raw, version-specific
 * reads of the server's structure are in compat.c.
 *
 * Owns no shared state: the figures since the last reset are a store's
 * (stores/old_snapshot.c), which the worker adds each tick's to; the
 * view is readers/old_snapshot_view.c.  The list of databases for the
 * estimate is the worker's own.  Reading the server's state takes the
 * server's spinlocks and OldSnapshotTimeMapLock in shared mode, briefly.
 *
 *-------------------------------------------------------------------------
 */
#include "workers.h"

#include <math.h>

#include "pgstat.h"
#include "portability/instr_time.h"

/* Is there anything to measure: the version has the setting, and it is on. */
bool
pgc_oldsnap_enabled(void)
{
	return pgc_oldsnap_supported() && pgc_oldsnap_setting() >= 0;
}

/* ---- the worker's side ---- */

/*
 * While old_snapshot_threshold is on: lock-word reads every tick, and two
 * timed acquisitions every fifth tick.  An acquisition can wait through
 * the spinlock's back-off (milliseconds under heavy contention), which
 * delays the sampler's next tick; probing less often bounds that.
 */
#define OLDSNAP_READS_PER_LOCK	32
#define OLDSNAP_PROBE_EVERY		5
#define OLDSNAP_PROBES_PER_TICK 2

/* Databases seen in samples, for the operation estimate (worker-private). */
#define MAX_ESTIMATE_DBS 16
static Oid	estimate_dbs[MAX_ESTIMATE_DBS];
static int64 estimate_last_ops[MAX_ESTIMATE_DBS];
static int	n_estimate_dbs = 0;

static void
add_probe(PgcOldSnapFigures *f, int64 ns)
{
	int			k = 0;

	while (k < PGC_PROBE_HIST_BUCKETS - 1 && ((int64) 1 << k) <= ns)
		k++;
	f->probe_hist[k]++;
	f->probes++;
	f->probe_max_ns = Max(f->probe_max_ns, ns);
}

/* A database with an active backend this tick: estimate its operations. */
void
pgc_oldsnap_note_database(Oid dbid)
{
	if (!OidIsValid(dbid))
		return;
	for (int i = 0; i < n_estimate_dbs; i++)
		if (estimate_dbs[i] == dbid)
			return;
	if (n_estimate_dbs < MAX_ESTIMATE_DBS)
	{
		estimate_dbs[n_estimate_dbs] = dbid;
		estimate_last_ops[n_estimate_dbs] = -1;
		n_estimate_dbs++;
	}
}

/*
 * Operations that take the old-snapshot spinlocks while the setting is on,
 * estimated from counters the server keeps: transactions (each takes at
 * least one snapshot) and block requests (each heap page read may try
 * pruning) in the databases seen in samples, since the last call.  Called
 * once a second, right after the sampler read the SLRU counters, from the
 * same statistics snapshot; what the fetch allocates is in the worker's
 * per-tick context.
 */
int64
pgc_oldsnap_read_operations(void)
{
	int64		ops = 0;

	for (int i = 0; i < n_estimate_dbs; i++)
	{
		PgStat_StatDBEntry *db = pgstat_fetch_stat_dbentry(estimate_dbs[i]);
		int64		now_ops;

		if (db == NULL)
			continue;
		now_ops = PGC_DB_LOCK_OPS(db);
		if (estimate_last_ops[i] >= 0 && now_ops > estimate_last_ops[i])
			ops += now_ops - estimate_last_ops[i];
		estimate_last_ops[i] = now_ops;
	}
	return ops;
}

/* One tick: look at the lock words, and every fifth tick time a few probes. */
void
pgc_oldsnap_sample(int64 tick, PgcOldSnapFigures *f)
{
	f->active = true;

	/* Look first: right after our own probe the line would be ours. */
	f->lock_word_reads += PGC_OLDSNAP_LOCKS * OLDSNAP_READS_PER_LOCK;
	f->lock_word_held += pgc_oldsnap_locks_held(OLDSNAP_READS_PER_LOCK);

	if (tick % OLDSNAP_PROBE_EVERY != 0)
		return;
	for (int i = 0; i < OLDSNAP_PROBES_PER_TICK; i++)
	{
		instr_time	start,
					end;

		INSTR_TIME_SET_CURRENT(start);
		pgc_oldsnap_probe();
		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_SUBTRACT(end, start);
		add_probe(f, (int64) (INSTR_TIME_GET_DOUBLE(end) * 1e9));
	}
}
