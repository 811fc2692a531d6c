--
-- Index scans that visit dead or invisible entries, per statement and index
-- (plain scans, and bitmap scans whose heap side can be attributed).  The
-- function has a row per application (1.4); the view sums them.  With
-- dead_only (1.4), only the rows of the statements' indexes that visited
-- dead entries (all of their rows, so that sums over a statement's index
-- are whole): what the client's tables, the report and the metrics show,
-- without copying every statement of the store.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_index_scans(
	dead_only boolean DEFAULT false,
	OUT userid oid,
	OUT dbid oid,
	OUT query_id bigint,
	OUT indexrelid oid,
	OUT scans bigint,
	OUT entries_read bigint,
	OUT live_fetched bigint,
	OUT dead_visits bigint,
	OUT max_dead_visits_per_scan bigint,
	OUT index_only_scans bigint,
	OUT bitmap_scans bigint,
	OUT other_entries_read bigint,
	OUT last_seen timestamp with time zone,
	OUT query text,
	OUT indexes_untracked bigint,
	OUT bitmap_lossy_pages bigint,
	OUT worst_literals text,
	OUT application_name text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_index_scans'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

--
-- The view's rows: per statement and index, the sums over applications,
-- with the index's, table's, schema's and database's names (another
-- database's as the backends noted them there: pg_contention_index_names).  With
-- dead_only, only the statements' indexes that visited dead entries (what
-- the client's tables and the report show): the client reads this, not a
-- copy of its SQL.  PL/pgSQL, so that a session plans the query once
-- (an SQL function with a pinned search_path is planned again at every
-- call).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_index_scans_view(
	dead_only boolean DEFAULT false)
RETURNS TABLE (
	datname name,
	schemaname name,
	relname name,
	indexrelname name,
	dbid oid,
	indexrelid oid,
	query_id bigint,
	scans bigint,
	entries_read bigint,
	live_fetched bigint,
	dead_visits bigint,
	max_dead_visits_per_scan bigint,
	dead_ratio double precision,
	index_only_scans bigint,
	bitmap_scans bigint,
	bitmap_lossy_pages bigint,
	other_entries_read bigint,
	last_seen timestamp with time zone,
	query text,
	worst_literals text
)
LANGUAGE plpgsql STRICT VOLATILE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
		SELECT d.datname,
			   -- This database's from its catalog; another's as noted there.
			   CASE WHEN here THEN n.nspname ELSE nm.schemaname END AS schemaname,
			   CASE WHEN here THEN t.relname ELSE nm.relname END AS relname,
			   CASE WHEN here THEN ic.relname ELSE nm.indexrelname END AS indexrelname,
			   s.dbid,
			   s.indexrelid,
			   s.query_id,
			   sum(s.scans)::bigint AS scans,
			   sum(s.entries_read)::bigint AS entries_read,
			   sum(s.live_fetched)::bigint AS live_fetched,
			   sum(s.dead_visits)::bigint AS dead_visits,
			   max(s.max_dead_visits_per_scan) AS max_dead_visits_per_scan,
			   (sum(s.dead_visits) / nullif(sum(s.entries_read), 0::numeric))::double precision AS dead_ratio,
			   sum(s.index_only_scans)::bigint AS index_only_scans,
			   sum(s.bitmap_scans)::bigint AS bitmap_scans,
			   sum(s.bitmap_lossy_pages)::bigint AS bitmap_lossy_pages,
			   sum(s.other_entries_read)::bigint AS other_entries_read,
			   max(s.last_seen) AS last_seen,
			   min(s.query) AS query,
			   max(s.worst_literals) AS worst_literals
		  FROM @extschema@.pg_contention_index_scans(dead_only) AS s
		  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.dbid
		  CROSS JOIN LATERAL (SELECT d.datname = pg_catalog.current_database() AS here) AS h
		  LEFT JOIN pg_catalog.pg_class AS ic ON ic.oid = s.indexrelid AND here
		  LEFT JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
		  LEFT JOIN pg_catalog.pg_class AS t ON t.oid = i.indrelid
		  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
		  LEFT JOIN @extschema@.pg_contention_index_names() AS nm
			ON nm.dbid = s.dbid AND nm.indexrelid = s.indexrelid AND NOT here
		 GROUP BY 1, 2, 3, 4, s.dbid, s.indexrelid, s.query_id;
END
$$;

CREATE OR REPLACE VIEW @extschema@.pg_contention_index_scans AS
	SELECT i.datname, i.schemaname, i.relname, i.indexrelname, i.dbid, i.indexrelid,
		   i.query_id, i.scans, i.entries_read, i.live_fetched, i.dead_visits,
		   i.max_dead_visits_per_scan, i.dead_ratio, i.index_only_scans, i.bitmap_scans,
		   i.bitmap_lossy_pages, i.other_entries_read, i.last_seen, i.query, i.worst_literals
	  FROM @extschema@.pg_contention_index_scans_view(false) AS i;

GRANT SELECT ON @extschema@.pg_contention_index_scans TO PUBLIC;
