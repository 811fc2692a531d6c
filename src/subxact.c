/*-------------------------------------------------------------------------
 *
 * subxact.c
 *		Subtransaction-cache overflows: the live view of every backend's
 *		cache, and the ring of overflow events, each naming the statement
 *		that made a backend's cache overflow.
 *
 * Owns the event ring (ShmemInitStruct "pg_contention overflow events",
 * pgc_max_events slots) and pgc_shared->events_written.
 *
 * Locking: the ring is written and read under pgc_shared->events_lock;
 * writers (at most one event per top-level transaction, so rare) take it
 * exclusively, readers in shared mode only to copy the slots out.  The live
 * view reads other backends' PGPROCs in one pass under ProcArrayLock held
 * in shared mode, and their backend status through the pgstat snapshot.
 * The overflow check reads only this backend's own PGPROC, which only this
 * backend writes, so it takes no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/transam.h"
#include "access/xact.h"
#include "funcapi.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_subxact);
PG_FUNCTION_INFO_V1(pg_contention_overflow_events);

/* The ring: pgc_max_events slots of event_stride() bytes. */
static char *event_ring = NULL;

/*
 * The top-level statement this backend is running, noted by the hooks: its
 * query id, its source text and where it lies in it.  top_query_string is
 * only compared with debug_query_string, never dereferenced: the text is
 * read through debug_query_string, which is valid while the client's
 * message is processed.  (For the extended protocol the source text noted
 * at Bind is the portal's copy, which is debug_query_string at Execute.)
 */
static bool top_known = false;
static int64 top_query_id;
static const char *top_query_string;
static int	top_stmt_location;
static int	top_stmt_len;

/* The top-level transaction (local id) whose overflow was recorded. */
static LocalTransactionId overflow_recorded_lxid = InvalidLocalTransactionId;

static Size
event_stride(void)
{
	return MAXALIGN(offsetof(PgcOverflowEvent, query) + pgc_max_query_length);
}

#define EVENT_SLOT(i) ((PgcOverflowEvent *) (event_ring + (i) * event_stride()))

Size
pgc_events_shmem_size(void)
{
	return mul_size(pgc_max_events, event_stride());
}

/* Called under AddinShmemInitLock. */
void
pgc_events_shmem_init(void)
{
	bool		found;

	event_ring = ShmemInitStruct("pg_contention overflow events",
								 pgc_events_shmem_size(), &found);
	if (!found)
		memset(event_ring, 0, pgc_events_shmem_size());
}

/* Called by pg_contention_reset() with events_lock held exclusively. */
void
pgc_events_reset(void)
{
	pgc_shared->events_written = 0;
}

void
pgc_note_top_statement(int64 query_id, const char *source_text,
					   int stmt_location, int stmt_len)
{
	top_known = true;
	top_query_id = query_id;
	top_query_string = source_text;
	top_stmt_location = stmt_location;
	top_stmt_len = stmt_len;
	pgc_publish_query_id(query_id);
}

void
pgc_forget_top_statement(void)
{
	top_known = false;
}

/*
 * Has this backend's subtransaction cache overflowed in a top-level
 * transaction not yet recorded?  If so, record one event naming the
 * top-level statement (and current_query_id, the innermost statement that
 * just finished, when it differs; 0 when unknown) and count it against the
 * top-level statement.  Called at every statement end, so the common path
 * is a single read of our own PGPROC.
 */
