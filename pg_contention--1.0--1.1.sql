/* pg_contention--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_contention UPDATE TO '1.1'" to load this file. \quit

--
-- pg_contention_sampler_status: the memory the sampler's worker holds.
--
DROP VIEW @extschema@.pg_contention_sampler_status;
DROP FUNCTION @extschema@.pg_contention_sampler_status();

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
	OUT history_buckets integer,
	OUT memory_bytes bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_sampler_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_sampler_status AS
	SELECT * FROM @extschema@.pg_contention_sampler_status();

GRANT SELECT ON @extschema@.pg_contention_sampler_status TO PUBLIC;
