--
-- Dead tuples per database, read from any database (dead_tuples.c): every
-- database's from PostgreSQL 15 on, the current one's before.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_database_dead_tuples(
	OUT datid oid,
	OUT dead_tuples bigint,
	OUT tables bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_database_dead_tuples'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
