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

/* ---- pg_contention.c: settings ---- */
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
extern int	pgc_dead_visits_warning;
extern bool pgc_save_enabled;
extern int	pgc_save_interval;
extern int	pgc_incident_interval;
extern int	pgc_incident_close_after;
extern int	pgc_max_incidents;
extern bool pgc_incident_log;
extern char *pgc_incident_database;

/* ---- bytes.c: the file's records, read from memory, streamed out ---- */

/*
 * A bounded reader over a section of the file's bytes, in memory (fd -1)
 * or read from the file through a buffer (pread at base + pos), so that a
 * file is never read into memory whole; failed is sticky.  fixed counts
 * the values the loading store found implausible and clamped or skipped
 * (persist.c says so once per section); time_limit is the latest
 * timestamp a record may carry.
 */
typedef struct PgcReader
{
	const char *data;			/* fd -1: the bytes */
	int			fd;				/* else: the file */
	uint64		base;			/* its offset of byte 0 */
	Size		len;
	Size		pos;
	bool		failed;
	char	   *buf;			/* bufsize bytes: pos buf_pos..+buf_len */
	Size		bufsize;
	Size		buf_pos;
	Size		buf_len;
	uint64		fixed;
	TimestampTz time_limit;
} PgcReader;

/*
 * The largest counter a loaded record may carry (about 10^15): beyond it
 * a counter is not plausible, and sums of many of them must stay in
 * int64.
 */
#define PGC_COUNTER_MAX		((int64) 1 << 50)

/*
 * A writer to a file descriptor through a caller's buffer, with a running
 * CRC-32C of every byte written; error (an errno, 0: none) is sticky.
 */
typedef struct PgcWriter
{
	int			fd;
	char	   *buf;
	Size		bufsize;
	Size		used;			/* bytes in buf not yet written */
	uint64		flushed;		/* bytes written to fd */
	pg_crc32c	crc;			/* not finalised */
	int			error;
} PgcWriter;

extern void pgc_reader_init(PgcReader *reader, const char *data, Size len);
extern bool pgc_read_bytes(PgcReader *reader, void *dest, Size n);
extern void pgc_reader_init_file(PgcReader *reader, int fd, uint64 base,
								 Size len, char *buffer, Size bufsize);
extern bool pgc_read_text(PgcReader *reader, char *dest, int destsize);
extern bool pgc_reader_seek(PgcReader *reader, Size pos);
extern bool pgc_fix_counter(PgcReader *reader, int64 *value);
extern bool pgc_fix_int32(PgcReader *reader, int32 *value, int32 min, int32 max);
extern bool pgc_fix_time(PgcReader *reader, TimestampTz *value);
extern void pgc_fix_string(char *value, Size size);
extern uint64 pgc_keep_largest(void *heap, uint64 n, uint64 max_n, Size elem_size,
							   const void *elem,
							   bool (*less) (const void *, const void *));
extern void pgc_writer_init(PgcWriter *writer, int fd, char *buffer,
							Size bufsize);
extern void pgc_writer_fail(PgcWriter *writer, int errno_value);
extern bool pgc_writer_flush(PgcWriter *writer);
extern void pgc_write_bytes(PgcWriter *writer, const void *data, Size n);
extern void pgc_write_text(PgcWriter *writer, const char *text);
extern uint64 pgc_writer_position(const PgcWriter *writer);
extern pg_crc32c pgc_writer_crc(const PgcWriter *writer);

#define pgc_writer_failed(writer) ((writer)->error != 0)

/*
 * How much a store copies out of shared memory under its lock at a time
 * while saving: the lock is released before the copy is written.
 */
#define PGC_SAVE_BATCH_BYTES	(64 * 1024)

/* ---- stores.c: the registry of stores ---- */

/*
 * The stores' capacities a file's header names: what the server that
 * wrote it could hold (persist.c), for each store's largest_section.
 */
typedef struct PgcFileCapacities
{
	int32		max_events;
	int32		max_statements;
	int32		max_profile_entries;
	int32		history_seconds;
	int32		max_query_length;
	int32		max_incidents;
} PgcFileCapacities;

/*
 * One store: a block of shared memory, a section of the file, or both.
 * shmem.c walks the table for sizes, creation and reset, persist.c for
 * saving and loading, each in table order.
 */
