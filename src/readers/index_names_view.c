/*-------------------------------------------------------------------------
 *
 * index_names_view.c
 *		pg_contention_index_names() and pg_contention_nested_contexts():
 *		the index names and function contexts noted by the backends that
 *		met dead entries (stores/index_names.c), as the caller may see
 *		them.
 *
 * Owns no shared state and takes no lock (the store copies its entries
 * out under its own).
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(pg_contention_index_names);
PG_FUNCTION_INFO_V1(pg_contention_nested_contexts);

static const PgcResultColumn index_names_columns[] = {
	{"dbid", OIDOID, PGC_SQL_V(1, 4)},
	{"indexrelid", OIDOID, PGC_SQL_V(1, 4)},
	{"relid", OIDOID, PGC_SQL_V(1, 4)},
	{"schemaname", NAMEOID, PGC_SQL_V(1, 4)},
	{"relname", NAMEOID, PGC_SQL_V(1, 4)},
	{"indexrelname", NAMEOID, PGC_SQL_V(1, 4)},
	{"noted_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"owner", OIDOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape index_names_shape = {
	"pg_contention_index_names", index_names_columns, lengthof(index_names_columns)
};

static const PgcResultColumn nested_contexts_columns[] = {
	{"dbid", OIDOID, PGC_SQL_V(1, 4)},
	{"query_id", INT8OID, PGC_SQL_V(1, 4)},
	{"context", TEXTOID, PGC_SQL_V(1, 4)},
	{"several", BOOLOID, PGC_SQL_V(1, 4)},
	{"noted_at", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"userid", OIDOID, PGC_SQL_V(1, 4)},
	{"trigger", TEXTOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape nested_contexts_shape = {
	"pg_contention_nested_contexts", nested_contexts_columns, lengthof(nested_contexts_columns)
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
	PgcIndexName *copy;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &index_names_shape, &tupdesc);
	all_databases = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	copy = pgc_index_names_copy();

	for (int i = 0, n = pgc_index_names_max(); i < n; i++)
	{
		PgcIndexName *e = &copy[i];
		Datum		values[lengthof(index_names_columns)];
		bool		nulls[lengthof(index_names_columns)] = {0};

		if (e->kind != PGC_NOTED_INDEX || (!all_databases && e->dbid != MyDatabaseId))
			continue;
		values[0] = ObjectIdGetDatum(e->dbid);
		values[1] = ObjectIdGetDatum(e->indexoid);
		values[2] = ObjectIdGetDatum(e->relid);
		values[3] = NameGetDatum(&e->u.rel.schema);
		values[4] = NameGetDatum(&e->u.rel.table);
		values[5] = NameGetDatum(&e->u.rel.index);
		values[6] = TimestampTzGetDatum(e->noted_at);
		values[7] = ObjectIdGetDatum(e->owner);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

/*
 * pg_contention_nested_contexts(): the function each statement that met
 * dead entries inside a function ran in, per database and query id.
 * Another database's only for roles with pg_read_all_stats, as
 * pg_contention_index_names(); and, as pg_stat_statements shows them,
 * another role's query id and function only to pg_read_all_stats or a
 * member of that role (NULL and <insufficient privilege> otherwise).
 */
Datum
pg_contention_nested_contexts(PG_FUNCTION_ARGS)
{
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	bool		all_databases;
	PgcIndexName *copy;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &nested_contexts_shape, &tupdesc);
	all_databases = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	copy = pgc_index_names_copy();

	for (int i = 0, n = pgc_index_names_max(); i < n; i++)
	{
		PgcIndexName *e = &copy[i];
		Datum		values[lengthof(nested_contexts_columns)];
		bool		nulls[lengthof(nested_contexts_columns)] = {0};
		bool		visible;

		if (e->kind != PGC_NOTED_CONTEXT || (!all_databases && e->dbid != MyDatabaseId))
			continue;
		visible = all_databases || has_privs_of_role(GetUserId(), e->owner);
		e->u.context.line[PGC_CONTEXT_LEN - 1] = '\0';
		values[0] = ObjectIdGetDatum(e->dbid);
		values[1] = Int64GetDatum(e->query_id);
		nulls[1] = !visible;
		values[2] = CStringGetTextDatum(visible ? e->u.context.line : "<insufficient privilege>");
		values[3] = BoolGetDatum(e->several);
		values[4] = TimestampTzGetDatum(e->noted_at);
		values[5] = ObjectIdGetDatum(e->owner);
		/* The trigger that fired it, "name on schema.table", quoted. */
		if (visible && NameStr(e->u.context.trigger)[0] != '\0')
			values[6] = CStringGetTextDatum(psprintf("%s on %s",
													 quote_identifier(NameStr(e->u.context.trigger)),
													 quote_qualified_identifier(NameStr(e->u.context.trigger_schema),
																				NameStr(e->u.context.trigger_table))));
		else
			nulls[6] = true;
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}
