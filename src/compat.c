/*-------------------------------------------------------------------------
 *
 * compat.c
 *		Version-specific code that is more than a macro (see compat.h).
 *
 * PostgreSQL 13 has no compute_query_id, so statements carry queryId 0
 * unless pg_stat_statements is loaded.  Here a statement without one gets
 * a query id from a hash of its own text (not normalised: different
 * constants make different ids), computed when it runs; nothing is
 * written into the parse tree, so modules such as pg_stat_statements,
 * which assert they see queryId 0 in post_parse_analyze, are unaffected.
 * On PostgreSQL 14 and later the server's query ids are used, and the
 * hash only names executions the server left without one.

 *
 * It also reads old_snapshot_threshold's shared state (PG13-16): the
 * scalar fields under the server's own spinlocks, the time map's fill
 * under OldSnapshotTimeMapLock in shared mode, as contrib/old_snapshot
 * does.  On PG17 and later, which removed the feature, those functions say
 * it is not supported.
 *
 * And one difference of the C library: pgc_release_free_memory().
 *
 * Owns no shared state.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "common/hashfn.h"

/* A query id from the statement's own slice of the source text. */
int64
pgc_text_query_id(PlannedStmt *stmt, const char *source_text)
{
	int			location = stmt->stmt_location;
	int			len = stmt->stmt_len;
	uint64		id;

	if (source_text == NULL)
		return 0;
	if (location < 0)
	{
		location = 0;
		len = 0;
	}
	if (len <= 0)
		len = strlen(source_text + location);
	id = hash_bytes_extended((const unsigned char *) source_text + location, len, 0);
	return (int64) (id != 0 ? id : 1);
}

void
pgc_compat_init(void)
{
	pgc_enable_query_id();
}

#ifdef __GLIBC__
#include <malloc.h>
#endif

/*
 * Trimmed only past 32 MB free: what a small evaluation frees it needs
 * again at the next, and memory given back costs page faults to take
 * again.
 */
#define PGC_FREE_MEMORY_KEPT	(32 * 1024 * 1024)

void
pgc_release_free_memory(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	if (mallinfo2().fordblks > PGC_FREE_MEMORY_KEPT)
		malloc_trim(0);
#elif defined(__GLIBC__)
	/* (mallinfo's int fields: a free heap past 2 GB reads negative) */
	struct mallinfo m = mallinfo();

	if ((unsigned int) m.fordblks > PGC_FREE_MEMORY_KEPT)
		malloc_trim(0);
#endif
}

#if PG_VERSION_NUM < 170000

#include "storage/shmem.h"
#include "utils/snapmgr.h"

#if PG_VERSION_NUM >= 140000
#include "utils/old_snapshot.h"
#else

/* PG13 keeps this struct static in snapmgr.c; the same layout. */
typedef struct OldSnapshotControlData
{
	slock_t		mutex_current;
	TimestampTz current_timestamp;
	slock_t		mutex_latest_xmin;
	TransactionId latest_xmin;
	TimestampTz next_map_update;
	slock_t		mutex_threshold;
	TimestampTz threshold_timestamp;
	TransactionId threshold_xid;
	int			head_offset;
	TimestampTz head_timestamp;
	int			count_used;
	TransactionId xid_by_minute[FLEXIBLE_ARRAY_MEMBER];
} OldSnapshotControlData;
#endif

static volatile OldSnapshotControlData *
old_snapshot_control(void)
{
#if PG_VERSION_NUM >= 140000
	return oldSnapshotControl;
#else
	static volatile OldSnapshotControlData *control = NULL;

	if (control == NULL)
	{
		bool		found;

		/* Attach to the server's own block; the size must match exactly. */
		control = ShmemInitStruct("OldSnapshotControlData", SnapMgrShmemSize(),
								  &found);
		if (!found)
			elog(ERROR, "OldSnapshotControlData not found in shared memory");
	}
	return control;
#endif
}

bool
pgc_oldsnap_supported(void)
{
	return true;
}

int
pgc_oldsnap_setting(void)
{
	return old_snapshot_threshold;
}

bool
pgc_oldsnap_read_state(PgcOldSnapshotState *state)
{
	volatile OldSnapshotControlData *c = old_snapshot_control();

	SpinLockAcquire(&c->mutex_current);
	state->current_timestamp = c->current_timestamp;
	SpinLockRelease(&c->mutex_current);

	SpinLockAcquire(&c->mutex_latest_xmin);
	state->latest_xmin = c->latest_xmin;
	state->next_map_update = c->next_map_update;
	SpinLockRelease(&c->mutex_latest_xmin);

	SpinLockAcquire(&c->mutex_threshold);
	state->threshold_timestamp = c->threshold_timestamp;
	state->threshold_xid = c->threshold_xid;
	SpinLockRelease(&c->mutex_threshold);

	LWLockAcquire(OldSnapshotTimeMapLock, LW_SHARED);
	state->map_entries_used = c->count_used;
	LWLockRelease(OldSnapshotTimeMapLock);
	return true;
}

/* Take mutex_current once, exactly as every snapshot does. */
void
pgc_oldsnap_probe(void)
{
	(void) GetSnapshotCurrentTimestamp();
}

/*
 * Read each of the three lock words reads_per_lock times without taking
 * them, a spin-delay instruction apart (so the reads span a few
 * microseconds rather than hitting one cached copy); return how many saw
 * one held.  A plain read: no write, no barrier, so it cannot disturb the
 * holders.
 */
