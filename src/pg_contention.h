/*-------------------------------------------------------------------------
 *
 * pg_contention.h
 *		The one internal header of pg_contention: the types several files
 *		share and the functions each file exports to the others, grouped by
 *		file.  Everything else in src/ is static.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_CONTENTION_H
#define PG_CONTENTION_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "port/pg_crc32c.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#define PGC_VERSION "1.4"

#include "compat.h"

/*
 * On the executor hooks: compile every call they make into them (with the
 * Makefile's link-time optimisation, across files too), except what is
 * marked pg_noinline (the cold paths).  GCC and clang only.
 */
#if defined(__GNUC__) || defined(__clang__)
#define PGC_FLATTEN __attribute__((flatten))
#else
#define PGC_FLATTEN
#endif

/* ---- settings.c: the settings (module.c defines them at start) ---- */
extern void pgc_define_settings(void);
extern int	pgc_max_query_length;
extern int	pgc_max_events;
extern int	pgc_max_statements;
extern bool pgc_track_statements;
extern bool pgc_sampler_enabled;
extern int	pgc_sample_period;
extern int	pgc_max_profile_entries;
extern int	pgc_history_seconds;
extern int	pgc_horizon_min_age;
extern int	pgc_horizon_min_xid_age;
extern int	pgc_subxact_warn_level;
extern int	pgc_findings_window;
extern int	pgc_max_index_names;
extern int	pgc_dead_visits_warning;
extern bool pgc_save_enabled;
extern int	pgc_save_interval;
extern int	pgc_incident_interval;
extern int	pgc_incident_close_after;
extern int	pgc_max_incidents;
extern bool pgc_incident_log;
extern char *pgc_incident_database;

/* ---- shmem.c: creating, resetting and describing the stores ---- */

/* Non-NULL once shared memory is attached: the library was preloaded. */
extern void *pgc_shared;

/*
 * pg_contention's own processes, its two background workers: what they
 * run is not the workload's, so the sampler, the views of backends and
 * the horizon leave them out.  Each worker sets its pid when it starts
 * and clears it at exit (workers/worker_start.c).
 */
typedef enum PgcWorker
{
	PGC_WORKER_SAMPLER,
	PGC_WORKER_INCIDENTS,
	PGC_NUM_WORKERS
} PgcWorker;

extern int	pgc_own_pid(PgcWorker which);
extern void pgc_set_own_pid(PgcWorker which, int pid);
extern void pgc_shmem_request(void);
extern bool pgc_shmem_startup(void);

/* Fill the stores just created from the file the last save left. */
extern void pgc_persist_load(void);
extern void pgc_require_loaded(void);

/* ---- persist.c: the stores' file ---- */
extern void pgc_persist_save(bool take_locks);

/* ---- current_statement.c: the top-level statement this backend runs ---- */
extern Size pgc_query_ids_shmem_size(void);
extern void pgc_query_ids_shmem_init(LWLock *lock);
extern void pgc_current_statement_init(void);

/*
 * What the sampler reads of one process's slot: statement_no is 2k while
 * the client's statement k runs with query_id, 2k + 1 once it has ended
 * (query_id is still k's), 0 for a process that serves no client; pid is
 * the writer's, and the rest holds only for that process.
 */
typedef struct PgcPublishedStatement
{
	int64		query_id;
	uint32		statement_no;
	int			pid;
} PgcPublishedStatement;

extern int	pgc_query_id_slots(void);
extern uint64 pgc_held_slots(int word);
extern void pgc_read_published(int procno, PgcPublishedStatement *out);
extern bool pgc_read_exit(int procno, int pid, PgcPublishedStatement *out);
extern void pgc_note_held_pid(int procno, int pid);

/* ---- normalize.c: statement texts with constants replaced, and one
 * execution's constants ---- */

/* Room for one execution's constants ("$1 = '42', $2 = 7"), with its NUL. */
#define PGC_LITERALS_LEN 128

/* ---- hooks.c ---- */
extern void pgc_hooks_install(void);

/* ---- statements.c: the statement hash ---- */

