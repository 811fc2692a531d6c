/*-------------------------------------------------------------------------
 *
 * index_names.c
 *		The names of the indexes whose lookups met dead entries, and of
 *		their tables, noted in the database they live in, so that a reader
 *		connected to another database (the incidents worker, pg_contention
 *		check, both in postgres by default) can name them: a catalog can
 *		only be read in its own database.  And, for such a lookup made by a
 *		function's statement, the function that ran it: the innermost
 *		"PL/pgSQL function ... line N at ..." or "SQL function ..." line of
 *		the server's error context stack, which is what GET DIAGNOSTICS
 *		PG_CONTEXT shows (in the session's lc_messages: matched in its
 *		language, see is_function_line()), keyed by the nested statement's
 *		query id.
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
 * Owns ShmemInitStruct "pg_contention index names":
 * pg_contention.max_index_names entries keyed by database and index, or
 * by database and statement.  When it is full, what is worth least gives
 * way, and is counted (evictions): an entry not noted within
 * pg_contention.findings_window (no finding names it), oldest first; else
 * the one whose executions met the fewest dead entries (the findings'
 * last), the new one included, so that the names of the worst indexes
 * stay whatever the order in which the others come.  A function's context
 * noted for an overflow is kept before any index's name.  The names are
 * kept in memory only: after a restart an index is named again at its
 * next bad execution; until then readers in another database show its
 * oid, and a function's statement is named without its function.
 *
 * Locking: the store's LWLock, shared to read (readers copy the entries
 * out and build rows after releasing it, and a backend looks for its
 * entry), exclusive to write; nothing that can fail runs under it.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"


/* A backend notes the same index again after this long, at the earliest. */
#define NOTE_AGAIN_AFTER	(60 * USECS_PER_SEC)

typedef struct IndexNamesShared
{
	LWLock	   *lock;
	int64		evictions;
	PgcIndexName entries[FLEXIBLE_ARRAY_MEMBER];	/* max_index_names */
} IndexNamesShared;

static IndexNamesShared *names = NULL;

/* This backend's notes: which indexes it noted, and when. */
#define LOCAL_NOTES			16

static struct
{
	Oid			dbid;
	uint8		kind;
	int64		key;
	TimestampTz at;
}			local_notes[LOCAL_NOTES];

Size
pgc_index_names_shmem_size(void)
{
	return add_size(offsetof(IndexNamesShared, entries),
					mul_size(pgc_max_index_names, sizeof(PgcIndexName)));
}

void
pgc_index_names_shmem_init(LWLock *lock)
{
	bool		found;

	names = ShmemInitStruct("pg_contention index names", pgc_index_names_shmem_size(), &found);
	if (!found)
	{
		memset(names, 0, pgc_index_names_shmem_size());
		names->lock = lock;
	}
}

void
pgc_index_names_reset(void)
{
	LWLockAcquire(names->lock, LW_EXCLUSIVE);
	memset(names->entries, 0, pgc_max_index_names * sizeof(PgcIndexName));
	names->evictions = 0;
	LWLockRelease(names->lock);
}

void
pgc_index_names_info(int *used, int64 *evictions)
{
	int			n = 0;

	LWLockAcquire(names->lock, LW_SHARED);
	for (int i = 0; i < pgc_max_index_names; i++)
		n += OidIsValid(names->entries[i].dbid);
	*evictions = names->evictions;
	LWLockRelease(names->lock);
	*used = n;
}

int
pgc_index_names_max(void)
{
	return pgc_max_index_names;
}

/* Did this backend note the object lately?  If not, remember it did now. */
static bool
noted_lately(uint8 kind, int64 key, TimestampTz now)
{
	int			k = (int) ((uint64) key % LOCAL_NOTES);

	if (local_notes[k].dbid == MyDatabaseId && local_notes[k].kind == kind &&
		local_notes[k].key == key && now - local_notes[k].at < NOTE_AGAIN_AFTER)
		return true;
	local_notes[k].dbid = MyDatabaseId;
	local_notes[k].kind = kind;
	local_notes[k].key = key;
	local_notes[k].at = now;
	return false;
}

