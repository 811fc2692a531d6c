/*-------------------------------------------------------------------------
 *
 * readers.h
 *		What the SQL functions of readers/ share: who may see what, the
 *		processes' states and names, the result shapes and row caches,
 *		texts in the reader's encoding, the frozen evidence masked.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_READERS_H
#define PGC_READERS_H

#include "pg_contention.h"

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
	int			leader_pid;		/* a parallel worker's leader, else 0 */
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

/* ---- text_out.c: stored texts, valid in the reader's encoding ---- */

extern Datum pgc_text_datum(const char *s, Oid source_dbid);

extern Datum pgc_masked_text_datum(bool visible, const char *s, Oid source_dbid);

/* ---- statements_views.c: how the statement store's rows begin ---- */

struct PgcStatementEntry;		/* stores/statements.h */

extern bool put_key_columns(const struct PgcStatementEntry *e, Datum *values,
							bool *nulls);
extern void put_literals(const char *literals, bool visible, Oid dbid,
						 Datum *values, bool *nulls, int col);

/* ---- srf.c: the SQL functions' result shapes ---- */

extern void pgc_check_result_shape(TupleDesc tupdesc,
								   const PgcResultShape *shape);

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

#endif							/* PGC_READERS_H */
