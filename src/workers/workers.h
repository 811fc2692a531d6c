/*-------------------------------------------------------------------------
 *
 * workers.h
 *		What pg_contention's two background workers share: their
 *		registration and their start.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_WORKERS_H
#define PGC_WORKERS_H

#include "pg_contention.h"

#include "postmaster/bgworker.h"

extern void pgc_register_worker(const char *function, const char *name,
								int restart_seconds);
extern void pgc_worker_start(PgcWorker which, const char *name, bool attached,
							 const char *database, pqsigfunc on_sigterm,
							 pqsigfunc on_sigint);


/* ---- oldsnapshot.c: old_snapshot_threshold pressure ---- */

extern bool pgc_oldsnap_enabled(void);

extern void pgc_oldsnap_note_database(Oid dbid);

extern int64 pgc_oldsnap_read_operations(void);

extern void pgc_oldsnap_sample(int64 tick, PgcOldSnapFigures *figures);



/* ---- sampler_second.c: the sampler's once-a-second figures ---- */

extern bool pgc_sampler_read_subtrans_counters(int64 *lookups, int64 *reads);

extern uint64 pgc_sampler_read_next_xid(void);

extern int64 pgc_sampler_read_horizon_xid_age(void);

extern void pgc_sampler_close_bucket(TimestampTz second, bool slru_ok,
									 int64 lookups, int64 reads,
									 uint64 next_xid, int64 lock_ops,
									 int64 horizon_xid_age);

#endif							/* PGC_WORKERS_H */
