/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the PostgreSQL major versions that
 *		pg_contention supports (13 to 18) lives here, so that the logic files
 *		can be written once.
 *
 * Each block names what changed and in which release.  Logic files include
 * this header through pg_contention.h and never test PG_VERSION_NUM
 * themselves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_COMPAT_H
#define PGC_COMPAT_H

/*
 * The library is built with -fvisibility=hidden, as PG16+ builds every
 * module, so that calls and variables between its files are direct, not
 * through the PLT and GOT.  What the server looks up by name (_PG_init,
 * the magic block, the SQL functions, the worker's entry point) is marked
 * PGDLLEXPORT, which before PG16 is empty on ELF platforms.
 */
#if PG_VERSION_NUM < 160000 && defined(__GNUC__) && !defined(WIN32)
#undef PGDLLEXPORT
#define PGDLLEXPORT __attribute__((visibility("default")))
/* PG16's PG_FUNCTION_INFO_V1, which exports the function itself too. */
#undef PG_FUNCTION_INFO_V1
#define PG_FUNCTION_INFO_V1(funcname) \
extern PGDLLEXPORT Datum funcname(PG_FUNCTION_ARGS); \
extern PGDLLEXPORT const Pg_finfo_record * CppConcat(pg_finfo_,funcname)(void); \
const Pg_finfo_record * \
CppConcat(pg_finfo_,funcname) (void) \
{ \
	static const Pg_finfo_record my_finfo = { 1 }; \
	return &my_finfo; \
} \
extern int no_such_variable
#endif

#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "tcop/utility.h"
#include "utils/guc.h"

#if PG_VERSION_NUM < 130000
#error "pg_contention requires PostgreSQL 13 or later"
#endif

/* PG14 moved backend status out of pgstat.h into its own header. */
#if PG_VERSION_NUM >= 140000
#include "utils/backend_status.h"
#endif

/* Query jumbling: PG14 added it in utils/, PG16 moved it to nodes/. */
#if PG_VERSION_NUM >= 160000
#include "nodes/queryjumble.h"
#elif PG_VERSION_NUM >= 140000
#include "utils/queryjumble.h"
#endif

/*
 * Module magic: PG18 lets a module report its name and version, which shows
 * in pg_get_loaded_modules().
 */
#if PG_VERSION_NUM >= 180000
#define PGC_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "pg_contention", .version = PGC_VERSION)
#else
#define PGC_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/*
 * Shared memory requests.  PG15 added shmem_request_hook and made
 * RequestAddinShmemSpace()/RequestNamedLWLockTranche() FATAL anywhere else;
 * before that they are called from _PG_init while
 * process_shared_preload_libraries_in_progress is true.
 */
#if PG_VERSION_NUM >= 150000
#define PGC_HAVE_SHMEM_REQUEST_HOOK 1
#endif

/* PG15 added MarkGUCPrefixReserved; before, the nearest is a warning. */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* PG14 renamed the default roles to predefined roles. */
#if PG_VERSION_NUM < 140000
#define ROLE_PG_READ_ALL_STATS DEFAULT_ROLE_READ_ALL_STATS
#endif

/* This backend's local transaction id: PG17 moved it into PGPROC.vxid. */
#if PG_VERSION_NUM >= 170000
#define PGC_MY_LXID()	(MyProc->vxid.lxid)
#else
#define PGC_MY_LXID()	(MyProc->lxid)
#endif

/*
 * Backend states: PG18 added STATE_STARTING (still authenticating), shown
 * as "starting" in pg_stat_activity.
 */
#if PG_VERSION_NUM >= 180000
#define PGC_CASE_STATE_STARTING \
		case STATE_STARTING: \
			return "starting";
#else
#define PGC_CASE_STATE_STARTING
#endif

/*
 * Transaction state of a PGPROC.
 *
 * PG13 keeps xid, xmin and the subtransaction cache status in a separate
 * PGXACT array indexed by pgprocno; PG14 moved them into PGPROC itself
 * (with dense mirrors in ProcGlobal that are only meaningful under
 * ProcArrayLock, so we never read those).  All fields are at most four bytes
 * and aligned, so a single volatile read cannot be torn.
 */
