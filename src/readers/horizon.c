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
 * own spinlock, as pg_get_replication_slots() does.
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

/* 1.1 added own_xid. */
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
};
static const PgcResultShape horizon_shape = {
	"pg_contention_horizon_holders", horizon_columns, lengthof(horizon_columns)
};

#define HORIZON_COLS lengthof(horizon_columns)

typedef struct SlotCopy
{
	NameData	name;
	Oid			database;
	TransactionId xmin;
	TransactionId catalog_xmin;
	int			active_pid;
	TimestampTz inactive_since;
} SlotCopy;

static void
put_slot_row(Tuplestorestate *tupstore, TupleDesc tupdesc, const SlotCopy *slot,
			 TransactionId xmin, bool catalog_only)
{
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
	tuplestore_putvalues(tupstore, tupdesc, values, nulls);
}

static void
add_slots(Tuplestorestate *tupstore, TupleDesc tupdesc)
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
			put_slot_row(tupstore, tupdesc, &slots[i], slots[i].xmin, false);
		if (TransactionIdIsValid(slots[i].catalog_xmin))
			put_slot_row(tupstore, tupdesc, &slots[i], slots[i].catalog_xmin, true);
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

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &horizon_shape, &tupdesc);
	backends = pgc_collect_backends(&n);

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
			values[7] = TimestampTzGetDatum(be->st_xact_start_timestamp);
			nulls[7] = false;
		}
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}

	add_slots(tupstore, tupdesc);
	return (Datum) 0;
}