/* The entry of this database's object, or -1.  Caller holds the lock. */
static int
find_entry(const PgcIndexName *noted)
{
	for (int i = 0; i < pgc_max_index_names; i++)
	{
		PgcIndexName *e = &names->entries[i];

		if (e->dbid == noted->dbid && e->kind == noted->kind &&
			e->indexoid == noted->indexoid && e->query_id == noted->query_id)
			return i;
	}
	return -1;
}

/* Noted within the findings' window: a finding may name it. */
static bool
fresh(const PgcIndexName *e, TimestampTz now)
{
	return now - e->noted_at < (TimestampTz) pgc_findings_window * USECS_PER_SEC;
}

/* Same names and worth as the entry, and the entry noted lately? */
static bool
unchanged(const PgcIndexName *e, const PgcIndexName *noted)
{
	if (noted->noted_at - e->noted_at >= NOTE_AGAIN_AFTER || noted->dead > e->dead)
		return false;
	if (noted->kind == PGC_NOTED_INDEX)
		return e->relid == noted->relid && e->owner == noted->owner &&
			memcmp(&e->u.rel, &noted->u.rel, sizeof(e->u.rel)) == 0;
	return e->owner == noted->owner && strcmp(e->u.context.line, noted->u.context.line) == 0;
}

/*
 * Is a worth keeping less than b (the one to give way)?  Stale before
 * fresh, then fewer dead entries, then noted longer ago.
 */
static bool
worth_less(const PgcIndexName *a, const PgcIndexName *b, TimestampTz now)
{
	if (fresh(a, now) != fresh(b, now))
		return !fresh(a, now);
	if (fresh(a, now) && a->dead != b->dead)
		return a->dead < b->dead;
	return a->noted_at < b->noted_at;
}

/*
 * Write an entry: its own (keeping the most dead entries it met while
 * fresh), else a free one, else that of the one worth least, unless the
 * new one is worth less still (either way one is not kept: counted).  A
 * context noted with another line than the one kept is marked: its
 * statement runs in several places.
 */
static void
store_entry(PgcIndexName *noted)
{
	int			found;

	/* Already there as it is, and noted lately: nothing to write. */
	LWLockAcquire(names->lock, LW_SHARED);
	found = find_entry(noted);
	if (found >= 0 && unchanged(&names->entries[found], noted))
	{
		LWLockRelease(names->lock);
		return;
	}
	LWLockRelease(names->lock);

	LWLockAcquire(names->lock, LW_EXCLUSIVE);
	found = find_entry(noted);
	if (found >= 0)
	{
		PgcIndexName *e = &names->entries[found];

		if (noted->kind == PGC_NOTED_CONTEXT)
			noted->several = e->several || strcmp(e->u.context.line, noted->u.context.line) != 0 ||
				e->owner != noted->owner;
		if (fresh(e, noted->noted_at))
			noted->dead = Max(noted->dead, e->dead);
	}
	else
	{
		int			least = 0;

		for (int i = 0; i < pgc_max_index_names; i++)
		{
			PgcIndexName *e = &names->entries[i];

			if (!OidIsValid(e->dbid))
			{
				found = i;
				break;
			}
			if (worth_less(e, &names->entries[least], noted->noted_at))
				least = i;
		}
		if (found < 0)
		{
			names->evictions++;
			if (worth_less(noted, &names->entries[least], noted->noted_at))
			{
				LWLockRelease(names->lock);
				return;
			}
			found = least;
		}
	}
	names->entries[found] = *noted;
	LWLockRelease(names->lock);
}

/*
 * Note an index of the current database that an execution of this backend
 * has open (its names are in the relation cache and syscache).  In a
 * transaction, at ExecutorEnd.
 */
