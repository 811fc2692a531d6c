--
-- The names of the indexes whose lookups met dead entries, and of their
-- tables, as the backends that scanned them noted them in their own
-- database (1.4): a reader in another database (the incidents worker,
-- pg_contention check) names them from here.  Another database's only for
-- roles with pg_read_all_stats.  owner: the index's owner, whom an
-- incident that no holder explains counts for.  Kept in memory, at most index_names_max
-- (pg_contention_info counts the evictions).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_index_names(
	OUT dbid oid,
	OUT indexrelid oid,
	OUT relid oid,
	OUT schemaname name,
	OUT relname name,
	OUT indexrelname name,
	OUT noted_at timestamp with time zone,
	OUT owner oid
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_index_names'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