#if PG_VERSION_NUM >= 140000
#define PGC_PROC_XID(p)				(((volatile PGPROC *) (p))->xid)
#define PGC_PROC_XMIN(p)			(((volatile PGPROC *) (p))->xmin)
#define PGC_PROC_SUBXID_COUNT(p)	(((volatile PGPROC *) (p))->subxidStatus.count)
#define PGC_PROC_SUBXID_OVERFLOWED(p) \
	(((volatile PGPROC *) (p))->subxidStatus.overflowed)
#define PGC_PROC_STATUS_FLAGS(p)	(((volatile PGPROC *) (p))->statusFlags)
#else
#define PGC_PROC_PGXACT(p) \
	((volatile PGXACT *) &ProcGlobal->allPgXact[(p)->pgprocno])
#define PGC_PROC_XID(p)				(PGC_PROC_PGXACT(p)->xid)
#define PGC_PROC_XMIN(p)			(PGC_PROC_PGXACT(p)->xmin)
#define PGC_PROC_SUBXID_COUNT(p)	(PGC_PROC_PGXACT(p)->nxids)
#define PGC_PROC_SUBXID_OVERFLOWED(p) (PGC_PROC_PGXACT(p)->overflowed)
#define PGC_PROC_STATUS_FLAGS(p)	(PGC_PROC_PGXACT(p)->vacuumFlags)
#endif

/*
 * Backend status entries.  PG16 renamed the accessor of the local snapshot
 * of backend status (1-based index) to pgstat_get_local_beentry_by_index.
 */
static inline LocalPgBackendStatus *
pgc_local_beentry(int index)
{
#if PG_VERSION_NUM >= 160000
	return pgstat_get_local_beentry_by_index(index);
#else
	return pgstat_fetch_stat_local_beentry(index);
#endif
}

/*
 * Query identifiers.  PG14 added compute_query_id and st_query_id in the
 * backend status; PG13 has neither, so the live views report NULL there.
 * PG18 made query ids signed.
 */
#if PG_VERSION_NUM >= 140000
#define PGC_HAVE_BACKEND_QUERY_ID 1
#define pgc_enable_query_id()		EnableQueryId()
#define PGC_BEENTRY_QUERY_ID(be)	((int64) (be)->st_query_id)
#else
#define PGC_BEENTRY_QUERY_ID(be)	INT64CONST(0)
#define pgc_enable_query_id()		((void) 0)
#endif

/*
 * Hook signatures.  PG14 added readOnlyTree to ProcessUtility; PG18 removed
 * execute_once from ExecutorRun.  The hooks are written once with these
 * parameter and argument lists.
 */
#if PG_VERSION_NUM >= 140000
#define PGC_PROCESS_UTILITY_PARAMS \
	PlannedStmt *pstmt, const char *queryString, bool readOnlyTree, \
	ProcessUtilityContext context, ParamListInfo params, \
	QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc
#define PGC_PROCESS_UTILITY_ARGS \
	pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc
#else
#define PGC_PROCESS_UTILITY_PARAMS \
	PlannedStmt *pstmt, const char *queryString, \
	ProcessUtilityContext context, ParamListInfo params, \
	QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc
#define PGC_PROCESS_UTILITY_ARGS \
	pstmt, queryString, context, params, queryEnv, dest, qc
#endif

#if PG_VERSION_NUM >= 180000
#define PGC_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define PGC_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define PGC_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define PGC_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

/*
 * Processes with a PGPROC (ProcGlobal->allProcCount), known before shared
 * memory is created.  From PG15, MaxBackends is set when shmem_request_hook
 * runs; before, it is computed after preloading, so use its formula.
 */