/*
 * The key of the statement hash: who ran which statement where, and from
 * which application (a hash of its application_name, cut at NAMEDATALEN;
 * 0 for none; the entry keeps the name).
 */
typedef struct PgcStatementKey
{
	Oid			userid;
	Oid			dbid;
	int64		query_id;		/* 0 when query ids are off */
	uint64		app_hash;
} PgcStatementKey;

/* Index scans: kinds, and one execution's counts for one index. */
#define PGC_INDEX_SLOTS 6		/* indexes tracked per statement */

/* ---- capture/overflow.c: overflow detection ---- */
extern void pgc_subxact_init(void);

/* ---- workers/sampler.c, stores/sampler_store.c: the wait profile and the history ---- */

/* The wait events the history counts by name, found once at start. */
typedef enum PgcNamedWait
{
	PGC_NAMED_SUBTRANS_SLRU,	/* LWLock:SubtransSLRU */
	PGC_NAMED_SUBTRANS_BUFFER,	/* LWLock:SubtransBuffer */
	PGC_NAMED_OLDSNAPSHOT_TIMEMAP,	/* LWLock:OldSnapshotTimeMap, PG13-16 */
	PGC_NAMED_PROCARRAY,		/* LWLock:ProcArray */
	PGC_NAMED_SPIN_DELAY,		/* Timeout:SpinDelay, PG17+ */
	PGC_NUM_NAMED_WAITS
} PgcNamedWait;

/* old_snapshot_threshold pressure figures of a tick, a second, or more. */
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


/* History columns by wait-event class (the class is the top byte). */
typedef enum PgcWaitClass
{
	PGC_CLASS_LWLOCK,
	PGC_CLASS_LOCK,
	PGC_CLASS_BUFFERPIN,
	PGC_CLASS_IO,
	PGC_CLASS_IPC,
	PGC_CLASS_TIMEOUT,
	PGC_CLASS_EXTENSION,
	PGC_CLASS_CLIENT,
	PGC_CLASS_OTHER,
	PGC_NUM_WAIT_CLASSES
} PgcWaitClass;

/* One second of history. */
typedef struct PgcHistoryBucket
{
	PgcOldSnapFigures oldsnap;	/* old_snapshot_threshold pressure */
	TimestampTz bucket_start;
	int64		ticks;
	int64		active_samples; /* non-idle backends, summed over ticks */
	int64		idle_samples;
	int64		cpu_samples;
	int64		class_samples[PGC_NUM_WAIT_CLASSES];
	int64		named_samples[PGC_NUM_NAMED_WAITS];
	int32		max_overflowed_backends;
	bool		slru_known;		/* SLRU deltas were read for this bucket */
	int64		subtrans_lookups;	/* delta of blks_hit + blks_read */
	int64		subtrans_reads; /* delta of blks_read */
	int64		horizon_xid_age;	/* at the bucket's end; -1 unknown */
	bool		xids_known;		/* the next-XID counter was read at both ends */
	int64		xids_assigned;	/* the next-XID counter's advance */
	int64		subtrans_reader_lookups;	/* subtrans_lookups less the parent
											 * records XIDs can account for
											 * (sampler.c); known when both
											 * slru_known and xids_known */
} PgcHistoryBucket;

/* One profile entry: samples of a (database, role, query id, wait event). */
typedef struct PgcProfileKey
{
	Oid			dbid;
	Oid			roleid;
	uint32		wait_event_info;	/* 0: on CPU */
	uint32		padding;		/* zero: the key is hashed as bytes */
	int64		query_id;
} PgcProfileKey;

typedef struct PgcProfileEntry
{
	PgcProfileKey key;
	int64		samples;
} PgcProfileEntry;

