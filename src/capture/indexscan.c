/*-------------------------------------------------------------------------
 *
 * indexscan.c
 *		The executors running now, and what each one's index scans cost in
 *		dead or invisible entries: for every index a plan scans, the
 *		entries the index access method returned and the heap tuples found
 *		visible, per execution.
 *
 * The counting is the server's own: index_getnext_tid() and
 * index_getbitmap() count every TID returned (idx_tup_read), and
 * index_fetch_heap() counts only fetches that found a visible tuple
 * (idx_tup_fetch), both into the backend's pending statistics of the index
 * relation; a bitmap heap scan counts each visible tuple it returns into
 * the heap relation's.  At ExecutorStart (after the plan is initialised)
 * we note those counters for each index the plan scans; at ExecutorEnd
 * (before it is shut down) the differences are this execution's entries
 * read and live tuples fetched, and their difference the entries whose
 * heap tuple was dead or invisible.  For a bitmap heap scan the heap
 * side is attributed to its index only when it is the plan's one bitmap
 * heap scan of that table, fed by a single bitmap index scan (no
 * BitmapAnd/Or) and not parallel; on lossy pages it counts every visible
 * tuple of the page, so there the dead figure is a lower bound, and the
 * lossy pages are reported.
 *
 * An index-only scan fetches the heap only for entries on pages not
 * all-visible and counts those fetches only in its node's
 * instrumentation (which an uninstrumented node is given at
 * ExecutorStart, see index_only_fetches): its dead entries are those
 * fetches less the visible tuples they found.
 *
 * Counters are per relation, shared by every executor of the backend, so
 * an execution would also see the reads of executors that ran while it
 * was open: a function's statements inside it, another statement between
 * a cursor's fetches.  So when an execution ends, what it read is added
 * to the baselines of every other open execution on the same relations:
 * each counts its own reads only.
 *
 * The client's statement's buffers are counted the same way: the
 * backend's buffer usage (pgBufferUsage, which the server also adds its
 * parallel workers' to) at ExecutorStart and ExecutorEnd, less what other
 * client statements used in between (a cursor's or a suspended portal's
 * neighbours).
 *
 * Owns no shared state.  Backend-local: a small array of frames, one per
 * executor running now that is the client's statement or scans an index,
 * each found by its QueryDesc, with the query id it runs under (a
 * cursor's plan carries none: see hooks.c).  A frame is removed at its
 * own ExecutorEnd, whatever the order executors end in (cursors can be
 * closed in any order); all frames are dropped at every abort and at the
 * end of every transaction, so a frame never outlives its executor (an
 * executor that fails skips ExecutorEnd, and its QueryDesc's address can
 * be reused).  No locks, no allocation.
 *
 *-------------------------------------------------------------------------
 */
#include "capture.h"

#include "executor/instrument.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"

typedef struct IndexBaseline
{
	Relation	rel;			/* the index */
	Relation	heap;			/* bitmap: the heap its fetches count in */

	/*
	 * The node read again at the end, NULL for most: a bitmap heap scan
	 * (with heap: its lossy pages), or an index-only scan (its heap
	 * fetches, in ios_fetches at the start).
	 */
	PlanState  *node;
	int64		returned;		/* the index's tuples returned */
	int64		fetched;		/* tuples fetched: the heap's, else the index's */
	int64		ios_fetches;	/* index-only: its node's heap fetches */
	uint8		kind;
} IndexBaseline;

/* Aligned to a power of two so that indexing the array is a shift. */
typedef struct ExecutorFrame
{
	QueryDesc  *queryDesc;
	int64		query_id;
	bool		top_level;
	int			n;
	int64		blks_hit;		/* top level: the backend's buffer usage */
	int64		blks_read;
	int64		rows;			/* before PG16: its runs' rows but the last */
	IndexBaseline nodes[PGC_INDEX_SLOTS];	/* further indexes are not counted */
} pg_attribute_aligned(512) ExecutorFrame;

/* Executors running now; deeper ones are not counted. */
#define MAX_TRACKED_EXECUTORS 16

static ExecutorFrame running[MAX_TRACKED_EXECUTORS];
static int	nrunning = 0;

/* The relation whose tuples_fetched a baseline reads. */
static inline Relation
fetch_source(const IndexBaseline *b)
{
	return b->heap != NULL ? b->heap : b->rel;
}

