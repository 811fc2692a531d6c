/*-------------------------------------------------------------------------
 *
 * sampler_store.h
 *		The sampler's stores: its shared state, the wait profile and the
 *		per-second history, private to the store (sampler_store.c), its
 *		section of the stores' file (sampler_file.c) and its one writer,
 *		the worker that fills them (workers/sampler.c, sampler_second.c).
 *		Everything else reads them through the copies pg_contention.h
 *		declares.
 *
 * The locking rules are the worker's (workers/sampler.c's header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_SAMPLER_STORE_H
#define PGC_SAMPLER_STORE_H

#include "stores.h"

#include "storage/latch.h"

/* The sampler's shared state; the profile and history arrays follow it. */
typedef struct SamplerShared
{
	LWLock	   *lock;
	PgcSamplerStatus status;
	bool		named_found[PGC_NUM_NAMED_WAITS];	/* exists in this server */
	uint32		named_info[PGC_NUM_NAMED_WAITS];	/* its wait_event_info */
	uint64		reset_generation;	/* bumped by reset */
	PgcHistoryBucket current;	/* the second being filled */
	/* pgc_sampler_request_save(): set by any process, cleared by the worker */
	pg_atomic_uint32 save_requested;
	Latch	   *worker_latch;	/* the worker's, NULL while none runs */
	/* set by the worker while it dozes, cleared by whoever wakes it */
	pg_atomic_uint32 doze;
	pg_atomic_uint32 woken_by;	/* the pid that woke it, for DEBUG1 */
} SamplerShared;

extern SamplerShared *pgc_sampler;
extern PgcProfileEntry *pgc_profile;
extern PgcHistoryBucket *pgc_history;

#endif							/* PGC_SAMPLER_STORE_H */
