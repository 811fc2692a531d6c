/*-------------------------------------------------------------------------
 *
 * indexscan.c
 *		What each statement's index scans cost in dead or invisible
 *		entries: for every index a plan scans, the entries the index access
 *		method returned and the heap tuples found visible, per execution.
 *
 * The counting is the server's own: index_getnext_tid() counts every TID
 * returned (pg_stat_all_indexes.idx_tup_read) and index_fetch_heap() counts
 * only fetches that found a visible tuple (idx_tup_fetch), both into the
 * backend's pending statistics of the index relation.  At ExecutorStart
 * (after the plan is initialised) we note those two counters for each
 * index the plan scans; at ExecutorEnd (before it is shut down) the
 * differences are this execution's entries read and live tuples fetched,
 * and for a plain index scan their difference is the number of entries
 * whose heap tuple was dead or invisible.  The results go into the
 * statement's entry (statements.c).
 *
 * Owns no shared state.  Backend-local: a small array of the baselines of
 * the executors running now, each found by its QueryDesc.  A frame is
 * removed at its own ExecutorEnd, whatever the order executors end in
 * (cursors can be closed in any order); all frames are dropped at every
 * abort and at the end of every transaction, so a frame never outlives its
 * executor (an executor that fails skips ExecutorEnd, and its QueryDesc's
 * address can be reused).  No locks, no allocation.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"

typedef struct IndexBaseline
{
	Relation	rel;
	uint8		kind;
	int64		returned;
	int64		fetched;
} IndexBaseline;

/* Aligned to 256 bytes so that indexing the array is a shift, not a multiply. */
typedef struct ExecutorBaselines
{
	QueryDesc  *queryDesc;
	int			n;
	IndexBaseline nodes[PGC_INDEX_SLOTS];	/* further indexes are not counted */
} pg_attribute_aligned(256) ExecutorBaselines;

/* Executors running now that scan indexes; deeper ones are not counted. */
#define MAX_TRACKED_EXECUTORS 16

static ExecutorBaselines running[MAX_TRACKED_EXECUTORS];
static int	nrunning = 0;

static bool
collect_index_scans(PlanState *ps, void *context)
{
	ExecutorBaselines *b = (ExecutorBaselines *) context;
	Relation	rel;
	uint8		kind;

	if (ps == NULL)
		return false;

	/*
	 * Scan nodes are leaves (a bitmap index scan's parent walks it).  Most
	 * other nodes keep their children in lefttree/righttree and subplans
	 * in initPlan/subPlan; walk those directly.  The few with other child
	 * lists go through the server's generic walker.
	 */
	switch (nodeTag(ps))
	{
		case T_IndexScanState:
			rel = ((IndexScanState *) ps)->iss_RelationDesc;
			kind = PGC_SCAN_INDEX;
			break;
		case T_IndexOnlyScanState:
			rel = ((IndexOnlyScanState *) ps)->ioss_RelationDesc;
			kind = PGC_SCAN_INDEX_ONLY;
			break;
		case T_BitmapIndexScanState:
			rel = ((BitmapIndexScanState *) ps)->biss_RelationDesc;
			kind = PGC_SCAN_BITMAP;
			break;
		case T_AppendState:
		case T_MergeAppendState:
		case T_ModifyTableState:
		case T_BitmapAndState:
		case T_BitmapOrState:
		case T_SubqueryScanState:
		case T_CustomScanState:
			return planstate_tree_walker(ps, collect_index_scans, context);
		default:
			if (ps->initPlan != NIL || ps->subPlan != NIL)
				return planstate_tree_walker(ps, collect_index_scans, context);
			if (ps->righttree != NULL)
				(void) collect_index_scans(ps->righttree, context);
			return collect_index_scans(ps->lefttree, context);
	}

	if (rel != NULL)
	{
		int			i;

		/* An index scanned by two nodes has one set of counters. */
		for (i = 0; i < b->n; i++)
			if (b->nodes[i].rel == rel)
				break;
		if (i == b->n && b->n < PGC_INDEX_SLOTS)
		{
			b->nodes[b->n].rel = rel;
			b->nodes[b->n].kind = kind;
			pgc_attach_pending_stats(rel);
			b->nodes[b->n].returned = PGC_REL_TUPLES_RETURNED(rel);
			b->nodes[b->n].fetched = PGC_REL_TUPLES_FETCHED(rel);
			b->n++;
		}
	}

	/* An index scan can still carry subplans (in its quals). */
	if (ps->initPlan != NIL || ps->subPlan != NIL)
		return planstate_tree_walker(ps, collect_index_scans, context);
	return false;
}

/*
 * After standard_ExecutorStart: note the counters of every index the plan
 * scans.  (With EXPLAIN without ANALYZE the scan nodes have no relation
 * open, so nothing is noted.)
 */
void
pgc_index_scans_start(QueryDesc *queryDesc)
{
	ExecutorBaselines *b;

	if (queryDesc->planstate == NULL || nrunning >= MAX_TRACKED_EXECUTORS)
		return;
	b = &running[nrunning];
	b->n = 0;
	(void) collect_index_scans(queryDesc->planstate, b);
	if (b->n == 0)
		return;
	b->queryDesc = queryDesc;
	nrunning++;
}

/* Remove frame k from the middle (cursors closed out of order). */
static pg_noinline void
remove_frame(int k)
{
	memmove(&running[k], &running[k + 1],
			(nrunning - 1 - k) * sizeof(ExecutorBaselines));
	nrunning--;
}

/*
 * Before standard_ExecutorEnd: this execution's counts per index, into
 * deltas[] (PGC_INDEX_SLOTS entries).  Returns how many.
 */
int
pgc_index_scans_end(QueryDesc *queryDesc, PgcIndexDelta *deltas)
{
	ExecutorBaselines *b = NULL;
	int			n = 0;
	int			k;

	for (k = nrunning - 1; k >= 0; k--)
	{
		if (running[k].queryDesc == queryDesc)
		{
			b = &running[k];
			break;
		}
	}
	if (b == NULL)
		return 0;

	for (int i = 0; i < b->n; i++)
	{
		IndexBaseline *base = &b->nodes[i];
		int64		returned = PGC_REL_TUPLES_RETURNED(base->rel) - base->returned;
		int64		fetched = PGC_REL_TUPLES_FETCHED(base->rel) - base->fetched;

		/*
		 * Pending counters are flushed between transactions; a cursor
		 * kept open across that sees them go back.  Skip such a delta.
		 */
		if (returned < 0 || fetched < 0)
			continue;
		deltas[n].indexoid = RelationGetRelid(base->rel);
		deltas[n].kind = base->kind;
		deltas[n].returned = returned;
		deltas[n].fetched = fetched;
		n++;
	}

	/* Remove this executor's frame only: others may still be running. */
	if (likely(k == nrunning - 1))
		nrunning = k;
	else
		remove_frame(k);
	return n;
}

/*
 * Drop every baseline: called at every (sub)transaction abort and at the
 * end of a transaction (see hooks.c), so none outlives its executor.
 */
void
pgc_index_scans_forget(void)
{
	nrunning = 0;
}
