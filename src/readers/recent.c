/*-------------------------------------------------------------------------
 *
 * recent.c
 *		pg_contention_recent(): each statement's figures in the findings'
 *		window (the current and previous periods of
 *		pg_contention.findings_window), per application and summed, with
 *		each index's worst execution, for the findings and the client.
 *
 * Owns no shared state.  It reads copies of the entries that can give a
 * row (stores/statements_copy.c); the rows are kept for the rest of the
 * client's statement (rowcache.c).
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/statements.h"
#include "readers.h"

#include <ctype.h>

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(pg_contention_recent);

/*
 * pg_contention_recent(window_seconds, notable_only, by_application,
 * statement_rows, index_rows): what
 * each statement did in the periods that reach into the last window_seconds (the current
 * period of pg_contention.findings_window and the previous one;
 * period_start and period_end say what the figures cover): one row per
 * statement with indexrelid NULL, then one per index it scanned with the
 * scan figures.  The findings read the statement store through this
 * function, once, with notable_only: only statements that ran on a
 * suboverflowed snapshot, came near an overflow, caused one, or are
 * SAVEPOINTs, and only indexes whose scans met dead entries.  A busy
 * server's thousands of other statements then cost a copy, not rows.
 * A statement's entries of several applications are summed into one row
 * (application_name NULL when they are more than one), unless
 * by_application (new in 1.4): then a row per application, as the store
 * keeps them (who pays, pg_contention_victims).  statement_rows and
 * index_rows (new in 1.4) say which rows to give: a rule reads one kind.
 */
/*
 * The rows of pg_contention_recent, kept for the rest of the client's
 * statement: the findings' rules each read the statement store, and one
 * copy of a full store costs milliseconds (pgstat's stats_fetch_consistency
 * = cache does the same for the statistics).  Keyed by what changes the
 * rows; the memory is a child of TopTransactionContext, so the end of the
 * transaction frees it and its reset callback forgets it.
 */
typedef struct RecentCacheKey
{
	TimestampTz statement_start;	/* the client's statement */
	Oid			userid;			/* the texts' visibility */
	int32		window_seconds;
	bool		notable_only;
	bool		by_application;
	int			natts;
} RecentCacheKey;

typedef struct RecentCache
{
	MemoryContext cxt;
	MemoryContextCallback callback;
	RecentCacheKey key;
	List	   *rows;			/* HeapTuples, in cxt */
} RecentCache;

/*
 * Two: the rules' read (a row per statement) and who pays (a row per
 * application) alternate within one pg_contention_findings(); with
 * notable_only both are built from one copy of the store.
 */
static RecentCache recent_caches[2];

/* Where build_recent_rows puts its rows. */
static MemoryContext recent_cxt = NULL;
static List *recent_rows = NIL;

