--
-- Dead tuples per database, read from any database (dead_tuples.c): every
-- database's from PostgreSQL 15 on, the current one's before.  "Due" are
-- those of tables past their autovacuum threshold (the global settings);
-- "catalog" those of the system catalogs.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_database_dead_tuples(
	OUT datid oid,
	OUT dead_tuples bigint,
	OUT tables bigint,
	OUT due_dead_tuples bigint,
	OUT due_tables bigint,
	OUT catalog_dead_tuples bigint,
	OUT catalog_due_dead_tuples bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_database_dead_tuples'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
