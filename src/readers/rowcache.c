/*-------------------------------------------------------------------------
 *
 * rowcache.c
 *		A set-returning function's rows, kept for the rest of the client's
 *		statement while what they were built from is unchanged.  The
 *		findings' rules each read the overflow events and the history: one
 *		findings call built the same thousand events up to five times and
 *		the same 900 seconds of history up to four.  The caller names what
 *		its rows were built from (a store's write and reset counts, read
 *		under the store's lock), and a cache answers only the same client
 *		statement, user (what the rows may show), declared shape and those
 *		counts: the rows it gives back are those a fresh read would build.
 *		pg_contention_recent keeps its rows the same way (statements.c).
 *
 * Owns no shared state: backend-local memory, a child of
 * TopTransactionContext per cache, freed at the end of the transaction
 * (its reset callback forgets it).  Takes no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"

static void
row_cache_gone(void *arg)
{
	PgcRowCache *cache = (PgcRowCache *) arg;

	cache->cxt = NULL;
	cache->rows = NIL;
	cache->whole = false;
}

/*
 * Put the kept rows into tupstore if they answer this call: the same
 * client statement, user, shape and version.  Returns whether it did.
 */
bool
pgc_row_cache_replay(PgcRowCache *cache, const uint64 version[2],
					 TupleDesc tupdesc, Tuplestorestate *tupstore)
{
	ListCell   *lc;

	if (cache->cxt == NULL || !cache->whole ||
		cache->statement_start != GetCurrentStatementStartTimestamp() ||
		cache->userid != GetUserId() ||
		cache->natts != tupdesc->natts ||
		cache->version[0] != version[0] || cache->version[1] != version[1])
		return false;
	foreach(lc, cache->rows)
		tuplestore_puttuple(tupstore, (HeapTuple) lfirst(lc));
	return true;
}

/* Forget the kept rows and start keeping those of this call. */
void
pgc_row_cache_begin(PgcRowCache *cache, const uint64 version[2],
					TupleDesc tupdesc)
{
	if (cache->cxt != NULL)
		MemoryContextDelete(cache->cxt);	/* its callback forgets it */
	cache->cxt = AllocSetContextCreate(TopTransactionContext,
									   "pg_contention kept rows",
									   ALLOCSET_DEFAULT_SIZES);
	cache->callback.func = row_cache_gone;
	cache->callback.arg = cache;
	MemoryContextRegisterResetCallback(cache->cxt, &cache->callback);
	cache->statement_start = GetCurrentStatementStartTimestamp();
	cache->userid = GetUserId();
	cache->natts = tupdesc->natts;
	cache->version[0] = version[0];
	cache->version[1] = version[1];
	cache->rows = NIL;
	cache->whole = false;		/* until pgc_row_cache_end */
}

/* Form one row, keep it, and put it into tupstore. */
void
pgc_row_cache_put(PgcRowCache *cache, Tuplestorestate *tupstore,
				  TupleDesc tupdesc, Datum *values, bool *nulls)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(cache->cxt);
	HeapTuple	tuple = heap_form_tuple(tupdesc, values, nulls);

	cache->rows = lappend(cache->rows, tuple);
	MemoryContextSwitchTo(oldcontext);
	tuplestore_puttuple(tupstore, tuple);
}

/* Every row is in: the cache may answer. */
void
pgc_row_cache_end(PgcRowCache *cache)
{
	cache->whole = true;
}
