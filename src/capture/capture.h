/*-------------------------------------------------------------------------
 *
 * capture.h
 *		What the files of capture/ share: the executor's and the
 *		transaction's path in every backend (hooks.c), the statement being
 *		run (current_statement.c), its index scans (indexscan.c), its
 *		counting (statement_count.c), overflows (overflow.c) and constants
 *		(normalize.c).  The rest of the module sees capture/ through
 *		pg_contention.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_CAPTURE_H
#define PGC_CAPTURE_H

#include "pg_contention.h"

/* ---- current_statement.c: the top-level statement this backend runs ---- */

extern void pgc_statement_begin(int64 query_id, const char *source_text,
								int stmt_location, int stmt_len,
								bool ends_at_executor_end);

extern bool pgc_client_utility_running;

extern void pgc_statement_ended(void);

extern void pgc_statement_end_utility(bool ends_transaction);

extern void pgc_transaction_end(bool aborted);

extern uint32 pgc_statement_number(void);

extern bool pgc_current_statement(int64 *query_id, int *stmt_location,
								  int *stmt_len);

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

/* ---- normalize.c: statement texts with constants replaced, and one
 * execution's constants ---- */

/*
 * Write into out (PGC_LITERALS_LEN bytes) the constants one execution ran
 * with: its bind parameters, or the literals of its text, numbered as the
 * normalised text numbers them.  Empty when there are none.  May call
 * output functions: never under a spinlock or an LWLock.
 */
extern void pgc_execution_literals(QueryDesc *queryDesc, char *out);

/*
 * A savepoint statement (source_text[location, location + len), len < 0:
 * to the end) as its entry shows it: with its last number as <n>
 * (SAVEPOINT "_pg3_<n>"), so that its count reads as its pattern's, not
 * as one name's.  palloc'd.
 */
extern char *pgc_savepoint_pattern(const char *source_text, int location, int len);

/* ---- statements.c: the statement hash ---- */

#define PGC_SCAN_INDEX		1

#define PGC_SCAN_INDEX_ONLY	2

#define PGC_SCAN_BITMAP		3

#define PGC_SCAN_MIXED		4	/* scanned by nodes of different kinds */

typedef struct PgcIndexDelta
{
	Oid			indexoid;
	uint8		kind;
	bool		heap_measured;	/* bitmap: "fetched" is the heap's count;
								 * index-only: its heap fetches counted */
	int64		returned;		/* entries the index returned */
	int64		fetched;		/* heap tuples found visible */
	int64		dead;			/* entries whose heap tuple was dead or
								 * invisible: returned - fetched, or for an
								 * index-only scan its heap fetches -
								 * fetched */
	int64		lossy_pages;	/* bitmap: heap pages read whole */
} PgcIndexDelta;

/* What one execution (or event) adds to its statement's entry. */
#define PGC_COUNT_CALL				0x01	/* an execution */

#define PGC_COUNT_SUBOVERFLOWED		0x02	/* its snapshot was suboverflowed */

#define PGC_COUNT_STANDBY			0x04	/* its snapshot was a standby's */

#define PGC_COUNT_OVERFLOW_EVENT	0x08	/* it overflowed the cache */

#define PGC_COUNT_TOP_LEVEL			0x10	/* rows and buffers are set */

#define PGC_COUNT_SAVEPOINT			0x20	/* a savepoint statement: its entry
											 * shows its pattern */

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

extern void pgc_note_dead_index_names(const PgcExecution *exec);

/* ---- overflow.c: overflow detection and the event ring ---- */

/*
 * Work waiting for a statement's end, besides a new overflow: an overflow
 * recorded in an aborted subtransaction, to be counted (COUNT_DEFERRED);
 * an event this statement wrote, to be given its counts when the client's
 * statement ends (EVENT_OPEN).  One byte, so that the test at every
 * statement end stays one compare.
 */
#define PGC_OVERFLOW_COUNT_DEFERRED	0x01
#define PGC_OVERFLOW_EVENT_OPEN		0x02
extern uint8 pgc_overflow_pending;

extern LocalTransactionId pgc_overflow_recorded_lxid;

extern bool pgc_record_overflow(int64 current_query_id, bool in_abort);

extern void pgc_subxid_ended(void);

extern void pgc_overflow_statement_done(int64 rows);

extern void pgc_overflow_forget_open_event(void);

/*
 * At every statement end: has this backend's subtransaction cache
 * overflowed in a transaction whose overflow is not recorded yet, or is
 * some work pending (pgc_overflow_pending)?  Inline: the common path is
 * two loads and a test, and a transaction already recorded adds one
 * compare.  Only this backend writes its PGPROC's flag, so the read needs
 * no lock.
 */
static inline bool
pgc_overflow_attention(void)
{
	return unlikely((PGC_PROC_SUBXID_OVERFLOWED(MyProc) &&
					 PGC_MY_LXID() != pgc_overflow_recorded_lxid) ||
					pgc_overflow_pending != 0);
}

/* The check, and the record of a new overflow (see pgc_record_overflow). */
static inline bool
pgc_check_overflow(int64 current_query_id, bool in_abort)
{
	if (likely(!pgc_overflow_attention()))
		return false;
	return pgc_record_overflow(current_query_id, in_abort);
}

#endif							/* PGC_CAPTURE_H */
