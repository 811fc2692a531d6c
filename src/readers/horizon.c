/*-------------------------------------------------------------------------
 *
 * horizon.c
 *		Holders of the xmin horizon: backends with an old xid or snapshot,
 *		walsenders carrying a standby's feedback, and replication slots.
 *		(Prepared transactions are added by the view, from
 *		pg_prepared_xacts: the server keeps their state in a static array.)
 *
 * Owns no shared state.  Reads the PGPROC array under ProcArrayLock in
 * shared mode for one pass (activity.c), and the replication slots under
 * ReplicationSlotControlLock in shared mode, copying each slot under its
 * own spinlock, as pg_get_replication_slots() does; then copies what the
 * sampler saw of their xmins (stores/xmin_since.c, under its lock in
 * shared mode) to say since when each has had its value (xmin_since).
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "replication/slot.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_horizon_holders);

/* 1.1 added own_xid, 1.4 xmin_since. */
static const PgcResultColumn horizon_columns[] = {
	{"kind", TEXTOID, PGC_SQL_V(1, 0)},
	{"holder", TEXTOID, PGC_SQL_V(1, 0)},
	{"pid", INT4OID, PGC_SQL_V(1, 0)},
	{"datid", OIDOID, PGC_SQL_V(1, 0)},
	{"usesysid", OIDOID, PGC_SQL_V(1, 0)},
	{"xmin", XIDOID, PGC_SQL_V(1, 0)},
	{"catalog_only", BOOLOID, PGC_SQL_V(1, 0)},
	{"held_since", TIMESTAMPTZOID, PGC_SQL_V(1, 0)},
	{"state", TEXTOID, PGC_SQL_V(1, 0)},
	{"query", TEXTOID, PGC_SQL_V(1, 0)},
	{"own_xid", XIDOID, PGC_SQL_V(1, 1)},
	{"xmin_since", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape horizon_shape = {
	"pg_contention_horizon_holders", horizon_columns, lengthof(horizon_columns)
};

#define HORIZON_COLS lengthof(horizon_columns)

typedef struct SlotCopy
{
	int			index;			/* in the server's slot array */
	NameData	name;
	Oid			database;
	TransactionId xmin;
	TransactionId catalog_xmin;
	int			active_pid;
	TimestampTz inactive_since;
} SlotCopy;

/* What the sampler saw of the holders (xmin_since.c), sorted by pid. */
typedef struct SinceSeen
{
	PgcXminSince *procs;		/* NULL: the sampler has made no pass */
	int			nprocs;
	PgcSlotXminSince *slots;
	int			nslots;
	TimestampTz last_pass;		/* what it has not seen came after */
} SinceSeen;

static int
compare_since_pid(const void *a, const void *b)
{
	int			pa = ((const PgcXminSince *) a)->pid;
	int			pb = ((const PgcXminSince *) b)->pid;

	return (pa > pb) - (pa < pb);
}

/*
 * Since when a process's xmin has had its value; 0 when not known (the
 * sampler has not looked for 5 seconds: it is off or stopped).  A
 * backend's: since the sampler's pass before the one that first saw it
 * (the earliest it can date from), not before its transaction's
 * start (a transaction takes new snapshots: CREATE INDEX CONCURRENTLY one
 * per phase, all under the statement's start), or that start when the
 * sampler has not seen it (it is under a second old).  A walsender's (its
 * standby's feedback): since it fell behind the next
 * XID; at every feedback message it moves, so this is how long the
 * standby's own queries have held it.  What the sampler's last pass did
 * not see (a new process, a value that has changed or fallen behind
 * since) came after it: since that pass (but a leader's xmin older than
 * its own, from a parallel worker's: its transaction's start).
 */
static TimestampTz
proc_xmin_since(const SinceSeen *seen, int pid, TransactionId xmin, bool walsender,
				TimestampTz xact_start)
{
	PgcXminSince key = {.pid = pid};
	const PgcXminSince *e = NULL;

	if (seen->procs != NULL)
		e = bsearch(&key, seen->procs, seen->nprocs, sizeof(PgcXminSince), compare_since_pid);
	if (seen->procs == NULL)
		return walsender ? 0 : xact_start;
	if (e == NULL)
		return walsender ? seen->last_pass : xact_start;
	if (e->xmin != xmin)
	{
		if (walsender)
			return seen->last_pass;
		return TransactionIdPrecedes(xmin, e->xmin) ? xact_start : Max(seen->last_pass, xact_start);
	}
	if (walsender)
		return e->behind_since != 0 ? e->behind_since : seen->last_pass;
	if (e->first_seen == 0)
		return xact_start;
	return Max(e->first_seen, xact_start);
}

/*
 * An active slot's xmin or catalog_xmin moves with its consumer's
 * confirmations (a physical slot's is its standby's feedback): since when
 * the sampler has seen it behind the next XID, as a walsender's.
 */
static TimestampTz
slot_xmin_since(const SinceSeen *seen, const SlotCopy *slot, TransactionId xmin,
				bool catalog_only)
{
	const PgcSlotXminSince *e;

	TimestampTz since;

	if (seen->slots == NULL)
		return 0;
	if (slot->index >= seen->nslots)
		return seen->last_pass;
	e = &seen->slots[slot->index];
	if (strcmp(NameStr(e->name), NameStr(slot->name)) != 0 ||
		(catalog_only ? e->catalog_xmin : e->xmin) != xmin)
		return seen->last_pass;
	since = catalog_only ? e->catalog_behind_since : e->xmin_behind_since;
	return since != 0 ? since : seen->last_pass;
}

static void
put_slot_row(Tuplestorestate *tupstore, TupleDesc tupdesc, const SlotCopy *slot,
			 TransactionId xmin, bool catalog_only, const SinceSeen *seen)
{
	TimestampTz since = 0;

	Datum		values[HORIZON_COLS] = {0};
	bool		nulls[HORIZON_COLS] = {0};

	values[0] = CStringGetTextDatum("replication slot");
	values[1] = CStringGetTextDatum(NameStr(slot->name));
	if (slot->active_pid != 0)
		values[2] = Int32GetDatum(slot->active_pid);
	else
		nulls[2] = true;
	pgc_put_oid(values, nulls, 3, slot->database);
	nulls[4] = true;			/* a slot has no role */
	values[5] = TransactionIdGetDatum(xmin);
	values[6] = BoolGetDatum(catalog_only);
	if (slot->active_pid == 0 && slot->inactive_since != 0)
		values[7] = TimestampTzGetDatum(slot->inactive_since);
	else
		nulls[7] = true;
	values[8] = CStringGetTextDatum(slot->active_pid != 0 ? "active" : "inactive");
	nulls[9] = true;
	nulls[10] = true;			/* a slot runs no transaction */
	/* An inactive slot's xmin stays: its inactive_since says since when. */
	if (slot->active_pid != 0)
		since = slot_xmin_since(seen, slot, xmin, catalog_only);
	if (since != 0)
		values[11] = TimestampTzGetDatum(since);
	else
		nulls[11] = true;
	tuplestore_putvalues(tupstore, tupdesc, values, nulls);
}

static void
add_slots(Tuplestorestate *tupstore, TupleDesc tupdesc, const SinceSeen *seen)
{
	SlotCopy   *slots;
	int			n = 0;

	if (ReplicationSlotCtl == NULL || max_replication_slots <= 0)
		return;
	slots = palloc(sizeof(SlotCopy) * max_replication_slots);

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];

		if (!s->in_use)
			continue;
		SpinLockAcquire(&s->mutex);
		slots[n].index = i;
		slots[n].name = s->data.name;
		slots[n].database = s->data.database;
		slots[n].xmin = s->effective_xmin;
		slots[n].catalog_xmin = s->effective_catalog_xmin;
		slots[n].active_pid = s->active_pid;
		slots[n].inactive_since = PGC_SLOT_INACTIVE_SINCE(s);
		SpinLockRelease(&s->mutex);
		n++;
	}
	LWLockRelease(ReplicationSlotControlLock);

	for (int i = 0; i < n; i++)
	{
		if (TransactionIdIsValid(slots[i].xmin))
			put_slot_row(tupstore, tupdesc, &slots[i], slots[i].xmin, false, seen);
		if (TransactionIdIsValid(slots[i].catalog_xmin))
			put_slot_row(tupstore, tupdesc, &slots[i], slots[i].catalog_xmin, true, seen);
	}
	pfree(slots);
}