/*
 * A bitmap baseline's heap turns out to be shared: its fetches are read
 * from the index instead (nothing has run since they were noted).
 */
static pg_noinline void
unattribute_heap(IndexBaseline *b)
{
	b->node = NULL;				/* an index-only scan's too: not measured */
	if (b->heap == NULL)
		return;
	b->heap = NULL;
	b->fetched = PGC_REL_TUPLES_FETCHED(b->rel);
}

/*
 * An index-only scan counts the heap fetches it makes for pages not
 * all-visible only into its node's instrumentation (EXPLAIN ANALYZE's
 * "Heap Fetches"), and the index's statistics count only those that found
 * a visible tuple: their difference is its dead or invisible entries.
 * Without instrumentation (not EXPLAIN ANALYZE, not auto_explain), give
 * the node a record that counts and times nothing, in the query's memory:
 * the server then runs the node through ExecProcNodeInstr, a few
 * instructions per tuple, for index-only scans only.  Called after the
 * plan is initialised and before it runs, when the node's first call has
 * not yet chosen its ExecProcNode.  Returns the fetches counted so far.
 */
static pg_noinline int64
index_only_fetches(PlanState *node)
{
	if (node->instrument == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(node->state->es_query_cxt);

		node->instrument = PGC_INSTR_ALLOC_COUNTS_ONLY();
		MemoryContextSwitchTo(old);
	}
	return (int64) node->instrument->ntuples2;
}

/*
 * Note an index the plan scans, with its counters as they are now (after
 * the plan's initialisation, before it runs).
 */
static pg_attribute_always_inline void
note_index(ExecutorFrame *f, Relation rel, uint8 kind, Relation heap,
		   PlanState *node)
{
	IndexBaseline *b;
	int			i;

	if (rel == NULL)
		return;

	/*
	 * An index scanned by two nodes has one set of counters: if the nodes
	 * differ, entries and fetches no longer pair up, and only the entries
	 * are counted.  Two bitmap heap scans of one table share its counter:
	 * neither is attributed.
	 */
	for (i = 0; i < f->n; i++)
	{
		b = &f->nodes[i];
		if (b->rel == rel)
		{
			/* Two index-only nodes: one's heap fetches, both's entries. */
			if (b->kind != kind || b->node != NULL)
			{
				if (b->kind != kind)
					b->kind = PGC_SCAN_MIXED;
				unattribute_heap(b);
			}
			return;
		}
		if (heap != NULL && b->heap == heap)
		{
			unattribute_heap(b);
			heap = NULL;
			node = NULL;
		}
	}
	if (f->n >= PGC_INDEX_SLOTS)
		return;

	/* Its counters now: the plan is initialised, nothing has run yet. */
	b = &f->nodes[f->n++];
	b->rel = rel;
	b->kind = kind;
	b->heap = heap;
	b->node = node;
	if (unlikely(kind == PGC_SCAN_INDEX_ONLY))
		b->ios_fetches = index_only_fetches(node);
	pgc_attach_pending_stats(rel);
	b->returned = PGC_REL_TUPLES_RETURNED(rel);
	if (likely(heap == NULL))
		b->fetched = PGC_REL_TUPLES_FETCHED(rel);
	else
	{
		pgc_attach_pending_stats(heap);
		b->fetched = PGC_REL_TUPLES_FETCHED(heap);
	}
}

