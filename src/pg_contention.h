/*-------------------------------------------------------------------------
 *
 * pg_contention.h
 *		The one internal header of pg_contention: the shared-memory layout and
 *		the functions each file exports to the others, grouped by file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_CONTENTION_H
#define PG_CONTENTION_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#define PGC_VERSION "1.0"

#include "compat.h"

/*
 * The shared state.  One ShmemInitStruct block; later stores (statement
 * hash, event ring, sampler history) hang off it.  Sized once at postmaster
 * start from PGC_POSTMASTER settings.
 */
typedef struct PgcSharedState
{
	LWLock	   *lock;			/* protects the stores below, see shmem.c */
	TimestampTz started_at;		/* when the shared state was initialised */
} PgcSharedState;

/* shmem.c */
extern PgcSharedState *pgc_shared;
extern void pgc_shmem_request(void);
extern void pgc_shmem_startup(void);
extern void pgc_require_loaded(void);

/* activity.c */
extern bool pgc_can_see_details(Oid owner);
extern const char *pgc_backend_state_name(int state);
extern const char *pgc_backend_type_name(const PgBackendStatus *beentry);
extern Tuplestorestate *pgc_materialize(FunctionCallInfo fcinfo,
										TupleDesc *tupdesc);

#endif							/* PG_CONTENTION_H */