#if PG_VERSION_NUM >= 150000
#define PGC_MAX_PROCS	(MaxBackends + NUM_AUXILIARY_PROCS)
#else
#include "postmaster/autovacuum.h"
#include "replication/walsender.h"
#define PGC_MAX_PROCS \
	(MaxConnections + autovacuum_max_workers + 1 + max_worker_processes + \
	 max_wal_senders + NUM_AUXILIARY_PROCS)
#endif

/* PG17 renamed the BufferPin wait-event class constant. */
#if PG_VERSION_NUM >= 170000
#define PGC_WAIT_BUFFERPIN	PG_WAIT_BUFFERPIN
#else
#define PGC_WAIT_BUFFERPIN	PG_WAIT_BUFFER_PIN
#endif

/*
 * SLRU statistics: PG15 renamed the index lookup, PG17 renamed the rows
 * ("Subtrans" became "subtransaction").
 */
#if PG_VERSION_NUM >= 170000
#define PGC_SLRU_SUBTRANS_NAME	"subtransaction"
#else
#define PGC_SLRU_SUBTRANS_NAME	"Subtrans"
#endif
#if PG_VERSION_NUM >= 150000
#define pgc_slru_index(name)	pgstat_get_slru_index(name)
#else
#define pgc_slru_index(name)	pgstat_slru_index(name)
#endif

/* PG17 added the time a replication slot became inactive. */
#if PG_VERSION_NUM >= 170000
#define PGC_SLOT_INACTIVE_SINCE(slot)	((slot)->inactive_since)
#else
#define PGC_SLOT_INACTIVE_SINCE(slot)	((TimestampTz) 0)
#endif

/*
 * Pending per-relation statistics of this backend: PG16 renamed t_counts
 * to counts and dropped the t_ prefixes.  NULL pgstat_info (track_counts
 * off, or not yet attached in PG15+) reads as zero.
 */
#if PG_VERSION_NUM >= 160000
#define PGC_REL_TUPLES_RETURNED(rel) \
	((rel)->pgstat_info ? (rel)->pgstat_info->counts.tuples_returned : 0)
#define PGC_REL_TUPLES_FETCHED(rel) \
	((rel)->pgstat_info ? (rel)->pgstat_info->counts.tuples_fetched : 0)
#else
#define PGC_REL_TUPLES_RETURNED(rel) \
	((rel)->pgstat_info ? (rel)->pgstat_info->t_counts.t_tuples_returned : 0)
#define PGC_REL_TUPLES_FETCHED(rel) \
	((rel)->pgstat_info ? (rel)->pgstat_info->t_counts.t_tuples_fetched : 0)
#endif

/*
 * A bitmap heap scan's count of heap pages it read whole (lossy bitmap
 * pages): PG18 moved it into the node's instrumentation struct, kept up to
 * date whether or not EXPLAIN asks for it, as before.
 */
#if PG_VERSION_NUM >= 180000
#define PGC_BITMAP_LOSSY_PAGES(node)	((int64) (node)->stats.lossy_pages)
#else
#define PGC_BITMAP_LOSSY_PAGES(node)	((int64) (node)->lossy_pages)
#endif

/*
 * Rows an execution processed: PG16 added es_total_processed, summed over
 * every ExecutorRun (a cursor's fetches, a portal run with a row limit);
 * before, es_processed holds the last run's only, and each run resets it
 * as it starts.  There hooks.c installs an ExecutorRun hook
 * (PGC_SUM_ROWS_BEFORE_RUN) that adds the previous run's to the
 * execution's frame before the next run resets them, and "summed" is that
 * sum: the last run's are still in es_processed at ExecutorEnd (its
 * parameters: PGC_EXECUTOR_RUN_PARAMS above).
 */
#if PG_VERSION_NUM >= 160000
#define PGC_EXECUTION_ROWS(estate, summed)	((int64) (estate)->es_total_processed)
#define PGC_SUM_ROWS_BEFORE_RUN		false
#else
#define PGC_EXECUTION_ROWS(estate, summed) \
	((summed) + (int64) (estate)->es_processed)
#define PGC_SUM_ROWS_BEFORE_RUN		true
#endif