int
pgc_oldsnap_locks_held(int reads_per_lock)
{
	volatile OldSnapshotControlData *c = old_snapshot_control();
	volatile slock_t *locks[PGC_OLDSNAP_LOCKS] = {
		&c->mutex_current, &c->mutex_latest_xmin, &c->mutex_threshold
	};
	int			held = 0;

	for (int i = 0; i < reads_per_lock; i++)
	{
		for (int l = 0; l < PGC_OLDSNAP_LOCKS; l++)
			held += !SpinLockFree(locks[l]);
		SPIN_DELAY();
	}
	return held;
}

#else							/* PG17 and later: the feature is gone */

bool
pgc_oldsnap_supported(void)
{
	return false;
}

int
pgc_oldsnap_setting(void)
{
	return -1;
}

bool
pgc_oldsnap_read_state(PgcOldSnapshotState *state)
{
	return false;
}

void
pgc_oldsnap_probe(void)
{
}

int
pgc_oldsnap_locks_held(int reads_per_lock)
{
	return 0;
}

#endif

JsonParseErrorType
pgc_json_parse(const char *s, size_t len, int encoding, JsonSemAction *sem,
			   JsonLexContext **lex_out)
{
#if PG_VERSION_NUM >= 170000
	JsonLexContext lex;
	JsonParseErrorType result;

	makeJsonLexContextCstringLen(&lex, s, len, encoding, true);
	if (lex_out != NULL)
		*lex_out = &lex;
	result = pg_parse_json(&lex, sem);
	if (lex_out != NULL)
		*lex_out = NULL;
	freeJsonLexContext(&lex);
	return result;
#else
	JsonLexContext *lex = makeJsonLexContextCstringLen(unconstify(char *, s), (int) len,
													   encoding, true);
	JsonParseErrorType result;

	if (lex_out != NULL)
		*lex_out = lex;
	result = pg_parse_json(lex, sem);
	if (lex_out != NULL)
		*lex_out = NULL;
	return result;
#endif
}

/*
 * Each database's dead tuples, as its tables' statistics count them
 * (n_dead_tup: user tables, TOAST tables and system catalogs alike): add()
 * is called once per table with its database, its oid and its dead and
 * live tuple counts.
 *
 * From PG15 the statistics live in shared memory, one entry per table of
 * every database: the shared hash is scanned as pg_stat_reset_shared's
 * neighbours do (dshash_seq_*, each partition under its lock in shared
 * mode), and each entry's count read without the entry's own lock: it is
 * one aligned 8-byte counter, which a flush cannot tear (the live count
 * likewise), and a count a flush behind is what any reader of
 * pg_stat_user_tables may see.  Before
 * PG15 the statistics collector's file is read for the current database
 * only (as pg_stat_user_tables does): the others' are not readable here.
 */
#if PG_VERSION_NUM >= 150000
#include "utils/pgstat_internal.h"

void
pgc_dead_tuples_by_database(PgcTableDeadFunc add, void *arg)
{
	dshash_seq_status hstat;
	PgStatShared_HashEntry *p;

	if (pgStatLocal.shared_hash == NULL)
		return;
	dshash_seq_init(&hstat, pgStatLocal.shared_hash, false);
	while ((p = dshash_seq_next(&hstat)) != NULL)
	{
		PgStatShared_Relation *shared;

		if (p->key.kind != PGSTAT_KIND_RELATION || p->dropped ||
			!OidIsValid(p->key.dboid))
			continue;
		shared = (PgStatShared_Relation *) dsa_get_address(pgStatLocal.dsa, p->body);
		add(p->key.dboid, PGC_STATS_OBJOID(p->key), (int64) PGC_TABENTRY_DEAD_TUPLES(&shared->stats),
			(int64) PGC_TABENTRY_LIVE_TUPLES(&shared->stats), arg);
	}
	dshash_seq_term(&hstat);
}

/*
 * The shared entry's timestamps read without its lock, as the counters
 * above are: each is one aligned 8-byte word, written whole by the
 * backend that flushes a vacuum's report; a reader sees the old value or
 * the new one.
 */
TimestampTz
pgc_table_last_vacuum(Oid dboid, Oid relid)
{
	PgStat_EntryRef *ref;
	PgStatShared_Relation *shared;

	if (pgStatLocal.shared_hash == NULL)
		return 0;
	ref = pgstat_get_entry_ref(PGSTAT_KIND_RELATION, dboid, relid, false, NULL);
	if (ref == NULL || ref->shared_entry->dropped)
		return 0;
	shared = (PgStatShared_Relation *) ref->shared_stats;
	return PGC_TABENTRY_LAST_VACUUM(&shared->stats);
}

#else

void
pgc_dead_tuples_by_database(PgcTableDeadFunc add, void *arg)
{
	PgStat_StatDBEntry *db = pgstat_fetch_stat_dbentry(MyDatabaseId);
	HASH_SEQ_STATUS status;
	PgStat_StatTabEntry *table;

	if (db != NULL && db->tables != NULL)
	{
		hash_seq_init(&status, db->tables);
		while ((table = hash_seq_search(&status)) != NULL)
			add(MyDatabaseId, table->tableid, (int64) PGC_TABENTRY_DEAD_TUPLES(table),
				(int64) PGC_TABENTRY_LIVE_TUPLES(table), arg);
	}
}

/* Before PG15: the current database's tables only, from its file. */
TimestampTz
pgc_table_last_vacuum(Oid dboid, Oid relid)
{
	PgStat_StatTabEntry *table;

	if (dboid != MyDatabaseId || (table = pgstat_fetch_stat_tabentry(relid)) == NULL)
		return 0;
	return PGC_TABENTRY_LAST_VACUUM(table);
}

#endif
