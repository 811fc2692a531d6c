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
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#define PGC_VERSION "1.0"

#include "compat.h"

/*
 * Shared state header.  One ShmemInitStruct block; the statement hash and
 * the event ring are separate blocks found by name (shmem.c).  Capacities
 * are fixed at postmaster start from PGC_POSTMASTER settings.
 */
typedef struct PgcSharedState
{
	LWLock	   *statements_lock;	/* statement hash, see statements.c */
	LWLock	   *events_lock;	/* overflow event ring, see subxact.c */
	LWLock	   *sampler_lock;	/* profile, history, status: sampler.c */
	TimestampTz started_at;		/* when the shared state was created */
	TimestampTz stats_reset;	/* last pg_contention_reset(), or start */

	/* statement hash bookkeeping, under statements_lock */
	int64		statement_evictions;	/* entries evicted to make room */
	pg_atomic_uint64 statements_generation; /* bumped before entries move */

	/* overflow event ring, under events_lock */
	int64		events_written; /* events ever written since reset */
} PgcSharedState;

/* The key of the statement hash: who ran which statement where. */
typedef struct PgcStatementKey
{
	Oid			userid;
	Oid			dbid;
	int64		query_id;		/* 0 when query ids are off */
} PgcStatementKey;

/* Index scans: kinds, and one execution's counts for one index. */
#define PGC_INDEX_SLOTS 6		/* indexes tracked per statement */
#define PGC_SCAN_INDEX		1
#define PGC_SCAN_INDEX_ONLY	2
#define PGC_SCAN_BITMAP		3

typedef struct PgcIndexDelta
{
	Oid			indexoid;
	uint8		kind;
	int64		returned;		/* entries the index returned */
	int64		fetched;		/* heap tuples found visible */
} PgcIndexDelta;

/* old_snapshot_threshold pressure figures (oldsnapshot.c) */
#define PGC_PROBE_HIST_BUCKETS 32	/* bucket k: latency < 2^k ns */

typedef struct PgcOldSnapFigures
{
	bool		active;			/* the setting was on */
	int64		probes;			/* timed acquisitions of mutex_current */
	int64		probe_max_ns;
	int32		probe_hist[PGC_PROBE_HIST_BUCKETS];
	int64		lock_word_reads;	/* unlocked reads of the three lock words */
	int64		lock_word_held; /* of which saw the lock held */
	int64		lock_op_estimate;	/* transactions + block requests */
} PgcOldSnapFigures;

typedef struct PgcOldSnapWindow
{
	int			seconds;		/* completed seconds in the window */
	int64		ticks;
	int64		active_samples;
	int64		cpu_samples;
	int64		timemap_samples;
	int64		procarray_samples;
	bool		have_timemap;
	PgcOldSnapFigures figures;
} PgcOldSnapWindow;

/* One overflow event (a ring slot); query[] has max_query_length bytes. */
typedef struct PgcOverflowEvent
{
	TimestampTz event_time;
	int			pid;
	Oid			dbid;
	Oid			userid;
	TransactionId top_xid;
	int64		query_id;		/* top-level statement */
	int64		nested_query_id;	/* innermost statement, 0 if the same */
	int			nesting_depth;	/* subtransaction nesting at the event */
	char		application_name[NAMEDATALEN];
	char		query[FLEXIBLE_ARRAY_MEMBER];	/* NUL-terminated */
} PgcOverflowEvent;

/* pg_contention.c: settings */
extern int	pgc_max_query_length;
extern int	pgc_max_events;
extern int	pgc_max_statements;
extern bool pgc_track_statements;
extern bool pgc_sampler_enabled;
extern int	pgc_sample_period;
extern int	pgc_max_profile_entries;
extern int	pgc_history_seconds;

/* shmem.c */
extern PgcSharedState *pgc_shared;
extern void pgc_shmem_request(void);
extern void pgc_shmem_startup(void);
extern void pgc_require_loaded(void);

/* hooks.c */
extern void pgc_hooks_install(void);

/* statements.c */
extern Size pgc_statements_shmem_size(void);
extern void pgc_statements_shmem_init(bool first);
extern void pgc_statement_count(int64 query_id, const char *source_text,
								int stmt_location, int stmt_len,
								bool counted_call, bool suboverflowed,
								bool in_recovery, bool overflow_event,
								const PgcIndexDelta *deltas, int ndeltas);
extern void pgc_statements_reset(void);
extern int64 pgc_statements_count(void);

/* indexscan.c */
extern void pgc_index_scans_start(QueryDesc *queryDesc);
extern int	pgc_index_scans_end(QueryDesc *queryDesc, PgcIndexDelta *deltas);
extern void pgc_index_scans_forget(void);

/* subxact.c */
extern Size pgc_events_shmem_size(void);
extern void pgc_events_shmem_init(void);
extern void pgc_events_reset(void);
extern void pgc_note_top_statement(int64 query_id, const char *source_text,
								   int stmt_location, int stmt_len);
extern void pgc_forget_top_statement(void);
extern bool pgc_check_overflow(int64 current_query_id);

/* sampler.c */
extern Size pgc_sampler_shmem_size(void);
extern void pgc_sampler_shmem_init(void);
extern void pgc_sampler_register(void);
extern void pgc_sampler_reset(void);
extern void pgc_publish_query_id(int64 query_id);
extern void pgc_sampler_oldsnap_window(TimestampTz since, PgcOldSnapWindow *window,
									   PgcOldSnapFigures *total);

/* oldsnapshot.c */
extern void pgc_oldsnap_add_probe(PgcOldSnapFigures *f, int64 ns);
extern void pgc_oldsnap_merge(PgcOldSnapFigures *into, const PgcOldSnapFigures *from);

/* activity.c */
typedef struct PgcProcState
{
	int			pid;
	TransactionId xid;
	TransactionId xmin;
	int			subxact_count;
	bool		subxact_overflowed;
	uint8		status_flags;	/* PROC_IN_VACUUM, PROC_IN_LOGICAL_DECODING, ... */
	Oid			dbid;
} PgcProcState;

typedef struct PgcBackend
{
	PgBackendStatus *status;	/* from this transaction's status snapshot */
	PgcProcState *proc;			/* its PGPROC's transaction state */
} PgcBackend;

extern PgcProcState *pgc_collect_procs(int *n);
extern PgcProcState *pgc_find_proc(PgcProcState *states, int n, int pid);
extern PgcBackend *pgc_collect_backends(int *n);
extern bool pgc_put_state_and_query(const PgBackendStatus *be, Datum *values,
									bool *nulls, int state_col, int query_col);
extern void pgc_put_oid(Datum *values, bool *nulls, int col, Oid oid);
extern bool pgc_can_see_details(Oid owner);
extern const char *pgc_backend_state_name(int state);
extern const char *pgc_backend_type_name(const PgBackendStatus *beentry);
extern void pgc_copy_statement_text(char *dest, int destsize,
									const char *source_text,
									int stmt_location, int stmt_len);
extern Tuplestorestate *pgc_materialize(FunctionCallInfo fcinfo,
										TupleDesc *tupdesc);

#endif							/* PG_CONTENTION_H */