/* PG16 dropped the n_ prefix of the per-database statistics. */
#if PG_VERSION_NUM >= 160000
#define PGC_DB_LOCK_OPS(db) \
	((db)->xact_commit + (db)->xact_rollback + (db)->blocks_fetched)
#else
#define PGC_DB_LOCK_OPS(db) \
	((db)->n_xact_commit + (db)->n_xact_rollback + (db)->n_blocks_fetched)
#endif

/*
 * old_snapshot_threshold (PG13-16; removed in PG17).  compat.c reads the
 * server's OldSnapshotControlData: exported as oldSnapshotControl from
 * PG14, found by its shared-memory name in PG13 (where it is static, with
 * the same layout).
 */
typedef struct PgcOldSnapshotState
{
	TimestampTz current_timestamp;
	TransactionId latest_xmin;
	TimestampTz next_map_update;
	TimestampTz threshold_timestamp;
	TransactionId threshold_xid;
	int			map_entries_used;
} PgcOldSnapshotState;

#define PGC_OLDSNAP_LOCKS 3		/* mutex_current, _latest_xmin, _threshold */

extern bool pgc_oldsnap_supported(void);
extern int	pgc_oldsnap_setting(void);	/* minutes; -1 off */
extern bool pgc_oldsnap_read_state(PgcOldSnapshotState *state);
extern void pgc_oldsnap_probe(void);
extern int	pgc_oldsnap_locks_held(int reads_per_lock);

/*
 * ClientAuthentication_hook (the same in 13-18), declared here rather than
 * through libpq/auth.h, whose libpq-be.h needs the GSSAPI headers that
 * Debian's postgresql-server-dev packages do not pull in.
 */
struct Port;
typedef void (*PgcClientAuthenticationHook) (struct Port *port, int status);
extern PGDLLIMPORT PgcClientAuthenticationHook ClientAuthentication_hook;

/* The sampler's own wait event: PG17 lets an extension name its own. */
static inline uint32
pgc_sampler_wait_event(void)
{
#if PG_VERSION_NUM >= 170000
	return WaitEventExtensionNew("PgContentionSampler");
#else
	return PG_WAIT_EXTENSION;
#endif
}

/*
 * PG13 has no compute_query_id: queryId stays 0 unless pg_stat_statements
 * is loaded.  There, and on every version for statements the server gives
 * no id (a cursor's plan outside its DECLARE, compute_query_id = off), the
 * query id is a hash of the statement's own text, computed when it runs
 * (compat.c); never written into the Query, so other modules' hooks see
 * what they expect.  hooks.c applies the rule.
 */
extern void pgc_compat_init(void);
extern int64 pgc_text_query_id(PlannedStmt *stmt, const char *source_text);

/*
 * PG15 attaches a relation's pending statistics lazily, at its first count
 * (and a relcache rebuild detaches them): attach them before reading a
 * baseline, as the count itself would, so an entry that already holds
 * counts is not read as zero.  Before PG15 they are attached at open.
 */
#if PG_VERSION_NUM >= 150000
#define pgc_attach_pending_stats(rel)	((void) pgstat_should_count_relation(rel))
#else
#define pgc_attach_pending_stats(rel)	((void) 0)
#endif

/*
 * The cluster's xmin horizon, as vacuum needs it for shared catalogs: the
 * oldest xmin or XID of any backend in any database, prepared transaction,
 * replication slot (a logical slot's catalog xmin too) or standby feedback,
 * computed under ProcArrayLock in shared mode.  PG14 replaced GetOldestXmin
 * with GetOldestNonRemovableTransactionId and renamed ReadNewTransactionId
 * to ReadNextTransactionId.
 */
#include "access/transam.h"
#include "storage/procarray.h"
#if PG_VERSION_NUM >= 140000
#define pgc_cluster_xmin_horizon()	GetOldestNonRemovableTransactionId(NULL)
#define pgc_next_xid()				ReadNextTransactionId()
#else
#define pgc_cluster_xmin_horizon()	GetOldestXmin(NULL, PROCARRAY_FLAGS_VACUUM)
#define pgc_next_xid()				ReadNewTransactionId()
#endif

