/*-------------------------------------------------------------------------
 *
 * subxact.c
 *		Subtransaction-cache overflows: the live view of every backend's
 *		cache, and the ring of overflow events, each naming the statement
 *		that made a backend's cache overflow.
 *
 * Owns the event ring (ShmemInitStruct "pg_contention overflow events":
 * a header with the count of events written, then pgc_max_events slots)
 * and its LWLock.
 *
 * Locking: the ring is written and read under its lock; writers (at most
 * one event per top-level transaction, so rare) take it exclusively,
 * readers in shared mode only to copy the used slots out (the save for
 * the file a bounded batch at a time, writing with the lock released).
 * The live view reads other backends' PGPROCs in one pass under
 * ProcArrayLock held in shared mode, and their backend status through the
 * pgstat snapshot.  The overflow check reads only this backend's own
 * PGPROC, which only this backend writes, so it takes no lock.
 *
 * An overflow seen when a subtransaction aborts is written to the ring
 * there (a lock and a copy, no allocation), but counted against its
 * statement only at the next statement end: counting can create and evict
 * statement entries, which allocates, and abort callbacks must not.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_subxact);
PG_FUNCTION_INFO_V1(pg_contention_overflow_events);

/* One overflow event (a ring slot); query[] has max_query_length bytes. */
typedef struct OverflowEvent
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
} OverflowEvent;

typedef struct EventsShared
{
	LWLock	   *lock;
	int64		written;		/* events ever written since reset */
	uint64		resets;			/* resets since start, for a save's batches */
} EventsShared;

/* The header, then pgc_max_events slots of event_stride() bytes. */
static EventsShared *events = NULL;
static char *event_ring = NULL;

static void record_event(int64 current_query_id, bool in_abort);

/*
 * The top-level transaction (local id) whose overflow was recorded.
 * Exported for the inline test in pg_contention.h: a transaction that has
 * overflowed checks again at every statement end.
 */
LocalTransactionId pgc_overflow_recorded_lxid = InvalidLocalTransactionId;

/*
 * An overflow recorded in a subtransaction's abort, to be counted against
 * its statement at the next statement end.  The text buffer is allocated
 * once, at start, so the abort path never allocates.
 */
bool		pgc_overflow_count_deferred = false;
static Oid	deferred_userid;
static int64 deferred_query_id;
static char *deferred_text = NULL;

/* What an overflow event adds to its statement's entry. */
static const PgcExecution overflow_event = {.flags = PGC_COUNT_OVERFLOW_EVENT};

static Size
event_stride(void)
{
	return MAXALIGN(offsetof(OverflowEvent, query) + pgc_max_query_length);
}

#define EVENT_SLOT(ring, i) ((OverflowEvent *) ((ring) + (i) * event_stride()))

Size
pgc_events_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(EventsShared)),
					mul_size(pgc_max_events, event_stride()));
}

/* Called under AddinShmemInitLock. */
void
pgc_events_shmem_init(LWLock *lock)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("pg_contention overflow events",
						   pgc_events_shmem_size(), &found);
	events = (EventsShared *) base;
	event_ring = base + MAXALIGN(sizeof(EventsShared));
	if (!found)
	{
		memset(base, 0, pgc_events_shmem_size());
		events->lock = lock;
	}
}

/* pg_contention_reset(): forget every event and the count of drops. */
void
pgc_events_reset(void)
{
	LWLockAcquire(events->lock, LW_EXCLUSIVE);
	events->written = 0;
	events->resets++;
	LWLockRelease(events->lock);
}

void
pgc_events_info(int64 *written)
{
	LWLockAcquire(events->lock, LW_SHARED);
	*written = events->written;
	LWLockRelease(events->lock);
}

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
	pgc_overflow_count_deferred = false;
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
	if (unlikely(pgc_overflow_count_deferred) && !in_abort)
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
	OverflowEvent *ev;
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

	LWLockAcquire(events->lock, LW_EXCLUSIVE);
	ev = EVENT_SLOT(event_ring, events->written % pgc_max_events);
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
	events->written++;
	LWLockRelease(events->lock);

	if (in_abort)
	{
		/* The event's copy of the text is the same slice, already cut. */
		pgc_overflow_count_deferred = true;
		deferred_userid = GetUserId();
		deferred_query_id = query_id;
		pgc_copy_statement_text(deferred_text, pgc_max_query_length, text,
								location, len);
	}
	else if (pgc_track_statements)
		pgc_statement_count(InvalidOid, query_id, text, location, len,
							&overflow_event);
}

