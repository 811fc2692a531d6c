/*-------------------------------------------------------------------------
 *
 * sampler_second.c
 *		The sampler's once-a-second figures: the Subtrans SLRU counters, the
 *		next-XID counter's advance and what of the lookups it cannot account
 *		for (the readers'), the cluster's xmin horizon age, and the closing
 *		of a one-second history bucket with them.  Called by sampler.c's
 *		tick, in the sampler worker only.
 *
 * Owns no shared state of its own: it writes the history ring and the
 * current bucket (sampler_store.h) under the sampler's lock, held
 * exclusively by the caller.  Its statics (the counters' last values, the
 * XIDs carried) are the worker's private memory.
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/sampler_store.h"
#include "workers.h"

#include "access/transam.h"
#include "pgstat.h"

static int64 last_subtrans_lookups = -1;
static int64 last_subtrans_reads = -1;
static uint64 last_next_xid = 0;	/* 0: not read yet */

/*
 * XIDs whose pg_subtrans parent records may still reach the Subtrans
 * counters, by the second they were assigned in, oldest first: see
 * readers_lookups().
 */
#define XID_CARRY_SECONDS 11
static int64 xid_carry[XID_CARRY_SECONDS];

/* Read the Subtrans SLRU counters; false if they cannot be read. */
bool
pgc_sampler_read_subtrans_counters(int64 *lookups, int64 *reads)
{
	PgStat_SLRUStats *slru;
	int			index = pgc_slru_index(PGC_SLRU_SUBTRANS_NAME);

	pgstat_clear_snapshot();
	slru = pgstat_fetch_slru();
	if (slru == NULL)
		return false;
	*lookups = slru[index].blocks_hit + slru[index].blocks_read;
	*reads = slru[index].blocks_read;
	return true;
}

/*
 * The next-XID counter, as a 64-bit number (0 is never a valid one: the
 * first normal XID is 3).  ReadNextFullTransactionId() is the same in
 * every supported version; on a hot standby the startup process advances
 * the counter past every XID that replay sees.
 */
uint64
pgc_sampler_read_next_xid(void)
{
	return U64FromFullTransactionId(ReadNextFullTransactionId());
}

/*
 * The Subtrans lookups of a second that the XIDs assigned cannot account
 * for: the readers' lookups.
 *
 * Subtrans hits and reads count two things.  Readers: snapshots that are
 * suboverflowed (XidInMVCCSnapshot), TransactionIdIsInProgress past an
 * overflowed cache, XactLockTableWait on a subtransaction's XID, all via
 * SubTransGetParent.  Writers: every subtransaction that gets an XID
 * records its parent (AssignTransactionId -> SubTransSetParent ->
 * SimpleLruReadPage, a hit or a read), exactly once; a top-level XID
 * records nothing; on a standby, replay records the parents of the
 * subtransactions an XLOG_XACT_ASSIGNMENT lists
 * (ProcArrayApplyXidAssignment), each of which replay has advanced the
 * next-XID counter past.  So the XIDs assigned in a second bound the
 * parent records written in it, and lookups - XIDs bounds the readers'
 * lookups from below.
 *
 * The counters arrive late: a backend publishes its SLRU counts when it
 * flushes its statistics, at most once a second and only between
 * transactions (PG15+; the collector's 500 ms before), and an idle one up
 * to 10 s later.  XIDs that found no parent record in their own second are
 * therefore carried, and match the lookups of the next 10 seconds, oldest
 * first; each XID is subtracted at most once, so over any span the
 * readers' figure is at least the lookups less the XIDs assigned in it and
 * in the 10 seconds before it.  It can be too low by the top-level XIDs'
 * share (they write no record), and too high by parent records published
 * more than 10 s late.
 */
static int64
readers_lookups(int64 lookups, int64 xids)
{
	int64		left = lookups;

	memmove(xid_carry, xid_carry + 1, (XID_CARRY_SECONDS - 1) * sizeof(int64));
	xid_carry[XID_CARRY_SECONDS - 1] = xids;
	for (int i = 0; i < XID_CARRY_SECONDS && left > 0; i++)
	{
		int64		matched = Min(left, xid_carry[i]);

		xid_carry[i] -= matched;
		left -= matched;
	}
	return left;
}

/*
 * Close the current bucket: add the SLRU and next-XID deltas, store it in
 * the ring, and start the next at "second".  Caller holds the lock
 * exclusively; the counters were read before taking it.
 */
void
pgc_sampler_close_bucket(TimestampTz second, bool slru_ok, int64 lookups, int64 reads,
			 uint64 next_xid, int64 lock_ops, int64 horizon_xid_age)
{
	PgcHistoryBucket *cur = &pgc_sampler->current;

	if (cur->bucket_start != 0 && cur->ticks > 0)
	{
		if (cur->oldsnap.active)
		{
			PgcOldSnapFigures ops = {0};

			cur->oldsnap.lock_op_estimate = lock_ops;
			ops.lock_op_estimate = lock_ops;
			pgc_oldsnap_add_to_total(&ops);
		}
		if (slru_ok && last_subtrans_lookups >= 0)
		{
			/* Counters can go back on pg_stat_reset_slru(). */
			cur->subtrans_lookups = Max(lookups - last_subtrans_lookups, 0);
			cur->subtrans_reads = Max(reads - last_subtrans_reads, 0);
			cur->slru_known = true;
		}
		if (last_next_xid != 0 && next_xid >= last_next_xid)
		{
			cur->xids_assigned = (int64) (next_xid - last_next_xid);
			cur->xids_known = true;
			/* Unknown lookups match nothing: the next delta covers them. */
			cur->subtrans_reader_lookups =
				readers_lookups(cur->slru_known ? cur->subtrans_lookups : 0,
								cur->xids_assigned);
		}
		cur->horizon_xid_age = horizon_xid_age;
		pgc_history[pgc_sampler->status.buckets_written % pgc_history_seconds] = *cur;
		pgc_sampler->status.buckets_written++;
	}
	if (slru_ok)
	{
		last_subtrans_lookups = lookups;
		last_subtrans_reads = reads;
	}
	last_next_xid = next_xid;
	memset(cur, 0, sizeof(PgcHistoryBucket));
	cur->bucket_start = second;
}

/*
 * How many XIDs old the cluster's xmin horizon is (compat.h says what it
 * covers), once a second: the same computation as one vacuum's, with
 * ProcArrayLock in shared mode for one pass over the proc array.  0 when
 * nothing holds it back; -1 when it cannot be computed (no normal XID).
 */
int64
pgc_sampler_read_horizon_xid_age(void)
{
	TransactionId horizon = pgc_cluster_xmin_horizon();
	TransactionId next = pgc_next_xid();

	if (!TransactionIdIsNormal(horizon) || !TransactionIdIsNormal(next))
		return -1;
	/* Modulo-2^32 distance, as age() computes it. */
	return Max((int64) (int32) (next - horizon), 0);
}