void
pgc_index_names_note(Oid indexoid, int64 dead)
{
	TimestampTz now = GetCurrentTimestamp();
	PgcIndexName	noted;
	HeapTuple	tuple;
	char	   *text;

	if (names == NULL || !IsTransactionState() || noted_lately(PGC_NOTED_INDEX, indexoid, now))
		return;

	memset(&noted, 0, sizeof(noted));
	noted.dbid = MyDatabaseId;
	noted.kind = PGC_NOTED_INDEX;
	noted.indexoid = indexoid;
	noted.noted_at = now;
	noted.dead = dead;
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tuple))
		return;
	noted.relid = ((Form_pg_index) GETSTRUCT(tuple))->indrelid;
	ReleaseSysCache(tuple);
	/* Whose it is: an incident no holder explains counts for its owner. */
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tuple))
		return;
	noted.owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	/* An index lives in its table's schema. */
	if ((text = get_namespace_name(get_rel_namespace(indexoid))) == NULL)
		return;
	namestrcpy(&noted.u.rel.schema, text);
	if ((text = get_rel_name(indexoid)) == NULL)
		return;
	namestrcpy(&noted.u.rel.index, text);
	if ((text = get_rel_name(noted.relid)) == NULL)
		return;
	namestrcpy(&noted.u.rel.table, text);
	store_entry(&noted);
}

/*
 * Whether an error context line is a function's, as PL/pgSQL or a SQL
 * function words it while its statement runs.  Those texts are translated
 * into the session's lc_messages when they are made (each language's
 * message domain), so a line is compared with the text before the first
 * conversion of each format, in English and as this session translates
 * it: never with English alone.
 */
static bool
is_function_line(const char *line, char **signature)
{
	static const char *const formats[][2] = {
		{PG_TEXTDOMAIN("plpgsql"), "PL/pgSQL function %s line %d %s"},
		{PG_TEXTDOMAIN("plpgsql"), "PL/pgSQL function %s %s"},
		{PG_TEXTDOMAIN("plpgsql"), "PL/pgSQL function %s"},
		{PG_TEXTDOMAIN("postgres"), "SQL function \"%s\" statement %d"},
		{PG_TEXTDOMAIN("postgres"), "SQL function \"%s\" during startup"},
		{PG_TEXTDOMAIN("postgres"), "SQL function \"%s\""},
	};

	for (int i = 0; i < lengthof(formats); i++)
	{
		const char *texts[2];

		texts[0] = formats[i][1];
#ifdef ENABLE_NLS
		texts[1] = dgettext(formats[i][0], formats[i][1]);
#else
		texts[1] = formats[i][1];
#endif
		for (int t = 0; t < 2; t++)
		{
			size_t		prefix = strcspn(texts[t], "%");
			const char *after;
			const char *infix;
			size_t		infix_len;
			const char *end;

			/* A translation that starts with its argument tells nothing. */
			if (prefix < 4 || strncmp(line, texts[t], prefix) != 0)
				continue;
			/*
			 * A PL/pgSQL line's first argument is its function's signature
			 * (format_procedure()): up to the text that follows it in the
			 * format, or the end.
			 */
			*signature = NULL;
			if (i < 3 && strncmp(texts[t] + prefix, "%s", 2) == 0)
			{
				after = line + prefix;
				infix = texts[t] + prefix + 2;
				infix_len = strcspn(infix, "%");
				if (infix_len > 0)
				{
					char	   *literal = pnstrdup(infix, infix_len);

					end = strstr(after, literal);
					pfree(literal);
				}
				else
					end = infix[0] == '\0' ? after + strlen(after) : NULL;
				if (end != NULL && end > after)
					*signature = pnstrdup(after, end - after);
			}
			return true;
		}
	}
	return false;
}

/* The function a signature names, or InvalidOid (to_regprocedure()). */
static Oid
regprocedure_or_invalid(const char *signature)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(signature);
	fcinfo->args[0].isnull = false;
	result = to_regprocedure(fcinfo);
	return fcinfo->isnull ? InvalidOid : DatumGetObjectId(result);
}