static const PgcResultColumn event_columns[] = {
	{"event_time", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"pid", INT4OID, PGC_SQL_V(1, 0)},
	{"datid", OIDOID, PGC_SQL_V(1, 0)},
	{"usesysid", OIDOID, PGC_SQL_V(1, 0)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 0)},
	{"top_xid", XIDOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"nested_query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"nesting_depth", INT4OID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
};
static const PgcResultShape event_shape = {
	"pg_contention_overflow_events", event_columns, lengthof(event_columns)
};

#define EVENT_COLS lengthof(event_columns)

/*
 * The rows of pg_contention_overflow_events, kept for the rest of the
 * client's statement while no event is written or reset (rowcache.c): the
 * findings read them in several rules.
 */
static PgcRowCache event_rows;

/*
 * pg_contention_overflow_events(): the ring, oldest first.  The used slots'
 * events are copied out under the lock in shared mode (in ring order: the
 * slots before the oldest one come after it); tuples are built after it is
 * released, or an earlier call's given back (event_rows).
 */
Datum
pg_contention_overflow_events(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	char	   *copy = NULL;
	int		   *text_at = NULL;
	StringInfoData texts;
	Size		head = MAXALIGN(offsetof(OverflowEvent, query));
	uint64		version[2];
	int64		written;
	int			n;
	int			oldest;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &event_shape, &tupdesc);

	/* The rows of an earlier call of this statement, if no event came since. */
	LWLockAcquire(events->lock, LW_SHARED);
	version[0] = (uint64) events->written;
	version[1] = events->resets;
	LWLockRelease(events->lock);
	if (pgc_row_cache_replay(&event_rows, version, tupdesc, tupstore))
		return (Datum) 0;
	initStringInfo(&texts);

	/*
	 * Each event's fields and the text it holds, not its whole slot: a slot
	 * has room for pg_contention.max_query_length bytes of text, most of it
	 * unused, and copying the full ring cost more than building its rows
	 * (the findings read it three times per call).  Palloc under a shared
	 * lock: an error releases it at abort.
	 */
	LWLockAcquire(events->lock, LW_SHARED);
	written = events->written;
	version[0] = (uint64) written;
	version[1] = events->resets;
	n = (int) Min(written, (int64) pgc_max_events);
	oldest = (int) ((written - n) % pgc_max_events);
	if (n > 0)
	{
		copy = palloc_extended(mul_size(n, head), MCXT_ALLOC_HUGE);
		text_at = palloc_extended(mul_size(n, sizeof(int)), MCXT_ALLOC_HUGE);
		for (int i = 0; i < n; i++)
		{
			OverflowEvent *ev = EVENT_SLOT(event_ring, (oldest + i) % pgc_max_events);

			memcpy(copy + i * head, ev, offsetof(OverflowEvent, query));
			text_at[i] = texts.len;
			appendBinaryStringInfo(&texts, ev->query,
								   strnlen(ev->query, pgc_max_query_length - 1));
			appendStringInfoChar(&texts, '\0');
		}
	}
	LWLockRelease(events->lock);

	pgc_row_cache_begin(&event_rows, version, tupdesc);
	for (int i = 0; i < n; i++)
	{
		OverflowEvent *ev = (OverflowEvent *) (copy + i * head);
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
		/* Captured in its database's encoding: made valid in ours. */
		values[9] = pgc_masked_text_datum(visible, texts.data + text_at[i], ev->dbid);
		pgc_row_cache_put(&event_rows, tupstore, tupdesc, values, nulls);
	}
	pgc_row_cache_end(&event_rows);
	pfree(texts.data);
	if (text_at)
		pfree(text_at);
	if (copy)
		pfree(copy);
	return (Datum) 0;
}

static const PgcResultColumn subxact_columns[] = {
	{"pid", INT4OID, PGC_SQL_V(1, 0)},
	{"datid", OIDOID, PGC_SQL_V(1, 0)},
	{"usesysid", OIDOID, PGC_SQL_V(1, 0)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 0)},
	{"backend_type", TEXTOID, PGC_SQL_V(1, 0)},
	{"state", TEXTOID, PGC_SQL_V(1, 0)},
	{"xact_start", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"top_xid", XIDOID, PGC_SQL_V(1, 0)},
	{"backend_xmin", XIDOID, PGC_SQL_V(1, 0)},
	{"subxact_count", INT4OID, PGC_SQL_V(1, 0)},
	{"subxact_overflowed", BOOLOID, PGC_SQL_V(1, 0)},
	{"query_id", INT8OID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
};
static const PgcResultShape subxact_shape = {
	"pg_contention_subxact", subxact_columns, lengthof(subxact_columns)
};

#define SUBXACT_COLS lengthof(subxact_columns)

