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


/*
 * Shares of active time (cpu_share_of_active) need this many active
 * samples, one busy backend for a second at the default period; below it
 * they are NULL, not a ratio of a handful of samples.
 */
#define PGC_MIN_ACTIVE_SAMPLES 100

/* ---- oldsnapshot.c: old_snapshot_threshold pressure ---- */

extern bool pgc_oldsnap_enabled(void);

extern void pgc_oldsnap_note_database(Oid dbid);

extern int64 pgc_oldsnap_read_operations(void);

extern void pgc_oldsnap_sample(int64 tick, PgcOldSnapFigures *figures);

extern void pgc_oldsnap_add(PgcOldSnapFigures *into,
							const PgcOldSnapFigures *from);

extern void pgc_oldsnap_add_to_total(const PgcOldSnapFigures *figures);

#endif							/* PGC_WORKERS_H */