/* New in 1.1. */
static const PgcResultColumn recent_columns[] = {
	{"userid", OIDOID, PGC_SQL_V(1, 1)},
	{"dbid", OIDOID, PGC_SQL_V(1, 1)},
	{"query_id", INT8OID, PGC_SQL_V(1, 1)},
	{"indexrelid", OIDOID, PGC_SQL_V(1, 1)},
	{"period_start", TIMESTAMPTZOID, PGC_SQL_V(1, 1)},
	{"period_end", TIMESTAMPTZOID, PGC_SQL_V(1, 1)},
	{"calls", INT8OID, PGC_SQL_V(1, 1)},
	{"suboverflowed_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"near_overflow_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"overflow_events", INT8OID, PGC_SQL_V(1, 1)},
	{"max_subxacts", INT4OID, PGC_SQL_V(1, 1)},
	{"top_level_calls", INT8OID, PGC_SQL_V(1, 1)},
	{"shared_blks", INT8OID, PGC_SQL_V(1, 1)},
	{"scans", INT8OID, PGC_SQL_V(1, 1)},
	{"entries_read", INT8OID, PGC_SQL_V(1, 1)},
	{"dead_visits", INT8OID, PGC_SQL_V(1, 1)},
	{"query", TEXTOID, PGC_SQL_V(1, 1)},
	{"worst_dead_visits", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_entries_read", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_buffers", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_rows", INT8OID, PGC_SQL_V(1, 4)},
	{"worst_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"last_dead_visits", INT8OID, PGC_SQL_V(1, 4)},
	{"last_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"bad_scans", INT8OID, PGC_SQL_V(1, 4)},
	{"bad_dead_visits", INT8OID, PGC_SQL_V(1, 4)},
	{"last_bad_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"clean_since", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"worst_literals", TEXTOID, PGC_SQL_V(1, 4)},
	{"application_name", TEXTOID, PGC_SQL_V(1, 4)},
	{"worst_caller_query_id", INT8OID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape recent_shape = {
	"pg_contention_recent", recent_columns, lengthof(recent_columns)
};

#define RECENT_COLS lengthof(recent_columns)
/* NULL in a statement's row, the index in an index's */
#define RECENT_INDEXRELID_ATTNUM 4


/*
 * What every sum of one index's executions shares: the worst of the worst,
 * the latest last, the bad ones summed.
 */
static void
add_scan_figures(PgcPeriodScan *into, const PgcPeriodScan *from)
{
	if (into->worst_at == 0 || from->worst_dead > into->worst_dead)
	{
		into->worst_dead = from->worst_dead;
		into->worst_entries = from->worst_entries;
		into->worst_blks = from->worst_blks;
		into->worst_rows = from->worst_rows;
		into->worst_at = from->worst_at;
		into->worst_caller = from->worst_caller;
	}
	if (from->last_at >= into->last_at)
	{
		into->last_dead = from->last_dead;
		into->last_at = from->last_at;
	}
	into->bad_scans += from->bad_scans;
	into->bad_dead += from->bad_dead;
}

/*
 * Add one index's executions of a period to a sum of periods; the periods
 * are added in order, the previous one first.
 */
static void
add_period_scan(PgcPeriodScan *into, const PgcPeriodScan *from)
{
	if (from->worst_at == 0)
		return;					/* no execution */
	add_scan_figures(into, from);
	/* from is the later period: a bad execution there starts it over. */
	if (from->last_bad_at != 0 || into->clean_since == 0)
		into->clean_since = from->clean_since;
	into->last_bad_at = Max(into->last_bad_at, from->last_bad_at);
}

/* Add period "from" to the sum "into" (whose start is the earliest). */
static void
add_period(PgcPeriod *into, const PgcPeriod *from)
{
	if (into->start == 0 || from->start < into->start)
		into->start = from->start;
	into->end = Max(into->end, from->end);
	into->calls += from->calls;
	into->suboverflowed_calls += from->suboverflowed_calls;
	into->near_overflow_calls += from->near_overflow_calls;
	into->overflow_events += from->overflow_events;
	into->max_subxacts = Max(into->max_subxacts, from->max_subxacts);
	into->top_level_calls += from->top_level_calls;
	into->shared_blks += from->shared_blks;
	for (int k = 0; k < PGC_INDEX_SLOTS; k++)
	{
		into->index_scans[k] += from->index_scans[k];
		into->index_entries[k] += from->index_entries[k];
		into->index_dead[k] += from->index_dead[k];
		add_period_scan(&into->index_exec[k], &from->index_exec[k]);
	}
	if (from->literals[0] != '\0' && from->literals_dead > into->literals_dead)
	{
		into->literals_dead = from->literals_dead;
		memcpy(into->literals, from->literals, PGC_LITERALS_LEN);
	}
}

static void
recent_cache_gone(void *arg)
{
	RecentCache *cache = (RecentCache *) arg;

	cache->cxt = NULL;
	cache->rows = NIL;
}


/* One index's executions in the periods: columns col to col + 10. */
static void
put_period_scan(const PgcPeriodScan *ps, Datum *values, bool *nulls, int col)
{
	values[col] = Int64GetDatum(ps->worst_dead);
	nulls[col] = false;
	values[col + 1] = Int64GetDatum(ps->worst_entries);
	nulls[col + 1] = false;
	values[col + 2] = Int64GetDatum(ps->worst_blks);
	nulls[col + 2] = ps->worst_blks < 0;
	values[col + 3] = Int64GetDatum(ps->worst_rows);
	nulls[col + 3] = ps->worst_rows < 0;
	values[col + 4] = TimestampTzGetDatum(ps->worst_at);
	nulls[col + 4] = false;
	values[col + 5] = Int64GetDatum(ps->last_dead);
	nulls[col + 5] = false;
	values[col + 6] = TimestampTzGetDatum(ps->last_at);
	nulls[col + 6] = false;
	values[col + 7] = Int64GetDatum(ps->bad_scans);
	nulls[col + 7] = false;
	values[col + 8] = Int64GetDatum(ps->bad_dead);
	nulls[col + 8] = false;
	values[col + 9] = TimestampTzGetDatum(ps->last_bad_at);
	nulls[col + 9] = ps->last_bad_at == 0;
	values[col + 10] = TimestampTzGetDatum(ps->clean_since);
	nulls[col + 10] = ps->clean_since == 0;
}

/* Order entries by statement (database, user, query id), to sum them. */
static int
compare_statements(const void *a, const void *b)
{
	return compare_statement_keys(&(*(PgcStatementEntry *const *) a)->key,
								  &(*(PgcStatementEntry *const *) b)->key);
}

static bool
same_statement(const PgcStatementEntry *a, const PgcStatementEntry *b)
{
	return a->key.dbid == b->key.dbid && a->key.userid == b->key.userid &&
		a->key.query_id == b->key.query_id;
}

/* One index's window figures, summed over a statement's entries. */
typedef struct RecentIndex
{
	Oid			indexoid;
	int64		scans;
	int64		entries;
	int64		dead;
	PgcPeriodScan exec;			/* the executions, combined by add_app_scan */
} RecentIndex;

/*
 * Combine one application's executions of an index (its periods already
 * added) into a statement's: the worst of the worst, the latest last, the
 * bad ones summed, and clean_since of the one whose bad execution is the
 * latest (the earliest clean start when none was bad).
 */
static void
add_app_scan(PgcPeriodScan *into, const PgcPeriodScan *from)
{
	if (from->worst_at == 0)
		return;					/* no execution */
	add_scan_figures(into, from);
	if (from->last_bad_at > into->last_bad_at)
	{
		into->last_bad_at = from->last_bad_at;
		into->clean_since = from->clean_since;
	}
	else if (from->last_bad_at == 0 && into->last_bad_at == 0 &&
			 from->clean_since != 0 &&
			 (into->clean_since == 0 || from->clean_since < into->clean_since))
		into->clean_since = from->clean_since;
}

/* Build the rows of one copy of the store into recent_rows. */
static void
build_recent_rows(TupleDesc tupdesc, char *copy, long n, TimestampTz cutoff,
				  bool notable_only, bool by_application)
{
	PgcStatementEntry **order;
	Size		size = entry_size();
	MemoryContext oldcontext;
	long		next;

	order = palloc_extended(Max(n, 1) * sizeof(PgcStatementEntry *), MCXT_ALLOC_HUGE);
	if (notable_only)
	{
		/*
		 * Only the entries that can give a row, found by a look at their
		 * periods (most of a busy server's give none: summing them cost
		 * milliseconds), and the other applications' entries of the same
		 * statements (their figures are part of the statement's sums).
		 */
		bool	   *keep = palloc_extended(Max(n, 1), MCXT_ALLOC_HUGE);
		long		nkept = 0;

		for (long i = 0; i < n; i++)
		{
			PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);

			keep[i] = entry_is_notable(e, cutoff);
			if (keep[i])
				order[nkept++] = e;
		}
		if (!by_application && nkept > 0)
		{
			long		nnotable = nkept;

			qsort(order, nnotable, sizeof(PgcStatementEntry *), compare_statements);
			for (long i = 0; i < n; i++)
			{
				PgcStatementEntry *e = (PgcStatementEntry *) (copy + i * size);

				if (!keep[i] &&
					bsearch(&e, order, nnotable, sizeof(PgcStatementEntry *),
							compare_statements) != NULL)
					order[nkept++] = e;
			}
		}
		pfree(keep);
		n = nkept;
	}
	else
	{
		for (long i = 0; i < n; i++)
			order[i] = (PgcStatementEntry *) (copy + i * size);
	}
	if (!by_application)
		qsort(order, n, sizeof(PgcStatementEntry *), compare_statements);

	for (long i = 0; i < n; i = next)
	{
		PgcStatementEntry *e = order[i];
		PgcPeriod	sum;
		RecentIndex *indexes;
		int			nindexes = 0;
		const char *app = NULL;
		bool		several_apps = false;
		Datum		values[RECENT_COLS] = {0};
		bool		nulls[RECENT_COLS] = {0};
		bool		visible;
		bool		notable;

		/* The statement's entries: one, or one per application. */
		next = i + 1;
		if (!by_application)
			while (next < n && same_statement(order[next], e))
				next++;
		indexes = palloc((next - i) * PGC_INDEX_SLOTS * sizeof(RecentIndex));
		memset(&sum, 0, sizeof(sum));
		for (long g = i; g < next; g++)
		{
			PgcStatementEntry *m = order[g];
			PgcPeriod	part;

			memset(&part, 0, sizeof(part));
			if (m->previous.start != 0 && m->previous.end >= cutoff)
				add_period(&part, &m->previous);
			if (m->current.start != 0 && m->current.end >= cutoff)
				add_period(&part, &m->current);
			if (part.start == 0)
				continue;
			add_period(&sum, &part);	/* its index figures unused: slots differ */
			if (app == NULL)
				app = m->application_name;
			else if (strcmp(app, m->application_name) != 0)
				several_apps = true;
			for (int k = 0; k < PGC_INDEX_SLOTS; k++)
			{
				int			x;

				if (m->indexes[k].indexoid == InvalidOid || part.index_scans[k] == 0)
					continue;
				for (x = 0; x < nindexes; x++)
					if (indexes[x].indexoid == m->indexes[k].indexoid)
						break;
				if (x == nindexes)
				{
					memset(&indexes[x], 0, sizeof(RecentIndex));
					indexes[x].indexoid = m->indexes[k].indexoid;
					nindexes++;
				}
				indexes[x].scans += part.index_scans[k];
				indexes[x].entries += part.index_entries[k];
				indexes[x].dead += part.index_dead[k];
				add_app_scan(&indexes[x].exec, &part.index_exec[k]);
			}
		}
		if (sum.start == 0)
		{
			pfree(indexes);
			continue;
		}

		notable = !notable_only ||
			sum.suboverflowed_calls > 0 || sum.near_overflow_calls > 0 ||
			sum.overflow_events > 0 || is_savepoint_text(e->query);
		if (!notable)
		{
			int			x;

			for (x = 0; x < nindexes; x++)
				if (indexes[x].dead > 0)
					break;
			if (x == nindexes)
			{
				pfree(indexes);
				continue;		/* no row: its text is not even copied */
			}
		}
		visible = put_key_columns(e, values, nulls);
		nulls[3] = true;
		values[4] = TimestampTzGetDatum(sum.start);
		values[5] = TimestampTzGetDatum(sum.end);
		values[6] = Int64GetDatum(sum.calls);
		values[7] = Int64GetDatum(sum.suboverflowed_calls);
		values[8] = Int64GetDatum(sum.near_overflow_calls);
		values[9] = Int64GetDatum(sum.overflow_events);
		values[10] = Int32GetDatum(sum.max_subxacts);
		values[11] = Int64GetDatum(sum.top_level_calls);
		values[12] = Int64GetDatum(sum.shared_blks);
		nulls[13] = nulls[14] = nulls[15] = true;
		values[16] = pgc_masked_text_datum(visible, e->query, e->key.dbid);
		for (int c = 17; c <= 27; c++)
			nulls[c] = true;
		nulls[30] = true;
		put_literals(sum.literals, visible, e->key.dbid, values, nulls, 28);
		if (several_apps)
			nulls[29] = true;
		else
			values[29] = CStringGetTextDatum(app);
		oldcontext = MemoryContextSwitchTo(recent_cxt);
		if (notable)
			recent_rows = lappend(recent_rows, heap_form_tuple(tupdesc, values, nulls));

		/* The same statement columns, with one index's scan figures. */
		nulls[3] = nulls[13] = nulls[14] = nulls[15] = false;
		for (int x = 0; x < nindexes; x++)
		{
			if (notable_only && indexes[x].dead == 0)
				continue;
			values[3] = ObjectIdGetDatum(indexes[x].indexoid);
			values[13] = Int64GetDatum(indexes[x].scans);
			values[14] = Int64GetDatum(indexes[x].entries);
			values[15] = Int64GetDatum(indexes[x].dead);
			put_period_scan(&indexes[x].exec, values, nulls, 17);
			/* The client statement a nested worst ran in: an id, masked as one. */
			values[30] = Int64GetDatum(indexes[x].exec.worst_caller);
			nulls[30] = !visible || indexes[x].exec.worst_caller == 0;
			recent_rows = lappend(recent_rows, heap_form_tuple(tupdesc, values, nulls));
		}
		MemoryContextSwitchTo(oldcontext);
		pfree(DatumGetPointer(values[16]));
		pfree(indexes);
	}
	pfree(order);
}

/* Replace a cache's rows by those of one copy of the store. */
static void
fill_recent_cache(RecentCache *cache, const RecentCacheKey *key, TupleDesc tupdesc,
				  char *copy, long n, TimestampTz cutoff)
{
	if (cache->cxt != NULL)
		MemoryContextDelete(cache->cxt);	/* its callback forgets it */
	cache->cxt = AllocSetContextCreate(TopTransactionContext,
									   "pg_contention recent rows",
									   ALLOCSET_DEFAULT_SIZES);
	memset(&cache->key, 0, sizeof(cache->key));	/* until rows are whole */
	cache->callback.func = recent_cache_gone;
	cache->callback.arg = cache;
	MemoryContextRegisterResetCallback(cache->cxt, &cache->callback);
	recent_cxt = cache->cxt;
	recent_rows = NIL;
	build_recent_rows(tupdesc, copy, n, cutoff, key->notable_only, key->by_application);
	cache->rows = recent_rows;
	recent_cxt = NULL;
	recent_rows = NIL;
	cache->key = *key;			/* only once the rows are whole */
}

Datum
pg_contention_recent(PG_FUNCTION_ARGS)
{
	int32		window_seconds = PG_GETARG_INT32(0);
	bool		notable_only = PG_GETARG_BOOL(1);
	/* A 1.1 to 1.3 declaration has no third argument, nor the next two. */
	bool		by_application = PG_NARGS() > 2 && PG_GETARG_BOOL(2);
	bool		statement_rows = PG_NARGS() <= 4 || PG_GETARG_BOOL(3);
	bool		index_rows = PG_NARGS() <= 4 || PG_GETARG_BOOL(4);
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	RecentCacheKey key;
	RecentCache *cache;
	ListCell   *lc;

	pgc_require_loaded();
	if (window_seconds <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window_seconds must be at least 1, not %d", window_seconds),
				 errhint("Pass the window's length in seconds.")));
	tupstore = pgc_materialize(fcinfo, &recent_shape, &tupdesc);

	memset(&key, 0, sizeof(key));
	key.statement_start = GetCurrentStatementStartTimestamp();
	key.userid = GetUserId();
	key.window_seconds = window_seconds;
	key.notable_only = notable_only;
	key.by_application = by_application;
	key.natts = tupdesc->natts;
	cache = &recent_caches[by_application ? 1 : 0];
	if (cache->cxt == NULL || memcmp(&key, &cache->key, sizeof(key)) != 0)
	{
		RecentCache *other = &recent_caches[by_application ? 0 : 1];
		RecentCacheKey other_key = key;
		char	   *copy;
		long		n;
		TimestampTz cutoff;

		cutoff = GetCurrentTimestamp() - (int64) window_seconds * USECS_PER_SEC;
		copy = notable_only ? copy_notable_entries(&n, cutoff) : copy_entries(&n);
		fill_recent_cache(cache, &key, tupdesc, copy, n, cutoff);

		/*
		 * The findings read both forms (the rules a row per statement, who
		 * pays a row per application): with notable_only, whose rows are
		 * few, build the other from the same copy, which is what costs.
		 */
		other_key.by_application = !by_application;
		if (notable_only &&
			(other->cxt == NULL || memcmp(&other_key, &other->key, sizeof(key)) != 0))
			fill_recent_cache(other, &other_key, tupdesc, copy, n, cutoff);
		pfree(copy);
	}
	/*
	 * One cache serves every kind of row: a rule that reads the statements
	 * alone does not copy thousands of index rows into its query, nor the
	 * index rules the statements.
	 */
	foreach(lc, cache->rows)
	{
		HeapTuple	tuple = (HeapTuple) lfirst(lc);

		if (heap_attisnull(tuple, RECENT_INDEXRELID_ATTNUM, tupdesc) ? statement_rows : index_rows)
			tuplestore_puttuple(tupstore, tuple);
	}
	return (Datum) 0;
}
