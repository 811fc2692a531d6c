--
-- old_snapshot_threshold (PostgreSQL 13-16): the server's state and the
-- spinlock pressure figures, over a recent window and since the last reset.
-- The window: window_seconds, 1 to pg_contention.history_seconds; NULL (the
-- default) for 60 seconds, or the whole history when it keeps fewer.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_old_snapshot(
	window_seconds integer DEFAULT NULL,
	OUT setting_minutes integer,
	OUT enabled boolean,
	OUT applicable boolean,
	OUT snapshot_timestamp timestamp with time zone,
	OUT latest_xmin xid,
	OUT next_map_update timestamp with time zone,
	OUT threshold_timestamp timestamp with time zone,
	OUT threshold_xid xid,
	OUT map_entries_used integer,
	OUT window_seconds_covered integer,
	OUT probes bigint,
	OUT probe_p50_us double precision,
	OUT probe_p99_us double precision,
	OUT probe_max_us double precision,
	OUT lock_held_pct double precision,
	OUT lock_ops_per_sec_estimate double precision,
	OUT cpu_share_of_active double precision,
	OUT avg_active_backends double precision,
	OUT oldsnapshot_timemap_samples bigint,
	OUT procarray_samples bigint,
	OUT total_probes bigint,
	OUT total_probe_p50_us double precision,
	OUT total_probe_p99_us double precision,
	OUT total_probe_max_us double precision,
	OUT total_lock_held_pct double precision,
	OUT total_lock_ops_estimate bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_old_snapshot'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE OR REPLACE VIEW @extschema@.pg_contention_old_snapshot AS
	SELECT pg_catalog.current_setting('old_snapshot_threshold', true) AS setting, o.*
	  FROM @extschema@.pg_contention_old_snapshot(NULL::pg_catalog.int4) AS o;

GRANT SELECT ON @extschema@.pg_contention_old_snapshot TO PUBLIC;