/*
 * Whether a process (or a prepared transaction's dummy PGPROC) holds a
 * lock in the main lock table: its per-partition lists of PROCLOCKs are
 * not all empty.  Fast-path locks (the weak relation locks) are not in
 * them, and never make anyone wait by themselves.  Read without the
 * partition locks by the sampler (sampler.c says why that is enough): each
 * list head is an aligned pointer, so a read returns a value really
 * stored.  PG16 turned the SHM_QUEUEs into dlists, whose empty head may
 * also be a NULL next pointer.
 */
#include "access/twophase.h"

/*
 * The PGPROCs of processes and, after them, of prepared transactions:
 * ProcGlobal->allProcCount leaves the latter out (in every version since
 * PG13), but the array holds max_prepared_xacts more.
 */
#define PGC_PGPROCS_WITH_PREPARED() \
	(ProcGlobal->allProcCount + (uint32) max_prepared_xacts)

static inline bool
pgc_proc_holds_main_locks(volatile PGPROC *proc)
{
	for (int i = 0; i < NUM_LOCK_PARTITIONS; i++)
	{
#if PG_VERSION_NUM >= 160000
		volatile dlist_head *head = &proc->myProcLocks[i];
		dlist_node *next = head->head.next;

		if (next != NULL && next != &head->head)
			return true;
#else
		volatile SHM_QUEUE *head = &proc->myProcLocks[i];

		if (head->next != head)
			return true;
#endif
	}
	return false;
}

/*
 * Texts from another database's encoding (text_out.c).  PG14 renamed the
 * one-character check pg_encoding_verifymb to pg_encoding_verifymbchar, and
 * added pg_do_encoding_conversion_buf, whose noError stops at the first
 * character it cannot convert instead of raising an error.  On PG13 nothing
 * is converted: pgc_convert_prefix converts no byte, and the caller shows
 * every character beyond ASCII as \xNN.
 */
#include "mb/pg_wchar.h"
#if PG_VERSION_NUM >= 140000
#define pgc_verify_char(encoding, s, len)	pg_encoding_verifymbchar(encoding, s, len)
#define pgc_convert_prefix(proc, src_encoding, dest_encoding, src, srclen, dest, destlen) \
	pg_do_encoding_conversion_buf(proc, src_encoding, dest_encoding, \
								  (unsigned char *) (src), srclen, \
								  (unsigned char *) (dest), destlen, true)
#else
#define pgc_verify_char(encoding, s, len)	pg_encoding_verifymb(encoding, s, len)
#define pgc_convert_prefix(proc, src_encoding, dest_encoding, src, srclen, dest, destlen) \
	((dest)[0] = '\0', 0)
#endif

/*
 * This backend's status entry (pg_stat_activity's row): PG14 exported it
 * as MyBEEntry; before, it was private to pgstat.c, and callers fall back
 * on what they would read in it.
 */
#if PG_VERSION_NUM >= 140000
#define PGC_MY_STATUS_ENTRY()	MyBEEntry
#else
#define PGC_MY_STATUS_ENTRY()	((PgBackendStatus *) NULL)
#endif

/*
 * An instrumentation record with no timer, buffer or WAL counting: what
 * an index-only scan counts its heap fetches in (indexscan.c).  PG14
 * added the asynchronous mode argument.
 */
#if PG_VERSION_NUM >= 140000
#define PGC_INSTR_ALLOC_COUNTS_ONLY()	InstrAlloc(1, 0, false)
#else
#define PGC_INSTR_ALLOC_COUNTS_ONLY()	InstrAlloc(1, 0)
#endif

/*
 * ModifyTable's subplans: a list of their own before PG14 (mt_plans, which
 * only the server's generic walker visits), its outer plan from PG14 on.
 */
#if PG_VERSION_NUM >= 140000
#define PGC_MODIFY_TABLE_HAS_PLAN_LIST	false
#else
#define PGC_MODIFY_TABLE_HAS_PLAN_LIST	true
#endif

