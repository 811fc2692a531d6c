--
-- The sampler (a background worker): whether it runs, its period, how
-- many samples it has taken, when it last sampled and whether it is late,
-- and whether it dozes (one tick a second while there is nothing to sample).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_sampler_status(
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
	OUT memory_bytes bigint,
	OUT last_tick_at timestamp with time zone,
	OUT next_tick_due timestamp with time zone,
	OUT stale boolean,
	OUT dozing boolean,
	OUT dozes bigint,
	OUT doze_wakeups bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_sampler_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW @extschema@.pg_contention_sampler_status AS
	SELECT * FROM @extschema@.pg_contention_sampler_status();

GRANT SELECT ON @extschema@.pg_contention_sampler_status TO PUBLIC;