/*
 * pg_contention_horizon_holders(): one row per backend and slot that holds
 * back the xmin horizon.  A backend holds it with the older of its xid and
 * its xmin, and reports its own xid apart (the view tells from it which
 * holders only follow another's transaction); backends running VACUUM or
 * logical decoding are skipped, as the server skips them when it computes
 * the horizon.  The querying backend is left out.  A parallel worker is
 * not a holder of its own: its snapshot is its leader's, which ends the
 * workers with the query, so it is folded into its leader's row (the older
 * of their xmins); a worker whose leader is not in the array (it is exiting)
 * is left out.
 */
Datum
pg_contention_horizon_holders(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcBackend *backends;
	int			n;
	SinceSeen	seen;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &horizon_shape, &tupdesc);
	backends = pgc_collect_backends(&n);
	/* Copied after the backends: a value the sampler has not seen is new. */
	seen.procs = pgc_xmin_since_copy(&seen.nprocs, &seen.slots, &seen.nslots,
									 &seen.last_pass);
	if (seen.procs != NULL)
		qsort(seen.procs, seen.nprocs, sizeof(PgcXminSince), compare_since_pid);

	/* Each worker's xmin into its leader's (the states are our copies). */
	for (int i = 0; i < n; i++)
	{
		PgcProcState *worker = backends[i].proc;

		if (worker->leader_pid == 0 || !TransactionIdIsValid(worker->xmin))
			continue;
		for (int j = 0; j < n; j++)
		{
			PgcProcState *leader = backends[j].proc;

			if (leader->pid != worker->leader_pid)
				continue;
			if (!TransactionIdIsValid(leader->xmin) ||
				TransactionIdPrecedes(worker->xmin, leader->xmin))
				leader->xmin = worker->xmin;
			break;
		}
	}

	for (int i = 0; i < n; i++)
	{
		PgBackendStatus *be = backends[i].status;
		PgcProcState *st = backends[i].proc;
		TransactionId xmin = st->xmin;
		bool		walsender;
		TimestampTz xact_start = 0;
		TimestampTz since;
		Datum		values[HORIZON_COLS] = {0};
		bool		nulls[HORIZON_COLS] = {0};

		if (st->pid == MyProcPid || st->leader_pid != 0 ||
			(st->status_flags & (PROC_IN_VACUUM | PROC_IN_LOGICAL_DECODING)) != 0)
			continue;
		if (TransactionIdIsValid(st->xid) &&
			(!TransactionIdIsValid(xmin) || TransactionIdPrecedes(st->xid, xmin)))
			xmin = st->xid;
		if (!TransactionIdIsValid(xmin))
			continue;

		/* A walsender's xmin is a standby's hot_standby_feedback. */
		walsender = (be->st_backendType == B_WAL_SENDER);
		values[0] = CStringGetTextDatum(walsender ? "standby feedback" : "backend");
		values[1] = CStringGetTextDatum(psprintf("%d", st->pid));
		values[2] = Int32GetDatum(st->pid);
		pgc_put_oid(values, nulls, 3, be->st_databaseid);
		pgc_put_oid(values, nulls, 4, be->st_userid);
		values[5] = TransactionIdGetDatum(xmin);
		values[6] = BoolGetDatum(false);
		nulls[7] = true;
		/* Its own xid: what other holders' snapshots may follow. */
		if (TransactionIdIsValid(st->xid))
			values[10] = TransactionIdGetDatum(st->xid);
		else
			nulls[10] = true;
		/*
		 * Since when: a transaction's start.  A walsender's xmin is the
		 * standby's, taken there at a time not known here: NULL (the view
		 * then judges it by its age in XIDs).
		 */
		if (pgc_put_state_and_query(be, values, nulls, 8, 9) && !walsender &&
			be->st_xact_start_timestamp != 0)
		{
			xact_start = be->st_xact_start_timestamp;
			values[7] = TimestampTzGetDatum(xact_start);
			nulls[7] = false;
		}
		since = proc_xmin_since(&seen, st->pid, xmin, walsender, xact_start);
		if (since != 0)
			values[11] = TimestampTzGetDatum(since);
		else
			nulls[11] = true;
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}

	add_slots(tupstore, tupdesc, &seen);
	return (Datum) 0;
}