Datum
pg_contention_subxact(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcBackend *backends;
	int			n;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &subxact_shape, &tupdesc);
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

/* ---- the file (persist.c) ---- */

/* A saved event: its fixed part, then its text. */
uint32
pgc_events_record_size(void)
{
	return (uint32) offsetof(OverflowEvent, query);
}

/*
 * The section: the count of events ever written, then the ring, oldest
 * first.  A batch of slots at a time is copied under the lock in shared
 * mode and written after releasing it.  Between batches writers may add
 * events (those after the count read first are left for the next save)
 * and overwrite the oldest slots (those events are skipped); a reset
 * bumps resets, and the section then ends with what was copied before it.
 * The slots are written whole under the exclusive lock, so a copy under
 * the shared lock is a whole event.
 */
void
pgc_events_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	Size		stride = event_stride();
	int			batch_max = Max(1, (int) (PGC_SAVE_BATCH_BYTES / stride));
	char	   *batch;
	int64		written;
	uint64		resets;
	int64		next;

	*count = 0;
	batch = palloc_extended(batch_max * stride, MCXT_ALLOC_NO_OOM);
	if (batch == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		return;
	}
	if (take_locks)
		LWLockAcquire(events->lock, LW_SHARED);
	written = events->written;
	resets = events->resets;
	if (take_locks)
		LWLockRelease(events->lock);
	pgc_write_bytes(writer, &written, sizeof(written));

	next = written - Min(written, (int64) pgc_max_events);
	while (next < written && !pgc_writer_failed(writer))
	{
		int			n = 0;

		if (take_locks)
			LWLockAcquire(events->lock, LW_SHARED);
		if (events->resets != resets)
		{
			if (take_locks)
				LWLockRelease(events->lock);
			break;
		}
		next = Max(next, events->written - (int64) pgc_max_events);
		for (; next < written && n < batch_max; next++, n++)
			memcpy(batch + n * stride,
				   EVENT_SLOT(event_ring, next % pgc_max_events), stride);
		if (take_locks)
			LWLockRelease(events->lock);

		for (int i = 0; i < n; i++)
		{
			OverflowEvent *ev = (OverflowEvent *) (batch + i * stride);

			pgc_write_bytes(writer, ev, offsetof(OverflowEvent, query));
			pgc_write_text(writer, ev->query);
		}
		*count += n;
	}
	pfree(batch);
}

/*
 * Put the saved events back in the empty ring, in their order, keeping the
 * newest pg_contention.max_events; the count written (and so the drops)
 * carries on.  Postmaster only, before any backend exists: no lock.
 *
 * Nothing read is trusted: the count written is clamped to [events kept,
 * PGC_COUNTER_MAX] (far from where written % max_events could go negative
 * or written++ overflow), an event with an implausible time is skipped,
 * a negative nesting depth is clamped, the strings are cut to their
 * buffers; each is counted in reader->fixed.
 */
void
pgc_events_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	int64		written;
	uint64		skip = count > (uint64) pgc_max_events ? count - pgc_max_events : 0;
	char	   *scratch = palloc(event_stride());
	int64		base;

	*kept = 0;
	if (!pgc_read_bytes(reader, &written, sizeof(written)))
	{
		pfree(scratch);
		return;
	}
	pgc_fix_counter(reader, &written);
	if (written < (int64) Min(count, (uint64) PGC_COUNTER_MAX))
	{
		written = (int64) Min(count, (uint64) PGC_COUNTER_MAX);
		reader->fixed++;
	}
	/* The kept events take the ring's slots from base on, oldest first. */
	base = written - (int64) Min(count - skip, (uint64) written);
	for (uint64 i = 0; i < count && !reader->failed; i++)
	{
		OverflowEvent *ev;

		/* Events that no longer fit are read into scratch and dropped. */
		ev = (i < skip) ? (OverflowEvent *) scratch :
			EVENT_SLOT(event_ring, (base + (int64) *kept) % pgc_max_events);
		if (!pgc_read_bytes(reader, ev, offsetof(OverflowEvent, query)) ||
			!pgc_read_text(reader, ev->query, pgc_max_query_length))
			break;
		pgc_fix_string(ev->application_name, NAMEDATALEN);
		if (i < skip)
			continue;
		pgc_fix_int32(reader, &ev->nesting_depth, 0, PG_INT32_MAX);
		if (!pgc_fix_time(reader, &ev->event_time) || ev->event_time == 0)
		{
			if (ev->event_time == 0)
				reader->fixed++;
			continue;			/* the slot is taken by the next one */
		}
		(*kept)++;
	}
	/* A short section or skipped events: the events kept stand as the newest. */
	events->written = base + (int64) *kept;
	pfree(scratch);
}
