/*-------------------------------------------------------------------------
 *
 * overflow.c
 *		Subtransaction-cache overflows seen at a statement's end: this
 *		backend's own cache checked, and an overflow written to the event
 *		ring (stores/events.c) with the statement that caused it.
 *
 * Owns no shared state.  The overflow check reads only this backend's own
 * PGPROC, which only this backend writes, so it takes no lock.  An
 * overflow seen when a subtransaction aborts is written to the ring there
 * (a lock and a copy, no allocation), but counted against its statement
 * only at the next statement end: counting can create and evict statement
 * entries, which allocates, and abort callbacks must not.  At the end of
 * the top-level statement that overflowed, its event (if the ring still
 * holds it, and its (database, role)'s latest copy) is given the number of
 * subtransactions the statement opened and of rows it processed, under the
 * ring's lock: once per overflowing transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/events.h"
#include "capture.h"

#include "access/transam.h"
#include "access/xact.h"
#include "tcop/tcopprot.h"

static void record_event(int64 current_query_id, bool in_abort);


/*
 * The top-level transaction (local id) whose overflow was recorded.
 * Exported for the inline test in pg_contention.h: a transaction that has
 * overflowed checks again at every statement end.
 */
LocalTransactionId pgc_overflow_recorded_lxid = InvalidLocalTransactionId;

/* Work waiting for a statement's end (capture.h). */
uint8		pgc_overflow_pending = 0;

/*
 * An overflow recorded in a subtransaction's abort, to be counted against
 * its statement at the next statement end.  The text buffer is allocated
 * once, at start, so the abort path never allocates.
 */
static Oid	deferred_userid;
static int64 deferred_query_id;
static char *deferred_text = NULL;

/*
 * Subtransactions with an XID ended (committed or aborted) in the running
 * client statement, counted by the subtransaction callback: a statement
 * whose function opens them per row shows it here.  The statement they
 * belong to is told apart without any work at its start (the common path):
 * by this backend's statement number (current_statement.c) and, where a
 * backend has none, its message's start time.
 */
static int64 statement_subxids = 0;
static uint32 subxids_statement_no = 0;
static TimestampTz subxids_message_start = 0;

/*
 * The event this statement wrote, waiting for the statement's end: its
 * place in the ring's sequence, and what identifies it there.
 */
static int64 open_event_seq;
static uint64 open_event_resets;
static TransactionId open_event_xid;

/* What an overflow event adds to its statement's entry. */
static const PgcExecution overflow_event = {.flags = PGC_COUNT_OVERFLOW_EVENT};

/* At library load (postmaster or backend): the deferred count's buffer. */
void
pgc_subxact_init(void)
{
	deferred_text = MemoryContextAlloc(TopMemoryContext, pgc_max_query_length);
}

/*
 * Count an overflow recorded in an aborted subtransaction against its
 * statement: at the next statement end (pgc_check_overflow).
 */
static void
count_deferred_overflow(void)
{
	pgc_overflow_pending &= ~PGC_OVERFLOW_COUNT_DEFERRED;
	if (pgc_track_statements)
		pgc_statement_count(deferred_userid, deferred_query_id, deferred_text,
							-1, 0, &overflow_event);
}

/*
 * Has this backend's subtransaction cache overflowed in a top-level
 * transaction not yet recorded?  If so, record one event naming the
 * top-level statement (and current_query_id, the innermost statement that
 * just finished, when it differs; 0 when unknown) and count it against the
 * top-level statement, at once or, in_abort, at the next statement end.
 * Called through pgc_check_overflow() (pg_contention.h), whose inline test
 * keeps the common path to a read of our own PGPROC and of the flag.
 */
bool
pgc_record_overflow(int64 current_query_id, bool in_abort)
{
	if ((pgc_overflow_pending & PGC_OVERFLOW_COUNT_DEFERRED) && !in_abort)
		count_deferred_overflow();
	if (PGC_MY_LXID() == pgc_overflow_recorded_lxid ||
		!PGC_PROC_SUBXID_OVERFLOWED(MyProc) || pgc_shared == NULL)
		return false;
	record_event(current_query_id, in_abort);
	return true;
}

/*
 * Record the event of this transaction's overflow, and count it (see
 * pgc_record_overflow).  Out of line: a transaction whose cache overflowed
 * checks again at every statement end, and that check must stay short.
 */