typedef struct PgcStore
{
	const char *name;			/* plural, in LOG lines: "statements" */
	/* Shared memory (shmem_size NULL: none). */
	Size		(*shmem_size) (void);
	void		(*shmem_init) (LWLock *lock);	/* under AddinShmemInitLock */
	bool		needs_lock;		/* gets a lock of the tranche, else NULL */
	void		(*reset) (void);	/* pg_contention_reset(); NULL: none */
	/* The file (file_id 0: not saved).  Ids never change meaning. */
	uint32		file_id;
	uint32		(*record_size) (void);	/* a record's fixed part */

	/*
	 * The most bytes the section's records can take in a file written by a
	 * server of the given capacities (its leading counters not counted):
	 * the loader refuses a larger file unread.
	 */
	uint64		(*largest_section) (const PgcFileCapacities *capacities);

	/*
	 * Write the section through writer and set *count to the records
	 * written.  take_locks is false only in the postmaster at exit, which
	 * has no PGPROC to wait on an LWLock and is alone.  No file I/O under
	 * an LWLock: copy a batch under it, release, write.  Must not raise an
	 * ERROR (at exit it would be a FATAL): allocate with
	 * MCXT_ALLOC_NO_OOM and fail the writer instead.
	 */
	void		(*save) (PgcWriter *writer, bool take_locks, uint64 *count);

	/*
	 * Fill the empty store from the section (count records, at most what
	 * its bytes hold); *kept is how many it kept.  Every field read is
	 * untrusted: check it against the store (pgc_fix_*), clamp or skip
	 * what does not fit (counted in reader->fixed), and allocate no more
	 * than the store's own size.  Postmaster only, before any other
	 * process exists.
	 */
	void		(*load) (PgcReader *reader, uint64 count, uint64 *kept);
} PgcStore;

extern const PgcStore pgc_stores[];
extern const int pgc_num_stores;

/* ---- shmem.c: creating, resetting and describing the stores ---- */

/* Non-NULL once shared memory is attached: the library was preloaded. */
extern void *pgc_shared;
extern void pgc_shmem_request(void);
extern void pgc_shmem_startup(void);
extern void pgc_require_loaded(void);
extern TimestampTz pgc_stats_reset_time(void);
extern void pgc_set_stats_reset_time(TimestampTz when);

/* ---- persist.c: the stores' file ---- */
extern Size pgc_persist_shmem_size(void);
extern void pgc_persist_shmem_init(LWLock *lock);
extern void pgc_persist_load(void);
extern void pgc_persist_save(bool take_locks);
extern void pgc_persist_info(TimestampTz *last_saved, TimestampTz *last_loaded,
							 TimestampTz *loaded_saved_at);

/* Each store's section of the file (see PgcStore), by store file. */
extern uint32 pgc_events_record_size(void);
extern uint64 pgc_events_largest_section(const PgcFileCapacities *capacities);
extern void pgc_events_save(PgcWriter *writer, bool take_locks, uint64 *count);
extern void pgc_events_load(PgcReader *reader, uint64 count, uint64 *kept);
extern uint32 pgc_statements_record_size(void);
extern uint64 pgc_statements_largest_section(const PgcFileCapacities *capacities);
extern void pgc_statements_save(PgcWriter *writer, bool take_locks,
								uint64 *count);
extern void pgc_statements_load(PgcReader *reader, uint64 count, uint64 *kept);
extern uint32 pgc_profile_record_size(void);
extern uint64 pgc_profile_largest_section(const PgcFileCapacities *capacities);
extern void pgc_profile_save(PgcWriter *writer, bool take_locks, uint64 *count);
extern void pgc_profile_load(PgcReader *reader, uint64 count, uint64 *kept);
extern uint32 pgc_history_record_size(void);
extern uint64 pgc_history_largest_section(const PgcFileCapacities *capacities);
extern void pgc_history_save(PgcWriter *writer, bool take_locks, uint64 *count);
extern void pgc_history_load(PgcReader *reader, uint64 count, uint64 *kept);

/* ---- current_statement.c: the top-level statement this backend runs ---- */
extern Size pgc_query_ids_shmem_size(void);
extern void pgc_query_ids_shmem_init(LWLock *lock);
extern void pgc_current_statement_init(void);
extern void pgc_statement_begin(int64 query_id, const char *source_text,
								int stmt_location, int stmt_len,
								bool ends_at_executor_end);
extern bool pgc_client_utility_running;
extern void pgc_statement_ended(void);
extern void pgc_statement_end_utility(bool ends_transaction);
extern void pgc_transaction_end(bool aborted);
extern bool pgc_current_statement(int64 *query_id, int *stmt_location,
								  int *stmt_len);

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

/*
 * At every ExecutorEnd: did the noted top-level statement's executor end
 * (inside a transaction block; see current_statement.c)?  Inline, with the
 * one variable it needs exported: this runs for every statement at every
 * nesting level.
 */
extern const char *pgc_executor_end_text;

static inline void
pgc_statement_end(const char *source_text)
{
	if (unlikely(source_text == pgc_executor_end_text))
		pgc_statement_ended();
}

