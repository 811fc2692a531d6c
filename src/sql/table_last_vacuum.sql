--
-- When a table of any database was last vacuumed, by hand or by
-- autovacuum (1.4; dead_tuples.c): every database's from PostgreSQL 15
-- on, the current one's before; NULL when not known.  The index finding
-- read from another database (the incidents worker's, check's) tells by
-- it that vacuum removed the dead entries, as read in the table's own.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_table_last_vacuum(dbid oid, relid oid)
RETURNS timestamp with time zone
AS 'MODULE_PATHNAME', 'pg_contention_table_last_vacuum'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
