/* pg_contention--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_contention UPDATE TO '1.2'" to load this file. \quit

-- 1.2 keeps the stores across restarts: pg_contention_info says when they
-- were last saved and loaded.
DROP VIEW @extschema@.pg_contention_info;
DROP FUNCTION @extschema@.pg_contention_info();

--
-- Capacities and fill of the bounded stores, with their eviction and drop
-- counters, and when they were last saved to and loaded from their file.
--
CREATE FUNCTION @extschema@.pg_contention_info(
	OUT stats_reset timestamp with time zone,
	OUT statements_max integer,
	OUT statements integer,
	OUT statement_evictions bigint,
	OUT events_max integer,
	OUT events_written bigint,
	OUT events_dropped bigint,
	OUT last_saved timestamp with time zone,
	OUT last_loaded timestamp with time zone,
	OUT loaded_file_saved_at timestamp with time zone
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_info AS
	SELECT * FROM @extschema@.pg_contention_info();

GRANT SELECT ON @extschema@.pg_contention_info TO PUBLIC;
