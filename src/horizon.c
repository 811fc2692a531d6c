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
#include "pg_contention.h"

#include "access/transam.h"
#include "funcapi.h"
#include "replication/slot.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_horizon_holders);

#define HORIZON_COLS 10

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
	if (OidIsValid(slot->database))
		values[3] = ObjectIdGetDatum(slot->database);
	else
		nulls[3] = true;
	nulls[4] = true;			/* a slot has no role */
	values[5] = TransactionIdGetDatum(xmin);
	values[6] = BoolGetDatum(catalog_only);
	if (slot->active_pid == 0 && slot->inactive_since != 0)
		values[7] = TimestampTzGetDatum(slot->inactive_since);
	else
		nulls[7] = true;
	values[8] = CStringGetTextDatum(slot->active_pid != 0 ? "active" : "inactive");
	nulls[9] = true;
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
 * its xmin; backends running VACUUM or logical decoding are skipped, as
 * the server skips them when it computes the horizon.  The querying
 * backend is left out.
 */
Datum
pg_contention_horizon_holders(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcProcState *states;
	int			nstates;
	int			nbackends;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);
	states = pgc_collect_procs(&nstates);

	nbackends = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= nbackends; i++)
	{
		LocalPgBackendStatus *local = pgc_local_beentry(i);
		PgBackendStatus *be;
		PgcProcState *st;
		TransactionId xmin;
		bool		walsender;
		Datum		values[HORIZON_COLS] = {0};
		bool		nulls[HORIZON_COLS] = {0};

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (be->st_procpid == MyProcPid)
			continue;
		st = pgc_find_proc(states, nstates, be->st_procpid);
		if (st == NULL ||
			(st->status_flags & (PROC_IN_VACUUM | PROC_IN_LOGICAL_DECODING)) != 0)
			continue;
		xmin = st->xmin;
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
		if (OidIsValid(be->st_databaseid))
			values[3] = ObjectIdGetDatum(be->st_databaseid);
		else
			nulls[3] = true;
		if (OidIsValid(be->st_userid))
			values[4] = ObjectIdGetDatum(be->st_userid);
		else
			nulls[4] = true;
		values[5] = TransactionIdGetDatum(xmin);
		values[6] = BoolGetDatum(false);

		if (pgc_can_see_details(be->st_userid))
		{
			const char *state = pgc_backend_state_name(be->st_state);
			char	   *query = pgstat_clip_activity(be->st_activity_raw);
			TimestampTz since = walsender ? be->st_proc_start_timestamp :
				be->st_xact_start_timestamp;

			if (since != 0)
				values[7] = TimestampTzGetDatum(since);
			else
				nulls[7] = true;
			if (state)
				values[8] = CStringGetTextDatum(state);
			else
				nulls[8] = true;
			values[9] = CStringGetTextDatum(query);
			pfree(query);
		}
		else
		{
			nulls[7] = nulls[8] = true;
			values[9] = CStringGetTextDatum("<insufficient privilege>");
		}
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(states);

	add_slots(tupstore, tupdesc);
	return (Datum) 0;
}