static bool
collect_index_scans(PlanState *ps, void *context)
{
	ExecutorFrame *f = (ExecutorFrame *) context;

	if (ps == NULL)
		return false;

	/*
	 * Scan nodes are leaves (a bitmap heap scan's child is walked here).
	 * Most other nodes keep their children in lefttree/righttree and
	 * subplans in initPlan/subPlan; walk those directly.  The few with
	 * other child lists go through the server's generic walker.
	 */
	switch (nodeTag(ps))
	{
		case T_IndexScanState:
			note_index(f, ((IndexScanState *) ps)->iss_RelationDesc,
					   PGC_SCAN_INDEX, NULL, NULL);
			break;
		case T_IndexOnlyScanState:
			note_index(f, ((IndexOnlyScanState *) ps)->ioss_RelationDesc,
					   PGC_SCAN_INDEX_ONLY, NULL, ps);
			break;
		case T_BitmapIndexScanState:
			note_index(f, ((BitmapIndexScanState *) ps)->biss_RelationDesc,
					   PGC_SCAN_BITMAP, NULL, NULL);
			break;
		case T_BitmapHeapScanState:
			{
				PlanState  *child = outerPlanState(ps);

				/* One index feeds it, in this process: attribute the heap. */
				if (child != NULL && IsA(child, BitmapIndexScanState) &&
					!ps->plan->parallel_aware)
				{
					note_index(f, ((BitmapIndexScanState *) child)->biss_RelationDesc,
							   PGC_SCAN_BITMAP,
							   ((ScanState *) ps)->ss_currentRelation, ps);
					if (child->initPlan != NIL || child->subPlan != NIL)
						(void) planstate_tree_walker(child, collect_index_scans, context);
				}
				else
					(void) collect_index_scans(child, context);
				break;
			}
		case T_AppendState:
		case T_MergeAppendState:
		case T_BitmapAndState:
		case T_BitmapOrState:
		case T_SubqueryScanState:
		case T_CustomScanState:
			return planstate_tree_walker(ps, collect_index_scans, context);
		case T_ModifyTableState:
			if (PGC_MODIFY_TABLE_HAS_PLAN_LIST)
				return planstate_tree_walker(ps, collect_index_scans, context);
			/* FALLTHROUGH */
		default:
			if (ps->initPlan != NIL || ps->subPlan != NIL)
				return planstate_tree_walker(ps, collect_index_scans, context);
			if (ps->righttree != NULL)
				(void) collect_index_scans(ps->righttree, context);
			return collect_index_scans(ps->lefttree, context);
	}

	/* A scan node can still carry subplans (in its quals). */
	if (ps->initPlan != NIL || ps->subPlan != NIL)
		return planstate_tree_walker(ps, collect_index_scans, context);
	return false;
}

/*
 * After standard_ExecutorStart: open a frame for the client's statement
 * (top_level) or for any executor that scans an index, noting the
 * counters of every index the plan scans.  (With EXPLAIN without ANALYZE
 * the scan nodes have no relation open, so nothing is noted.)
 */
void
pgc_index_scans_start(QueryDesc *queryDesc, int64 query_id, bool top_level)
{
	ExecutorFrame *f;

	if (nrunning >= MAX_TRACKED_EXECUTORS)
		return;
	f = &running[nrunning];
	f->n = 0;
	if (queryDesc->planstate != NULL)
		(void) collect_index_scans(queryDesc->planstate, f);
	if (f->n == 0 && !top_level)
		return;
	f->queryDesc = queryDesc;
	f->query_id = query_id;
	f->top_level = top_level;
	f->blks_hit = pgBufferUsage.shared_blks_hit;
	f->blks_read = pgBufferUsage.shared_blks_read;
	f->rows = 0;
	nrunning++;
}

/*
 * What an execution that just ended read is not another's: add it to the
 * baselines of every other open frame on the same relations, and, for the
 * client's statement, its buffers to the other client statements' (a
 * cursor's, a suspended portal's: client statements never nest).
 */
static pg_noinline void
exclude_from_others(const ExecutorFrame *ended, const PgcIndexDelta *deltas,
					const PgcExecution *exec)
{
	for (int j = 0; j < nrunning; j++)
	{
		ExecutorFrame *other = &running[j];

		if (other == ended)
			continue;
		if (ended->top_level && other->top_level)
		{
			other->blks_hit += exec->shared_blks_hit;
			other->blks_read += exec->shared_blks_read;
		}
		for (int m = 0; m < other->n; m++)
		{
			IndexBaseline *o = &other->nodes[m];

			for (int i = 0; i < ended->n; i++)
			{
				const IndexBaseline *b = &ended->nodes[i];

				if (deltas[i].indexoid == InvalidOid)
					continue;	/* not measured */
				if (o->rel == b->rel)
					o->returned += deltas[i].returned;
				if (fetch_source(o) == fetch_source(b))
					o->fetched += deltas[i].fetched;
			}
		}
	}
}

/* Remove frame k from the middle (cursors closed out of order). */
static pg_noinline void
remove_frame(int k)
{
	memmove(&running[k], &running[k + 1],
			(nrunning - 1 - k) * sizeof(ExecutorFrame));
	nrunning--;
}

/*
 * Before standard_ExecutorEnd: this execution's counts per index, into
 * exec->deltas (an entry per baseline, InvalidOid where not measured),
 * and the query id and level its frame was opened with.
 * Returns false if the execution has no frame.
 */