/* The worker's status, as pg_contention_sampler_status shows it. */
typedef struct PgcSamplerStatus
{
	int			worker_pid;		/* 0 when not running */
	TimestampTz worker_started;
	int64		ticks;
	double		last_tick_us;
	double		max_tick_us;
	double		total_tick_us;
	int			period_ms;		/* in effect */
	bool		enabled;		/* in effect */
	int64		memory_bytes;	/* the worker's memory contexts, allocated */
	int			profile_used;
	int64		profile_evictions;
	int64		profile_samples;	/* all non-idle samples since reset */
	int64		buckets_written;	/* completed buckets since reset */
	TimestampTz last_tick_at;	/* 0: never */
	TimestampTz next_tick_due;	/* when the worker will tick next; 0: unknown */
	bool		dozing;			/* ticking once a second: nothing to sample */
	int64		dozes;			/* times it began to doze */
	int64		doze_wakeups;	/* times a client's statement woke it */
} PgcSamplerStatus;

extern void pgc_sampler_register(void);
extern void pgc_sampler_request_save(void);

/*
 * Non-zero while the sampler dozes (sampler.c): a client's statement or
 * connection that starts then wakes it, so that its first samples are
 * taken at once.  Points at a zero until shared memory is attached.
 */
extern pg_atomic_uint32 *pgc_sampler_doze_flag;
extern void pgc_sampler_wake(void);

static inline void
pgc_sampler_wake_if_dozing(void)
{
	if (unlikely(pg_atomic_read_u32(pgc_sampler_doze_flag) != 0))
		pgc_sampler_wake();
}
extern void pgc_sampler_copy_status(PgcSamplerStatus *status,
									bool *named_found);
extern PgcProfileEntry *pgc_sampler_copy_profile(int *n, int64 *total);
extern PgcHistoryBucket *pgc_sampler_copy_history(TimestampTz since, int *n,
												   bool *named_found);
extern PgcProfileKey *pgc_sampler_subtrans_keys(int *n);

/* ---- capture/normalize.c: statement texts as the store keeps them ---- */

/*
 * Write into out (outsize bytes, always terminated) the text of
 * source_text[location, location + len) with each constant replaced by $n,
 * as pg_stat_statements shows statements.  len < 0: to the end.
 */
extern void pgc_normalize_query(const char *source_text, int location, int len,
								char *out, int outsize);

/* ---- stores/old_snapshot.c: old_snapshot_threshold pressure since the reset ---- */
extern Size pgc_oldsnap_shmem_size(void);
extern void pgc_oldsnap_shmem_init(LWLock *lock);
extern void pgc_oldsnap_reset(void);
extern void pgc_oldsnap_add(PgcOldSnapFigures *into,
							const PgcOldSnapFigures *from);
extern void pgc_oldsnap_add_to_total(const PgcOldSnapFigures *figures);
extern void pgc_oldsnap_total(PgcOldSnapFigures *total);

/* ---- the stores' figures and reset, for pg_contention_info and _reset ---- */

extern void pgc_reset_stores(void);
extern void pgc_statements_info(int64 *count, int64 *evictions);
extern TimestampTz pgc_stats_reset_time(void);
extern void pgc_persist_info(TimestampTz *last_saved, TimestampTz *last_loaded,
							 TimestampTz *loaded_saved_at);
extern void pgc_incidents_info(int *used, int64 *evictions,
							   int64 *not_opened, int64 *open_evictions,
							   char **opened_json);
extern int64 pgc_findings_latest_too_large(void);
extern void pgc_index_names_info(int *used, int64 *evictions);
extern int	pgc_index_names_max(void);

/* ---- index_names.c: the names of indexes met with dead entries ---- */
extern void pgc_index_names_note(Oid indexoid, int64 dead);

/* An entry's kind; a context's line's size. */
#define PGC_NOTED_INDEX		1
#define PGC_NOTED_CONTEXT	2
#define PGC_CONTEXT_LEN		(3 * NAMEDATALEN)