extern int	pgc_query_id_slots(void);
extern uint64 pgc_held_slots(int word);
extern void pgc_read_published(int procno, PgcPublishedStatement *out);
extern bool pgc_read_exit(int procno, int pid, PgcPublishedStatement *out);
extern void pgc_note_held_pid(int procno, int pid);

/* ---- normalize.c: statement texts with constants replaced, and one
 * execution's constants ---- */

/* Room for one execution's constants ("$1 = '42', $2 = 7"), with its NUL. */
#define PGC_LITERALS_LEN 128

/*
 * Write into out (outsize bytes, always terminated) the text of
 * source_text[location, location + len) with each constant replaced by $n,
 * as pg_stat_statements shows statements.  len < 0: to the end.
 */
extern void pgc_normalize_query(const char *source_text, int location, int len,
								char *out, int outsize);

/*
 * Write into out (PGC_LITERALS_LEN bytes) the constants one execution ran
 * with: its bind parameters, or the literals of its text, numbered as the
 * normalised text numbers them.  Empty when there are none.  May call
 * output functions: never under a spinlock or an LWLock.
 */
extern void pgc_execution_literals(QueryDesc *queryDesc, char *out);

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
#define PGC_SCAN_INDEX		1
#define PGC_SCAN_INDEX_ONLY	2
#define PGC_SCAN_BITMAP		3
#define PGC_SCAN_MIXED		4	/* scanned by nodes of different kinds */

typedef struct PgcIndexDelta
{
	Oid			indexoid;
	uint8		kind;
	bool		heap_measured;	/* bitmap: "fetched" is the heap's count */
	int64		returned;		/* entries the index returned */
	int64		fetched;		/* heap tuples found visible */
	int64		lossy_pages;	/* bitmap: heap pages read whole */
} PgcIndexDelta;

/* What one execution (or event) adds to its statement's entry. */
#define PGC_COUNT_CALL				0x01	/* an execution */
#define PGC_COUNT_SUBOVERFLOWED		0x02	/* its snapshot was suboverflowed */
#define PGC_COUNT_STANDBY			0x04	/* its snapshot was a standby's */
#define PGC_COUNT_OVERFLOW_EVENT	0x08	/* it overflowed the cache */
#define PGC_COUNT_TOP_LEVEL			0x10	/* rows and buffers are set */

typedef struct PgcExecution
{
	int			flags;
	int			subxacts;		/* subtransaction XIDs cached at its end */
	int64		rows;			/* top level: rows processed */
	int64		shared_blks_hit;	/* top level: its buffer usage */
	int64		shared_blks_read;
	int64		max_dead;		/* most dead entries one measured index met */
	const char *literals;		/* NULL, or its constants (PGC_LITERALS_LEN) */
	int			ndeltas;
	PgcIndexDelta deltas[PGC_INDEX_SLOTS];
} PgcExecution;

extern Size pgc_statements_shmem_size(void);
extern void pgc_statements_shmem_init(LWLock *lock);
extern void pgc_statements_reset(void);
extern void pgc_statements_info(int64 *count, int64 *evictions);
extern void pgc_statement_count(Oid userid, int64 query_id,
								const char *source_text,
								int stmt_location, int stmt_len,
								const PgcExecution *exec);

/* ---- indexscan.c: the executors running now, and their index scans ---- */
extern void pgc_index_scans_start(QueryDesc *queryDesc, int64 query_id,
								  bool top_level);
extern bool pgc_index_scans_end(QueryDesc *queryDesc, int64 *query_id,
								PgcExecution *exec);
extern void pgc_index_scans_forget(void);
extern void pgc_index_scans_ran(QueryDesc *queryDesc);

/* ---- subxact.c: overflow detection and the event ring ---- */
extern Size pgc_events_shmem_size(void);
extern void pgc_events_shmem_init(LWLock *lock);
extern void pgc_events_reset(void);
extern void pgc_events_info(int64 *written);
extern void pgc_subxact_init(void);
extern bool pgc_overflow_count_deferred;
extern LocalTransactionId pgc_overflow_recorded_lxid;
extern bool pgc_record_overflow(int64 current_query_id, bool in_abort);

/*
 * At every statement end: has this backend's subtransaction cache
 * overflowed in a transaction whose overflow is not recorded yet (or is
 * an overflow's count waiting)?  Inline: the common path is two loads and
 * a test, and a transaction already recorded adds one compare.  Only this
 * backend writes its PGPROC's flag, so the read needs no lock.
 */
static inline bool
pgc_check_overflow(int64 current_query_id, bool in_abort)
{
	if (likely((!PGC_PROC_SUBXID_OVERFLOWED(MyProc) ||
				PGC_MY_LXID() == pgc_overflow_recorded_lxid) &&
			   !pgc_overflow_count_deferred))
		return false;
	return pgc_record_overflow(current_query_id, in_abort);
}

