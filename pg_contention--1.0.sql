/* pg_contention--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_contention" to load this file. \quit

--
-- Live subtransaction state of every backend with a transaction open.
--
CREATE FUNCTION @extschema@.pg_contention_subxact(
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT application_name text,
	OUT backend_type text,
	OUT state text,
	OUT xact_start timestamp with time zone,
	OUT top_xid xid,
	OUT backend_xmin xid,
	OUT subxact_count integer,
	OUT subxact_overflowed boolean,
	OUT query_id bigint,
	OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_subxact'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW @extschema@.pg_contention_subxact AS
	SELECT s.pid,
		   d.datname,
		   r.rolname AS usename,
		   s.application_name,
		   s.backend_type,
		   s.state,
		   s.xact_start,
		   s.top_xid,
		   s.backend_xmin,
		   s.subxact_count,
		   s.subxact_overflowed,
		   s.query_id,
		   s.query
	  FROM @extschema@.pg_contention_subxact() AS s
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.datid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.usesysid;

GRANT SELECT ON @extschema@.pg_contention_subxact TO PUBLIC;

--
-- Subtransaction-cache overflow events: one per top-level transaction whose
-- cache overflowed, naming the statement that was running.
--
CREATE FUNCTION @extschema@.pg_contention_overflow_events(
	OUT event_time timestamp with time zone,
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT application_name text,
	OUT top_xid xid,
	OUT query_id bigint,
	OUT nested_query_id bigint,
	OUT nesting_depth integer,
	OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_overflow_events'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_overflow_events AS
	SELECT e.event_time,
		   e.pid,
		   d.datname,
		   r.rolname AS usename,
		   e.application_name,
		   e.top_xid,
		   e.query_id,
		   e.nested_query_id,
		   e.nesting_depth,
		   e.query
	  FROM @extschema@.pg_contention_overflow_events() AS e
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = e.datid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = e.usesysid;

GRANT SELECT ON @extschema@.pg_contention_overflow_events TO PUBLIC;

--
-- Per-statement counters: calls, calls on suboverflowed snapshots, calls on
-- a hot standby, overflow events caused.
--
CREATE FUNCTION @extschema@.pg_contention_statements(
	OUT userid oid,
	OUT dbid oid,
	OUT query_id bigint,
	OUT calls bigint,
	OUT suboverflowed_calls bigint,
	OUT standby_calls bigint,
	OUT overflow_events bigint,
	OUT first_seen timestamp with time zone,
	OUT last_seen timestamp with time zone,
	OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_statements'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_statements AS
	SELECT s.userid,
		   r.rolname AS usename,
		   s.dbid,
		   d.datname,
		   s.query_id,
		   s.calls,
		   s.suboverflowed_calls,
		   s.standby_calls,
		   s.overflow_events,
		   s.first_seen,
		   s.last_seen,
		   s.query
	  FROM @extschema@.pg_contention_statements() AS s
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.dbid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.userid;

GRANT SELECT ON @extschema@.pg_contention_statements TO PUBLIC;

--
-- Capacities and fill of the bounded stores, with their eviction and drop
-- counters.
--
CREATE FUNCTION @extschema@.pg_contention_info(
	OUT stats_reset timestamp with time zone,
	OUT statements_max integer,
	OUT statements integer,
	OUT statement_evictions bigint,
	OUT events_max integer,
	OUT events_written bigint,
	OUT events_dropped bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_info AS
	SELECT * FROM @extschema@.pg_contention_info();

GRANT SELECT ON @extschema@.pg_contention_info TO PUBLIC;

--
-- The sampler: wait profile, per-second history, and the worker's status.
--
CREATE FUNCTION @extschema@.pg_contention_waits(
	OUT dbid oid,
	OUT query_id bigint,
	OUT wait_event_type text,
	OUT wait_event text,
	OUT samples bigint,
	OUT share double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_waits'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_waits AS
	SELECT d.datname,
		   w.dbid,
		   w.query_id,
		   w.wait_event_type,
		   w.wait_event,
		   w.samples,
		   w.share
	  FROM @extschema@.pg_contention_waits() AS w
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = w.dbid;

GRANT SELECT ON @extschema@.pg_contention_waits TO PUBLIC;

CREATE FUNCTION @extschema@.pg_contention_history(
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
	OUT subtrans_reads bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_history'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_history AS
	SELECT * FROM @extschema@.pg_contention_history();

GRANT SELECT ON @extschema@.pg_contention_history TO PUBLIC;

CREATE FUNCTION @extschema@.pg_contention_sampler_status(
	OUT running boolean,
	OUT pid integer,
	OUT started_at timestamp with time zone,
	OUT enabled boolean,
	OUT period_ms integer,
	OUT ticks bigint,
	OUT last_tick_us double precision,
	OUT max_tick_us double precision,
	OUT mean_tick_us double precision,
	OUT profile_entries integer,
	OUT profile_max integer,
	OUT profile_evictions bigint,
	OUT history_buckets integer
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_sampler_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_sampler_status AS
	SELECT * FROM @extschema@.pg_contention_sampler_status();

GRANT SELECT ON @extschema@.pg_contention_sampler_status TO PUBLIC;

--
-- Forget all statements, events, the wait profile and the history
-- (superuser, or an explicit GRANT).
--
CREATE FUNCTION @extschema@.pg_contention_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_contention_reset'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_reset() FROM PUBLIC;