/*
 * The major version as the stores' file records it (persist.c): a file
 * written by another major version is not read.
 */
#define PGC_PG_MAJOR_VERSION	(PG_VERSION_NUM / 100)

/*
 * Dead tuples per database (compat.c): n_dead_tup of every table the
 * backend can read, every database's from PG15 on, the current one's
 * before.  PG16 renamed the counter.
 */
#if PG_VERSION_NUM >= 160000
#define PGC_TABENTRY_DEAD_TUPLES(entry)	((entry)->dead_tuples)
#define PGC_TABENTRY_LIVE_TUPLES(entry)	((entry)->live_tuples)
#define PGC_TABENTRY_LAST_VACUUM(entry) \
	Max((entry)->last_vacuum_time, (entry)->last_autovacuum_time)
#else
#define PGC_TABENTRY_DEAD_TUPLES(entry)	((entry)->n_dead_tuples)
#define PGC_TABENTRY_LIVE_TUPLES(entry)	((entry)->n_live_tuples)
#define PGC_TABENTRY_LAST_VACUUM(entry) \
	Max((entry)->vacuum_timestamp, (entry)->autovac_vacuum_timestamp)
#endif
/* PG18 made the shared statistics' object id 64 bits wide. */
#if PG_VERSION_NUM >= 180000
#define PGC_STATS_OBJOID(key)	((Oid) (key).objid)
#else
#define PGC_STATS_OBJOID(key)	((key).objoid)
#endif
/*
 * The dead tuples past which autovacuum vacuums a table, from the global
 * settings (a table's own reloptions are in its database's catalog, not
 * readable from another); PG18 caps it (autovacuum_vacuum_max_threshold).
 */
#include "postmaster/autovacuum.h"

static inline double
pgc_autovacuum_threshold(double live_tuples)
{
	double		threshold = autovacuum_vac_thresh + autovacuum_vac_scale * Max(live_tuples, 0);

#if PG_VERSION_NUM >= 180000
	if (autovacuum_vac_max_thresh >= 0 && threshold > autovacuum_vac_max_thresh)
		threshold = autovacuum_vac_max_thresh;
#endif
	return threshold;
}
typedef void (*PgcTableDeadFunc) (Oid dboid, Oid relid, int64 dead, int64 live, void *arg);
/*
 * When a table of any database (PG15 on; the current one's before) was
 * last vacuumed, by hand or by autovacuum: 0 if not known (compat.c).
 */
extern TimestampTz pgc_table_last_vacuum(Oid dboid, Oid relid);
extern void pgc_dead_tuples_by_database(PgcTableDeadFunc add, void *arg);

/*
 * Core's JSON parser (common/jsonapi.h): from 16 on the semantic actions
 * return an error code; from 17 on a lexing context is made in place.
 * pgc_json_parse() parses len bytes of s, with \u escapes decoded as in a
 * database of the given encoding, calling sem's actions; *lex_out (when
 * lex_out is not NULL) is the lexing context while they run, whose
 * token_start and prev_token_terminator point into s.
 */
#include "common/jsonapi.h"
#if PG_VERSION_NUM >= 160000
#define PGC_JSON_ACTION			JsonParseErrorType
#define PGC_JSON_ACTION_DONE	return JSON_SUCCESS
#else
#define PGC_JSON_ACTION			void
#define PGC_JSON_ACTION_DONE	return
#endif
extern JsonParseErrorType pgc_json_parse(const char *s, size_t len, int encoding,
										 JsonSemAction *sem, JsonLexContext **lex_out);

/*
 * Not a PostgreSQL difference but the C library's: glibc keeps the heap a
 * process free()d for its next malloc, so a worker whose evaluation once
 * needed hundreds of megabytes would keep them.  pgc_release_free_memory()
 * gives what is free back to the kernel (malloc_trim) when it is more
 * than 32 MB; elsewhere it does nothing.
 */
extern void pgc_release_free_memory(void);

#endif							/* PGC_COMPAT_H */