/* ---- sampler.c: the worker, the wait profile and the history ---- */

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

/*
 * Shares of active time (cpu_share_of_active) need this many active
 * samples, one busy backend for a second at the default period; below it
 * they are NULL, not a ratio of a handful of samples.
 */
#define PGC_MIN_ACTIVE_SAMPLES 100

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

extern Size pgc_sampler_shmem_size(void);
extern void pgc_sampler_shmem_init(LWLock *lock);
extern void pgc_register_worker(const char *function, const char *name,
								int restart_seconds);
extern void pgc_sampler_register(void);
extern void pgc_sampler_reset(void);
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

/* ---- oldsnapshot.c: old_snapshot_threshold pressure ---- */
extern Size pgc_oldsnap_shmem_size(void);
extern void pgc_oldsnap_shmem_init(LWLock *lock);
extern void pgc_oldsnap_reset(void);
extern bool pgc_oldsnap_enabled(void);
extern void pgc_oldsnap_note_database(Oid dbid);
extern int64 pgc_oldsnap_read_operations(void);
extern void pgc_oldsnap_sample(int64 tick, PgcOldSnapFigures *figures);
extern void pgc_oldsnap_add(PgcOldSnapFigures *into,
							const PgcOldSnapFigures *from);
extern void pgc_oldsnap_add_to_total(const PgcOldSnapFigures *figures);

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

extern Size pgc_findings_latest_shmem_size(void);
extern void pgc_findings_latest_shmem_init(LWLock *lock);
extern void pgc_findings_latest_reset(void);
extern void pgc_findings_latest_forget(void);
extern void pgc_findings_latest_publish(TimestampTz at, int nrows,
										const PgcFindingRow *rows);
extern int64 pgc_findings_latest_too_large(void);

/* ---- incidents.c: the incidents worker, its store and view ---- */

/* Bytes of one incident's frozen statements, holders and history (JSON). */
#define PGC_INCIDENT_FROZEN_BYTES	(48 * 1024)

extern Size pgc_incidents_shmem_size(void);
extern void pgc_incidents_shmem_init(LWLock *lock);
extern void pgc_incidents_reset(void);
extern void pgc_incidents_register(void);
extern int	pgc_incidents_worker_pid(void);
extern void pgc_incidents_info(int *used, int64 *evictions,
							   int64 *not_opened, int64 *open_evictions,
							   char **opened_json);
extern uint32 pgc_incidents_record_size(void);
extern uint64 pgc_incidents_largest_section(const PgcFileCapacities *capacities);
extern void pgc_incidents_save(PgcWriter *writer, bool take_locks, uint64 *count);
extern void pgc_incidents_load(PgcReader *reader, uint64 count, uint64 *kept);

/* ---- frozen_mask.c: an incident's frozen rows as one reader may see them ---- */
extern char *pgc_mask_frozen(const char *frozen);

/* ---- activity.c: helpers for the views about backends ---- */
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

/* ---- text_out.c: stored texts, valid in the reader's encoding ---- */
extern Datum pgc_text_datum(const char *s, Oid source_dbid);
extern Datum pgc_masked_text_datum(bool visible, const char *s, Oid source_dbid);

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

extern void pgc_check_result_shape(TupleDesc tupdesc,
								   const PgcResultShape *shape);
extern TupleDesc pgc_result_tupdesc(FunctionCallInfo fcinfo,
									const PgcResultShape *shape);
extern Tuplestorestate *pgc_materialize(FunctionCallInfo fcinfo,
										const PgcResultShape *shape,
										TupleDesc *tupdesc);

/* ---- rowcache.c: a function's rows kept for the rest of the statement ---- */

/*
 * One function's rows (a static per function), valid for one client
 * statement, user, declared shape and version (what the caller built them
 * from, such as a store's write and reset counts).
 */
typedef struct PgcRowCache
{
	MemoryContext cxt;			/* NULL: nothing kept */
	MemoryContextCallback callback;
	TimestampTz statement_start;
	Oid			userid;
	int			natts;
	uint64		version[2];
	bool		whole;			/* every row is in */
	List	   *rows;			/* HeapTuples, in cxt */
} PgcRowCache;

extern bool pgc_row_cache_replay(PgcRowCache *cache, const uint64 version[2],
								 TupleDesc tupdesc, Tuplestorestate *tupstore);
extern void pgc_row_cache_begin(PgcRowCache *cache, const uint64 version[2],
								TupleDesc tupdesc);
extern void pgc_row_cache_put(PgcRowCache *cache, Tuplestorestate *tupstore,
							  TupleDesc tupdesc, Datum *values, bool *nulls);
extern void pgc_row_cache_end(PgcRowCache *cache);

#endif							/* PG_CONTENTION_H */