static pg_noinline void
record_event(int64 current_query_id, bool in_abort)
{
	TransactionId top_xid;
	OverflowEvent ev;
	int64		query_id;
	const char *text;
	int			location;
	int			len;

	pgc_overflow_recorded_lxid = PGC_MY_LXID();
	/* The parent takes its XID before any child, so top_xid is valid. */
	top_xid = GetTopTransactionIdIfAny();

	text = debug_query_string;
	if (pgc_current_statement(&query_id, &location, &len))
	{
		/* The noted statement's slice of the client's string. */
		size_t		textlen = strlen(text);

		if (location < 0 || (size_t) location > textlen)
			location = -1;
		else if (len < 0 || (size_t) location + len > textlen)
			len = 0;
	}
	else
	{
		/* No statement noted for this message: the client's whole string. */
		query_id = current_query_id;
		location = -1;
		len = 0;
	}

	memset(&ev, 0, sizeof(ev));
	ev.pid = MyProcPid;
	ev.dbid = MyDatabaseId;
	ev.userid = GetSessionUserId();
	ev.top_xid = top_xid;
	ev.query_id = query_id;
	ev.nested_query_id = (current_query_id != query_id) ? current_query_id : 0;
	ev.nesting_depth = GetCurrentTransactionNestLevel() - 1;
	ev.statement_subxacts = -1;
	ev.statement_rows = -1;
	strlcpy(ev.application_name, application_name ? application_name : "",
			NAMEDATALEN);
	pgc_events_write(&ev, text, location, len, &open_event_seq, &open_event_resets);
	open_event_xid = top_xid;
	pgc_overflow_pending |= PGC_OVERFLOW_EVENT_OPEN;

	/*
	 * Inside a function (a trigger's, say): the function and its trigger,
	 * noted for the statement that overflowed, while its context is there
	 * (never while aborting: the stack is being unwound); kept before any
	 * index's name.
	 */
	if (!in_abort && current_query_id != query_id)
		pgc_nested_context_note(current_query_id, PG_INT64_MAX);

	if (in_abort)
	{
		/* The event's copy of the text is the same slice, already cut. */
		pgc_overflow_pending |= PGC_OVERFLOW_COUNT_DEFERRED;
		deferred_userid = GetUserId();
		deferred_query_id = query_id;
		pgc_copy_statement_text(deferred_text, pgc_max_query_length, text,
								location, len);
	}
	else if (pgc_track_statements)
		pgc_statement_count(InvalidOid, query_id, text, location, len,
							&overflow_event);
}

/* Is the running client statement the one statement_subxids counts? */
static inline bool
subxids_are_this_statements(void)
{
	return pgc_statement_number() == subxids_statement_no &&
		GetCurrentStatementStartTimestamp() == subxids_message_start;
}

/*
 * A subtransaction that took an XID (one that fills the cache) has ended:
 * count it for the client statement running (subxact callback, COMMIT_SUB
 * and ABORT_SUB; never allocates).
 */
void
pgc_subxid_ended(void)
{
	if (!subxids_are_this_statements())
	{
		statement_subxids = 0;
		subxids_statement_no = pgc_statement_number();
		subxids_message_start = GetCurrentStatementStartTimestamp();
	}
	statement_subxids++;
}

/*
 * The client statement whose overflow this backend recorded has ended:
 * give its event how many subtransactions with an XID the statement opened
 * (a function's EXCEPTION block per row shows as one per row) and how many
 * rows it processed (rows < 0: unknown).  The event is found by its place
 * in the sequence, if no reset came and the ring has not gone round; its
 * (database, role)'s latest copy, if it is that one.
 */
void
pgc_overflow_statement_done(int64 rows)
{
	int64		subxacts = subxids_are_this_statements() ? statement_subxids : 0;

	pgc_overflow_pending &= ~PGC_OVERFLOW_EVENT_OPEN;
	/*
	 * Only in the transaction that overflowed: an event whose statement
	 * never ended (a cursor's, or a procedure's that committed inside) is
	 * left without counts rather than given another statement's.
	 */
	if (pgc_shared == NULL ||
		!TransactionIdEquals(open_event_xid, GetTopTransactionIdIfAny()))
		return;
	pgc_events_set_statement_counts(open_event_seq, open_event_resets,
									open_event_xid, subxacts, rows);
}

/* A statement that failed has no counts to give its event. */
void
pgc_overflow_forget_open_event(void)
{
	pgc_overflow_pending &= ~PGC_OVERFLOW_EVENT_OPEN;
}
