--
-- Capacities and fill of the bounded stores, with their eviction and drop
-- counters, and when they were last saved to and loaded from their file;
-- 1.4 adds the incidents' (and the incidents opened, by problem and
-- severity, since the reset), and the incidents worker's evaluations too
-- large to keep for pg_contention check (findings_latest.c), and the open
-- incidents evicted to make room for another role's, and the index names
-- noted for readers in other databases (index_names.sql).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_info(
	OUT stats_reset timestamp with time zone,
	OUT statements_max integer,
	OUT statements integer,
	OUT statement_evictions bigint,
	OUT events_max integer,
	OUT events_written bigint,
	OUT events_dropped bigint,
	OUT last_saved timestamp with time zone,
	OUT last_loaded timestamp with time zone,
	OUT loaded_file_saved_at timestamp with time zone,
	OUT incidents_max integer,
	OUT incidents integer,
	OUT incident_evictions bigint,
	OUT incidents_not_opened bigint,
	OUT incidents_opened jsonb,
	OUT findings_not_kept bigint,
	OUT incident_open_evictions bigint,
	OUT index_names_max integer,
	OUT index_names integer,
	OUT index_name_evictions bigint,
	OUT event_role_evictions bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW @extschema@.pg_contention_info AS
	SELECT * FROM @extschema@.pg_contention_info();

GRANT SELECT ON @extschema@.pg_contention_info TO PUBLIC;