bool
pgc_index_scans_end(QueryDesc *queryDesc, int64 *query_id, PgcExecution *exec)
{
	ExecutorFrame *f = NULL;
	int			k;
	int64		max_dead = 0;

	for (k = nrunning - 1; k >= 0; k--)
	{
		if (running[k].queryDesc == queryDesc)
		{
			f = &running[k];
			break;
		}
	}
	if (f == NULL)
		return false;

	*query_id = f->query_id;
	if (f->top_level)
	{
		exec->flags |= PGC_COUNT_TOP_LEVEL;
		exec->shared_blks_hit = pgBufferUsage.shared_blks_hit - f->blks_hit;
		exec->shared_blks_read = pgBufferUsage.shared_blks_read - f->blks_read;
		exec->rows = queryDesc->estate != NULL ?
			PGC_EXECUTION_ROWS(queryDesc->estate, f->rows) : 0;
	}

	/* One delta per baseline, in order; InvalidOid where not measured. */
	for (int i = 0; i < f->n; i++)
	{
		IndexBaseline *base = &f->nodes[i];
		PgcIndexDelta *d = &exec->deltas[i];

		d->returned = PGC_REL_TUPLES_RETURNED(base->rel) - base->returned;
		d->fetched = PGC_REL_TUPLES_FETCHED(fetch_source(base)) - base->fetched;
		d->lossy_pages = 0;
		d->heap_measured = false;

		/*
		 * Pending counters are flushed between transactions; a cursor
		 * kept open across that sees them go back.  Skip such a delta.
		 */
		if (unlikely(d->returned < 0 || d->fetched < 0))
		{
			d->indexoid = InvalidOid;
			continue;
		}
		d->indexoid = RelationGetRelid(base->rel);
		d->kind = base->kind;
		d->dead = d->returned - d->fetched;
		if (unlikely(base->node != NULL))
		{
			d->heap_measured = true;
			if (base->kind == PGC_SCAN_INDEX_ONLY)
				d->dead = (int64) base->node->instrument->ntuples2 -
					base->ios_fetches - d->fetched;
			else
				d->lossy_pages = PGC_BITMAP_LOSSY_PAGES((BitmapHeapScanState *) base->node);
		}
		/* The dead entries statements.c will count (measured deltas only). */
		if (d->kind == PGC_SCAN_INDEX || d->heap_measured)
			max_dead = Max(max_dead, d->dead);
	}
	exec->max_dead = max_dead;
	exec->ndeltas = f->n;

	if (unlikely(nrunning > 1))
		exclude_from_others(f, exec->deltas, exec);

	/* Remove this executor's frame only: others may still be running. */
	if (likely(k == nrunning - 1))
		nrunning = k;
	else
		remove_frame(k);
	return true;
}

/*
 * Before each ExecutorRun but the first, before PG16 (hooks.c): add the
 * previous run's rows, still in es_processed, to the client statement's
 * frame, most often the newest one.  (An executor has its estate from
 * ExecutorStart to ExecutorEnd.)
 */
void
pgc_index_scans_ran(QueryDesc *queryDesc)
{
	for (int k = nrunning - 1; k >= 0; k--)
	{
		if (running[k].queryDesc == queryDesc)
		{
			if (running[k].top_level)
				running[k].rows += (int64) queryDesc->estate->es_processed;
			return;
		}
	}
}

/*
 * Drop every frame: called at every (sub)transaction abort and at the end
 * of a transaction (see hooks.c), so none outlives its executor.
 */
void
pgc_index_scans_forget(void)
{
	nrunning = 0;
}

/*
 * An execution met at least dead_visits_warning dead entries through some
 * index (hooks.c): have those indexes named for readers in other
 * databases (stores/index_names.c), while the execution still has them
 * open.
 */
void
pgc_note_dead_index_names(const PgcExecution *exec)
{
	for (int d = 0; d < exec->ndeltas; d++)
	{
		const PgcIndexDelta *delta = &exec->deltas[d];

		if (delta->indexoid != InvalidOid &&
			(delta->kind == PGC_SCAN_INDEX || delta->heap_measured) &&
			delta->dead >= pgc_dead_visits_warning)
			pgc_index_names_note(delta->indexoid, delta->dead);
	}
}