/*
 * The trigger that fires a trigger function (its first, by name order of
 * the scan; none for a plain function), noted with the context: a reader
 * in another database cannot read this one's catalog.  The signature is
 * the server's own (format_procedure), resolved in the backend that ran
 * it, at once.  Only on this rare path: an overflow or a bad lookup inside
 * a function, noted at most once a minute per statement.
 */
static void
note_trigger(const char *signature, PgcIndexName *noted)
{
	size_t		len = strlen(signature);
	Oid			funcoid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			relid = InvalidOid;

	/*
	 * A trigger function takes no arguments: "name()" or "schema.name()",
	 * which to_regprocedure() parses without error.  Anything else (a DO
	 * block's "inline_code_block", a signature cut at a space) is left
	 * alone: this runs inside the user's statement, which must never fail
	 * for it.
	 */
	if (len < 3 || strcmp(signature + len - 2, "()") != 0 ||
		strchr(signature, '(') != signature + len - 2)
		return;
	funcoid = regprocedure_or_invalid(signature);
	if (!OidIsValid(funcoid) || get_func_rettype(funcoid) != TRIGGEROID)
		return;
	rel = table_open(TriggerRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Form_pg_trigger trigger = (Form_pg_trigger) GETSTRUCT(tuple);

		if (trigger->tgfoid == funcoid && !trigger->tgisinternal)
		{
			namestrcpy(&noted->u.context.trigger, NameStr(trigger->tgname));
			relid = trigger->tgrelid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (OidIsValid(relid))
	{
		char	   *table = get_rel_name(relid);
		char	   *schema = get_namespace_name(get_rel_namespace(relid));

		namestrcpy(&noted->u.context.trigger_table, table ? table : "");
		namestrcpy(&noted->u.context.trigger_schema, schema ? schema : "");
	}
}

/*
 * Note the function whose statement (query_id, nested) just met dead
 * entries: the innermost function line of the error context stack, as the
 * procedural languages word it while their statement runs, in the
 * session's language.  The lines of
 * other callbacks (SPI's "SQL statement", which carries a statement's
 * text) are never kept.  In a transaction, at ExecutorEnd.
 */
void
pgc_nested_context_note(int64 query_id, int64 dead)
{
	TimestampTz now = GetCurrentTimestamp();
	PgcIndexName	noted;
	char	   *stack;
	char	   *line;
	char	   *next;
	char	   *signature = NULL;

	if (names == NULL || query_id == 0 || !IsTransactionState() ||
		noted_lately(PGC_NOTED_CONTEXT, query_id, now))
		return;
	/* NULL when no callback is there: a client's EXECUTE runs none. */
	stack = GetErrorContextStack();
	if (stack == NULL)
		return;
	for (line = stack; line != NULL; line = next)
	{
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (is_function_line(line, &signature))
			break;
	}
	if (line == NULL)
	{
		pfree(stack);
		return;
	}
	memset(&noted, 0, sizeof(noted));
	noted.dbid = MyDatabaseId;
	noted.kind = PGC_NOTED_CONTEXT;
	noted.query_id = query_id;
	noted.owner = GetUserId();
	noted.noted_at = now;
	noted.dead = dead;
	memcpy(noted.u.context.line, line, pg_mbcliplen(line, strlen(line), PGC_CONTEXT_LEN - 1));
	if (signature != NULL)
		note_trigger(signature, &noted);
	pfree(stack);
	store_entry(&noted);
}

/*
 * Every entry (free ones have dbid InvalidOid), copied out under the lock
 * for a reader to build its rows from after it: pgc_index_names_max() of
 * them.
 * Which a caller may see is the reader's to judge.
 */
PgcIndexName *
pgc_index_names_copy(void)
{
	Size		size = mul_size(pgc_max_index_names, sizeof(PgcIndexName));
	PgcIndexName *copy = palloc(size);

	LWLockAcquire(names->lock, LW_SHARED);
	memcpy(copy, names->entries, size);
	LWLockRelease(names->lock);
	return copy;
}