bool
pgc_check_overflow(int64 current_query_id)
{
	TransactionId top_xid;
	PgcOverflowEvent *ev;
	int64		query_id;
	const char *text;
	int			location;
	int			len;

	if (likely(!PGC_PROC_SUBXID_OVERFLOWED(MyProc)))
		return false;
	if (PGC_MY_LXID() == overflow_recorded_lxid || pgc_shared == NULL)
		return false;
	overflow_recorded_lxid = PGC_MY_LXID();
	/* The parent takes its XID before any child, so top_xid is valid. */
	top_xid = GetTopTransactionIdIfAny();

	text = debug_query_string;
	if (top_known && text != NULL && text == top_query_string)
	{
		/* The noted statement's slice of the client's string. */
		size_t		textlen = strlen(text);

		query_id = top_query_id;
		location = top_stmt_location;
		len = top_stmt_len;
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

	LWLockAcquire(pgc_shared->events_lock, LW_EXCLUSIVE);
	ev = EVENT_SLOT(pgc_shared->events_written % pgc_max_events);
	ev->event_time = GetCurrentTimestamp();
	ev->pid = MyProcPid;
	ev->dbid = MyDatabaseId;
	ev->userid = GetSessionUserId();
	ev->top_xid = top_xid;
	ev->query_id = query_id;
	ev->nested_query_id = (current_query_id != query_id) ? current_query_id : 0;
	ev->nesting_depth = GetCurrentTransactionNestLevel() - 1;
	strlcpy(ev->application_name, application_name ? application_name : "",
			NAMEDATALEN);
	pgc_copy_statement_text(ev->query, pgc_max_query_length, text,
							location, len);
	pgc_shared->events_written++;
	LWLockRelease(pgc_shared->events_lock);

	if (pgc_track_statements)
		pgc_statement_count(query_id, text, location, len,
							false, false, false, true, NULL, 0);
	return true;
}

#define EVENT_COLS 10

/*
 * pg_contention_overflow_events(): the ring, oldest first.  The slots are
 * copied out under events_lock in shared mode; tuples are built after it
 * is released.
 */
Datum
pg_contention_overflow_events(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	char	   *copy;
	int64		written;
	int64		first;
	int			n;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);

	copy = palloc_extended(pgc_events_shmem_size(), MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_shared->events_lock, LW_SHARED);
	written = pgc_shared->events_written;
	memcpy(copy, event_ring, pgc_events_shmem_size());
	LWLockRelease(pgc_shared->events_lock);

	n = (int) Min(written, (int64) pgc_max_events);
	first = written - n;
	for (int64 i = first; i < written; i++)
	{
		PgcOverflowEvent *ev = (PgcOverflowEvent *)
		(copy + (i % pgc_max_events) * event_stride());
		Datum		values[EVENT_COLS] = {0};
		bool		nulls[EVENT_COLS] = {0};
		bool		visible = pgc_can_see_details(ev->userid);

		values[0] = TimestampTzGetDatum(ev->event_time);
		values[1] = Int32GetDatum(ev->pid);
		values[2] = ObjectIdGetDatum(ev->dbid);
		values[3] = ObjectIdGetDatum(ev->userid);
		values[4] = CStringGetTextDatum(ev->application_name);
		values[5] = TransactionIdGetDatum(ev->top_xid);
		if (visible && ev->query_id != 0)
			values[6] = Int64GetDatum(ev->query_id);
		else
			nulls[6] = true;
		if (visible && ev->nested_query_id != 0)
			values[7] = Int64GetDatum(ev->nested_query_id);
		else
			nulls[7] = true;
		values[8] = Int32GetDatum(ev->nesting_depth);
		values[9] = CStringGetTextDatum(visible ? ev->query :
										"<insufficient privilege>");
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

#define SUBXACT_COLS 13

Datum
pg_contention_subxact(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcBackend *backends;
	int			n;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);
	backends = pgc_collect_backends(&n);

	for (int i = 0; i < n; i++)
	{
		PgBackendStatus *be = backends[i].status;
		PgcProcState *st = backends[i].proc;
		Datum		values[SUBXACT_COLS] = {0};
		bool		nulls[SUBXACT_COLS] = {0};

		/* Only backends that have a transaction open. */
		if (be->st_xact_start_timestamp == 0 &&
			!TransactionIdIsValid(st->xid) &&
			!TransactionIdIsValid(st->xmin) &&
			st->subxact_count == 0 && !st->subxact_overflowed)
			continue;

		/* Visible to everyone, as in pg_stat_activity. */
		values[0] = Int32GetDatum(st->pid);
		pgc_put_oid(values, nulls, 1, be->st_databaseid);
		pgc_put_oid(values, nulls, 2, be->st_userid);
		if (be->st_appname)
			values[3] = CStringGetTextDatum(be->st_appname);
		else
			nulls[3] = true;
		values[4] = CStringGetTextDatum(pgc_backend_type_name(be));
		if (TransactionIdIsValid(st->xid))
			values[7] = TransactionIdGetDatum(st->xid);
		else
			nulls[7] = true;
		if (TransactionIdIsValid(st->xmin))
			values[8] = TransactionIdGetDatum(st->xmin);
		else
			nulls[8] = true;
		values[9] = Int32GetDatum(st->subxact_count);
		values[10] = BoolGetDatum(st->subxact_overflowed);

		/* State, times and statement only for the owner and pg_read_all_stats. */
		nulls[6] = nulls[11] = true;
		if (pgc_put_state_and_query(be, values, nulls, 5, 12))
		{
			int64		query_id = PGC_BEENTRY_QUERY_ID(be);

			if (be->st_xact_start_timestamp != 0)
			{
				values[6] = TimestampTzGetDatum(be->st_xact_start_timestamp);
				nulls[6] = false;
			}
			if (query_id != 0)
			{
				values[11] = Int64GetDatum(query_id);
				nulls[11] = false;
			}
		}
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
