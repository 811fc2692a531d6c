/*-------------------------------------------------------------------------
 *
 * index_names.c
 *		The names of the indexes whose lookups met dead entries, and of
 *		their tables, noted in the database they live in, so that a reader
 *		connected to another database (the incidents worker, pg_contention
 *		check, both in postgres by default) can name them: a catalog can
 *		only be read in its own database.
 *
 * A backend notes an index when one of its executions visited at least
 * pg_contention.dead_visits_warning dead entries through it (hooks.c's
 * branch for such executions; a healthy execution pays nothing here): the
 * index is open and locked by that execution, so its names come from the
 * backend's relation cache and syscache.  The same backend notes the same
 * index again only after NOTE_AGAIN_AFTER (a small cache of its own), and
 * the shared entry is rewritten only when its names changed or it is that
 * old: a rename shows within a minute of the next bad execution, and a
 * burst of bad executions takes the lock exclusively about once a minute
 * per index.
 *
 * Owns ShmemInitStruct "pg_contention index names": PGC_INDEX_NAMES
 * entries keyed by database and index.  When it is full, the entry noted
 * longest ago is replaced, and counted (evictions).  The names are kept
 * in memory only: after a restart an index is named again at its next bad
 * execution; until then readers in another database show its oid.
 *
 * Locking: the store's LWLock, shared to read (readers copy the entries
 * out and build rows after releasing it, and a backend looks for its
 * entry), exclusive to write; nothing that can fail runs under it.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "catalog/pg_index.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#define PGC_INDEX_NAMES		512

/* A backend notes the same index again after this long, at the earliest. */
#define NOTE_AGAIN_AFTER	(60 * USECS_PER_SEC)

typedef struct IndexNames
{
	Oid			dbid;			/* InvalidOid: free */
	Oid			indexoid;
	Oid			relid;			/* its table */
	TimestampTz noted_at;
	NameData	schema;			/* the index's and its table's */
	NameData	index;
	NameData	table;
} IndexNames;

typedef struct IndexNamesShared
{
	LWLock	   *lock;
	int64		evictions;
	IndexNames	entries[PGC_INDEX_NAMES];
} IndexNamesShared;

static IndexNamesShared *names = NULL;

/* This backend's notes: which indexes it noted, and when. */
#define LOCAL_NOTES			16

static struct
{
	Oid			dbid;
	Oid			indexoid;
	TimestampTz at;
}			local_notes[LOCAL_NOTES];

Size
pgc_index_names_shmem_size(void)
{
	return sizeof(IndexNamesShared);
}

void
pgc_index_names_shmem_init(LWLock *lock)
{
	bool		found;

	names = ShmemInitStruct("pg_contention index names", sizeof(IndexNamesShared), &found);
	if (!found)
	{
		memset(names, 0, sizeof(IndexNamesShared));
		names->lock = lock;
	}
}

void
pgc_index_names_reset(void)
{
	LWLockAcquire(names->lock, LW_EXCLUSIVE);
	memset(names->entries, 0, sizeof(names->entries));
	names->evictions = 0;
	LWLockRelease(names->lock);
}

void
pgc_index_names_info(int *used, int64 *evictions)
{
	int			n = 0;

	LWLockAcquire(names->lock, LW_SHARED);
	for (int i = 0; i < PGC_INDEX_NAMES; i++)
		n += OidIsValid(names->entries[i].dbid);
	*evictions = names->evictions;
	LWLockRelease(names->lock);
	*used = n;
}

int
pgc_index_names_max(void)
{
	return PGC_INDEX_NAMES;
}

/* Did this backend note the index lately?  If not, remember it did now. */
static bool
noted_lately(Oid indexoid, TimestampTz now)
{
	int			k = indexoid % LOCAL_NOTES;

	if (local_notes[k].dbid == MyDatabaseId && local_notes[k].indexoid == indexoid &&
		now - local_notes[k].at < NOTE_AGAIN_AFTER)
		return true;
	local_notes[k].dbid = MyDatabaseId;
	local_notes[k].indexoid = indexoid;
	local_notes[k].at = now;
	return false;
}

/*
 * Note an index of the current database that an execution of this backend
 * has open (its names are in the relation cache and syscache).  In a
 * transaction, at ExecutorEnd.
 */
