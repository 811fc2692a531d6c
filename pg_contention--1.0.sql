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
-- Forget all statements and events (superuser, or an explicit GRANT).
--
CREATE FUNCTION @extschema@.pg_contention_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_contention_reset'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_reset() FROM PUBLIC;