typedef struct PgcIndexName
{
	Oid			dbid;			/* InvalidOid: free */
	uint8		kind;			/* PGC_NOTED_INDEX or PGC_NOTED_CONTEXT */
	bool		several;		/* a context: another one was noted for it */
	Oid			indexoid;		/* an index: the index and its table */
	Oid			relid;
	Oid			owner;			/* an index: its owner; a context: the
								 * role that ran the statement */
	int64		query_id;		/* a context: the function's statement */
	TimestampTz noted_at;
	int64		dead;			/* what it is worth keeping: the most dead
								 * entries one execution met (through the
								 * index; a context: its statement's),
								 * since it was last noted stale */
	union
	{
		struct
		{
			NameData	schema; /* the index's and its table's */
			NameData	index;
			NameData	table;
		}			rel;
		struct
		{
			char		line[PGC_CONTEXT_LEN];	/* one line, NUL-terminated */
			/* A trigger function's trigger ("" if none): its name, table */
			NameData	trigger;
			NameData	trigger_schema;
			NameData	trigger_table;
		}			context;
	}			u;
} PgcIndexName;


extern PgcIndexName *pgc_index_names_copy(void);
extern void pgc_nested_context_note(int64 query_id, int64 dead);

/*
 * ---- xmin_since.c: since when each holder's xmin has had its value ----
 *
 * Per process (by its PGPROC number): the value (the older of its XID and
 * its xmin), the earliest it can date from (the sampler's pass before the
 * one that first saw it; 0: already there at the sampler's first pass)
 * and the same for when it fell behind the next XID (0: not behind).  Per
 * replication slot: its xmin and catalog_xmin, each with the latter.
 */
typedef struct PgcXminSince
{
	int			pid;			/* 0: no process */
	TransactionId xmin;
	TimestampTz first_seen;
	TimestampTz behind_since;
} PgcXminSince;

typedef struct PgcSlotXminSince
{
	NameData	name;			/* empty: not in use */
	TransactionId xmin;
	TransactionId catalog_xmin;
	TimestampTz xmin_behind_since;
	TimestampTz catalog_behind_since;
} PgcSlotXminSince;

extern void pgc_xmin_since_observe(TimestampTz now);
extern PgcXminSince *pgc_xmin_since_copy(int *nprocs, PgcSlotXminSince **slots,
										 int *nslots, TimestampTz *last_pass);

/* ---- findings_latest.c: the incidents worker's last evaluation, kept ---- */

/* One finding as pg_contention_findings gives it (NULL texts: SQL NULL). */
typedef struct PgcFindingRow
{
	const char *problem;
	const char *severity;
	const char *subject;
	const char *evidence;
	const char *advice;
	const char *details;		/* jsonb as text */
	TimestampTz since;			/* 0: NULL */
} PgcFindingRow;

extern void pgc_findings_latest_forget(void);
extern PgcFindingRow *pgc_findings_latest_read(TimestampTz *evaluated_at, int *nrows);
extern void pgc_findings_latest_publish(TimestampTz at, int nrows,
										const PgcFindingRow *rows);

/* ---- workers/incidents_worker.c, stores/incidents.c: the incidents worker and its store ---- */

extern void pgc_incidents_register(void);

/* ---- activity.c: helpers for the views about backends ---- */


/* ---- srf.c: the SQL functions' result shapes ---- */

/* A released version of the SQL objects, comparable: PGC_SQL_V(1, 3). */
#define PGC_SQL_V(major, minor) ((major) * 100 + (minor))

/*
 * One column a function returns: its declared name (for messages), its
 * type, and the version whose declaration first has it.  A shape lists the
 * newest declaration's columns in order; each older one declares the
 * columns of its version and before, a prefix.  A new column in a new
 * version is one more line at the end.  A change that is not an append
 * (a type changed, a column dropped) needs its own C entry point, as
 * pg_stat_statements_1_10 and its siblings are.
 */
typedef struct PgcResultColumn
{
	const char *name;
	Oid			type;
	int			since;			/* PGC_SQL_V() */
} PgcResultColumn;

typedef struct PgcResultShape
{
	const char *function;		/* its SQL name, for messages */
	const PgcResultColumn *columns;
	int			ncolumns;
} PgcResultShape;

extern TupleDesc pgc_result_tupdesc(FunctionCallInfo fcinfo,
									const PgcResultShape *shape);
extern Tuplestorestate *pgc_materialize(FunctionCallInfo fcinfo,
										const PgcResultShape *shape,
										TupleDesc *tupdesc);

#endif							/* PG_CONTENTION_H */
