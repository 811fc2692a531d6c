/*-------------------------------------------------------------------------
 *
 * dead_tuples.c
 *		Dead tuples per database, and when a table was last vacuumed,
 *		whichever database the reader is
 *		connected to: what a holder of the xmin horizon keeps in the
 *		databases whose cleanup it holds back (xmin_horizon_held), which
 *		pg_stat_user_tables shows for the current database only.
 *
 * Owns no shared state.  The statistics are read by compat.c
 * (pgc_dead_tuples_by_database): from PG15 every database's, from the
 * shared statistics under their partition locks in shared mode; before,
 * the current database's only.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "catalog/catalog.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(pg_contention_database_dead_tuples);
PG_FUNCTION_INFO_V1(pg_contention_table_last_vacuum);

/*
 * pg_contention_table_last_vacuum(dbid, relid): when a table of any
 * database was last vacuumed (PG15 on; the current database's before),
 * NULL if not known: what tells a reader in another database that vacuum
 * removed the dead entries its lookups met.
 */
Datum
pg_contention_table_last_vacuum(PG_FUNCTION_ARGS)
{
	TimestampTz at;

	pgc_require_loaded();
	at = pgc_table_last_vacuum(PG_GETARG_OID(0), PG_GETARG_OID(1));
	if (at == 0)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(at);
}

static const PgcResultColumn dead_tuples_columns[] = {
	{"datid", OIDOID, PGC_SQL_V(1, 4)},
	{"dead_tuples", INT8OID, PGC_SQL_V(1, 4)},
	{"tables", INT8OID, PGC_SQL_V(1, 4)},
	{"due_dead_tuples", INT8OID, PGC_SQL_V(1, 4)},
	{"due_tables", INT8OID, PGC_SQL_V(1, 4)},
	{"catalog_dead_tuples", INT8OID, PGC_SQL_V(1, 4)},
	{"catalog_due_dead_tuples", INT8OID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape dead_tuples_shape = {
	"pg_contention_database_dead_tuples", dead_tuples_columns, lengthof(dead_tuples_columns)
};

typedef struct DatabaseDead
{
	Oid			dboid;			/* the hash key */
	int64		dead_tuples;
	int64		tables;
	int64		due_dead_tuples;
	int64		due_tables;
	int64		catalog_dead_tuples;	/* of the system catalogs: what a */
	int64		catalog_due_dead_tuples;	/* logical slot's catalog_xmin keeps */
} DatabaseDead;

static void
add_table(Oid dboid, Oid relid, int64 dead, int64 live, void *arg)
{
	HTAB	   *databases = (HTAB *) arg;
	DatabaseDead *d;
	bool		found;
	bool		due;

	d = hash_search(databases, &dboid, HASH_ENTER, &found);
	if (!found)
		memset(((char *) d) + sizeof(Oid), 0, sizeof(DatabaseDead) - sizeof(Oid));
	/* A counter can dip below zero for a moment (a rollback's delta). */
	dead = Max(dead, 0);
	due = dead > 0 && dead > pgc_autovacuum_threshold((double) live);
	d->dead_tuples += dead;
	d->tables++;
	if (due)
	{
		d->due_dead_tuples += dead;
		d->due_tables++;
	}
	/* Catalogs and their TOAST tables: what catalog_xmin holds back. */
	if (IsCatalogRelationOid(relid))
	{
		d->catalog_dead_tuples += dead;
		if (due)
			d->catalog_due_dead_tuples += dead;
	}
}

/*
 * pg_contention_database_dead_tuples(): one row per database whose table
 * statistics this backend can read and that has any: its dead tuples
 * (n_dead_tup summed over its user tables, TOAST tables and catalogs) and
 * how many tables have statistics.  Before PG15 only the current database
 * is readable; callers tell "unreadable" from "none" by the version.
 */
Datum
pg_contention_database_dead_tuples(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	HASHCTL		ctl;
	HTAB	   *databases;
	HASH_SEQ_STATUS status;
	DatabaseDead *d;

	tupstore = pgc_materialize(fcinfo, &dead_tuples_shape, &tupdesc);

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(DatabaseDead);
	ctl.hcxt = CurrentMemoryContext;
	databases = hash_create("pg_contention dead tuples", 16, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	pgc_dead_tuples_by_database(add_table, databases);

	hash_seq_init(&status, databases);
	while ((d = hash_seq_search(&status)) != NULL)
	{
		Datum		values[7];
		bool		nulls[7] = {0};

		values[0] = ObjectIdGetDatum(d->dboid);
		values[1] = Int64GetDatum(d->dead_tuples);
		values[2] = Int64GetDatum(d->tables);
		values[3] = Int64GetDatum(d->due_dead_tuples);
		values[4] = Int64GetDatum(d->due_tables);
		values[5] = Int64GetDatum(d->catalog_dead_tuples);
		values[6] = Int64GetDatum(d->catalog_due_dead_tuples);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	hash_destroy(databases);
	return (Datum) 0;
}