void
pgc_index_names_note(Oid indexoid)
{
	TimestampTz now = GetCurrentTimestamp();
	IndexNames	noted;
	HeapTuple	tuple;
	char	   *text;
	int			found = -1;
	int			oldest = 0;

	if (names == NULL || !IsTransactionState() || noted_lately(indexoid, now))
		return;

	memset(&noted, 0, sizeof(noted));
	noted.dbid = MyDatabaseId;
	noted.indexoid = indexoid;
	noted.noted_at = now;
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tuple))
		return;
	noted.relid = ((Form_pg_index) GETSTRUCT(tuple))->indrelid;
	ReleaseSysCache(tuple);
	/* An index lives in its table's schema. */
	if ((text = get_namespace_name(get_rel_namespace(indexoid))) == NULL)
		return;
	namestrcpy(&noted.schema, text);
	if ((text = get_rel_name(indexoid)) == NULL)
		return;
	namestrcpy(&noted.index, text);
	if ((text = get_rel_name(noted.relid)) == NULL)
		return;
	namestrcpy(&noted.table, text);

	/* Already there with these names, and noted lately: nothing to write. */
	LWLockAcquire(names->lock, LW_SHARED);
	for (int i = 0; i < PGC_INDEX_NAMES; i++)
	{
		IndexNames *e = &names->entries[i];

		if (e->dbid == noted.dbid && e->indexoid == indexoid)
		{
			found = i;
			break;
		}
	}
	if (found >= 0)
	{
		IndexNames *e = &names->entries[found];

		if (now - e->noted_at < NOTE_AGAIN_AFTER && e->relid == noted.relid &&
			memcmp(&e->schema, &noted.schema, 3 * sizeof(NameData)) == 0)
		{
			LWLockRelease(names->lock);
			return;
		}
	}
	LWLockRelease(names->lock);

	LWLockAcquire(names->lock, LW_EXCLUSIVE);
	found = -1;
	for (int i = 0; i < PGC_INDEX_NAMES; i++)
	{
		IndexNames *e = &names->entries[i];

		if (e->dbid == noted.dbid && e->indexoid == indexoid)
		{
			found = i;
			break;
		}
		if (found < 0 && !OidIsValid(e->dbid))
			found = i;
		if (e->noted_at < names->entries[oldest].noted_at)
			oldest = i;
	}
	if (found < 0)
	{
		found = oldest;
		names->evictions++;
	}
	names->entries[found] = noted;
	LWLockRelease(names->lock);
}

PG_FUNCTION_INFO_V1(pg_contention_index_names);

static const PgcResultColumn index_names_columns[] = {
	{"dbid", OIDOID, PGC_SQL_V(1, 4)},
	{"indexrelid", OIDOID, PGC_SQL_V(1, 4)},
	{"relid", OIDOID, PGC_SQL_V(1, 4)},
	{"schemaname", NAMEOID, PGC_SQL_V(1, 4)},
	{"relname", NAMEOID, PGC_SQL_V(1, 4)},
	{"indexrelname", NAMEOID, PGC_SQL_V(1, 4)},
	{"noted_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape index_names_shape = {
	"pg_contention_index_names", index_names_columns, lengthof(index_names_columns)
};

/*
 * pg_contention_index_names(): the names noted, per database and index.
 * Another database's only for roles with pg_read_all_stats, as another
 * database's statistics: its own database's catalog is open to anyone.
 */
Datum
pg_contention_index_names(PG_FUNCTION_ARGS)
{
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	bool		all_databases;
	IndexNames *copy;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &index_names_shape, &tupdesc);
	all_databases = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	copy = palloc(sizeof(names->entries));
	LWLockAcquire(names->lock, LW_SHARED);
	memcpy(copy, names->entries, sizeof(names->entries));
	LWLockRelease(names->lock);

	for (int i = 0; i < PGC_INDEX_NAMES; i++)
	{
		IndexNames *e = &copy[i];
		Datum		values[7];
		bool		nulls[7] = {0};

		if (!OidIsValid(e->dbid) || (!all_databases && e->dbid != MyDatabaseId))
			continue;
		values[0] = ObjectIdGetDatum(e->dbid);
		values[1] = ObjectIdGetDatum(e->indexoid);
		values[2] = ObjectIdGetDatum(e->relid);
		values[3] = NameGetDatum(&e->schema);
		values[4] = NameGetDatum(&e->table);
		values[5] = NameGetDatum(&e->index);
		values[6] = TimestampTzGetDatum(e->noted_at);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}
