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
 * Owns no shared state.  Backend-local: the baselines of the executors
 * running now, allocated in each executor's query context and unlinked by
 * a reset callback of that context, so an executor that fails leaves
 * nothing behind.  No locks.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"
#include "utils/rel.h"

typedef struct IndexBaseline
{
	Relation	rel;
	uint8		kind;
	int64		returned;
	int64		fetched;
} IndexBaseline;

typedef struct ExecutorBaselines
{
	struct ExecutorBaselines *next;
	QueryDesc  *queryDesc;
	int			n;
	IndexBaseline nodes[PGC_INDEX_SLOTS];	/* further indexes are not counted */
	MemoryContextCallback unlink;
} ExecutorBaselines;

/* Executors running now that scan indexes, innermost first. */
static ExecutorBaselines *running = NULL;

static void
unlink_baselines(void *arg)
{
	ExecutorBaselines **link;

	for (link = &running; *link != NULL; link = &(*link)->next)
	{
		if (*link == (ExecutorBaselines *) arg)
		{
			*link = (*link)->next;
			return;
		}
	}
}

static bool
collect_index_scans(PlanState *ps, void *context)
{
	ExecutorBaselines *b = (ExecutorBaselines *) context;
	Relation	rel = NULL;
	uint8		kind = 0;

	if (ps == NULL)
		return false;
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
		default:
			break;
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
			b->nodes[b->n].returned = PGC_REL_TUPLES_RETURNED(rel);
			b->nodes[b->n].fetched = PGC_REL_TUPLES_FETCHED(rel);
			b->n++;
		}
	}
	return planstate_tree_walker(ps, collect_index_scans, context);
}

/*
 * After standard_ExecutorStart: note the counters of every index the plan
 * scans.  Nothing is allocated for plans without index scans.  (With
 * EXPLAIN without ANALYZE the scan nodes have no relation open.)
 */
void
pgc_index_scans_start(QueryDesc *queryDesc)
{
	ExecutorBaselines local;
	ExecutorBaselines *b;
	MemoryContext cxt;

	if (queryDesc->planstate == NULL || queryDesc->estate == NULL)
		return;
	local.n = 0;
	(void) collect_index_scans(queryDesc->planstate, &local);
	if (local.n == 0)
		return;

	cxt = queryDesc->estate->es_query_cxt;
	b = MemoryContextAlloc(cxt, sizeof(ExecutorBaselines));
	memcpy(b, &local, sizeof(ExecutorBaselines));
	b->queryDesc = queryDesc;
	b->unlink.func = unlink_baselines;
	b->unlink.arg = b;
	MemoryContextRegisterResetCallback(cxt, &b->unlink);
	b->next = running;
	running = b;
}

/*
 * Before standard_ExecutorEnd: this execution's counts per index, into
 * deltas[] (PGC_INDEX_SLOTS entries).  Returns how many.
 */
int
pgc_index_scans_end(QueryDesc *queryDesc, PgcIndexDelta *deltas)
{
	ExecutorBaselines *b;
	int			n = 0;

	for (b = running; b != NULL; b = b->next)
		if (b->queryDesc == queryDesc)
			break;
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
	return n;
}
