--
-- The sampler's history: one row per second of the last
-- pg_contention.history_seconds, active backends by wait class and the
-- contention figures of that second.  1.4 adds the XIDs assigned in the
-- second and the Subtrans lookups they cannot account for (the readers':
-- see doc/findings.md, subtrans_slru_contention), and an argument: since,
-- only the seconds from then on (NULL: all), which the function skips
-- before building their rows.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_history(
	since timestamp with time zone DEFAULT NULL,
	OUT bucket_start timestamp with time zone,
	OUT ticks bigint,
	OUT avg_active_backends double precision,
	OUT idle_samples bigint,
	OUT cpu_samples bigint,
	OUT lwlock_samples bigint,
	OUT lock_samples bigint,
	OUT bufferpin_samples bigint,
	OUT io_samples bigint,
	OUT ipc_samples bigint,
	OUT timeout_samples bigint,
	OUT extension_samples bigint,
	OUT client_samples bigint,
	OUT other_samples bigint,
	OUT subtrans_slru_samples bigint,
	OUT subtrans_buffer_samples bigint,
	OUT oldsnapshot_timemap_samples bigint,
	OUT procarray_samples bigint,
	OUT spindelay_samples bigint,
	OUT max_overflowed_backends integer,
	OUT subtrans_lookups bigint,
	OUT subtrans_reads bigint,
	OUT horizon_xid_age bigint,
	OUT xids_assigned bigint,
	OUT subtrans_reader_lookups bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_history'
LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW @extschema@.pg_contention_history AS
	SELECT * FROM @extschema@.pg_contention_history(NULL::pg_catalog.timestamptz);

GRANT SELECT ON @extschema@.pg_contention_history TO PUBLIC;
