--
-- Rule sampler_stale (warning): the sampler has not sampled when it said
-- it would (pg_contention_sampler_status.stale): the wait profile and the
-- per-second history stop at its last tick, so every finding that reads
-- them is blind since.  It says so first among the warnings.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_sampler_stale(
	window_length interval DEFAULT NULL,
	OUT problem text,
	OUT severity text,
	OUT subject text,
	OUT evidence text,
	OUT advice text,
	OUT details jsonb,
	OUT since timestamp with time zone
)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH params AS MATERIALIZED (
	-- Only to check the argument as every rule does: staleness is now.
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
)
SELECT 'sampler_stale'::text AS problem, 'warning'::text AS severity,
	   'the pg_contention sampler' || CASE WHEN s.running THEN ' (pid ' || s.pid || ')'
										   ELSE ' (not running)' END AS subject,
	   CASE WHEN s.last_tick_at IS NULL THEN 'It has not sampled since the server started'
			ELSE 'It last sampled at ' || pg_catalog.to_char(s.last_tick_at, 'HH24:MI:SS') || ', '
				 || @extschema@.pg_contention_duration(params.now - s.last_tick_at) || ' ago' END
	   || '; its next sample was due at ' || pg_catalog.to_char(s.next_tick_due, 'HH24:MI:SS')
	   || ' (period ' || s.period_ms || ' ms).  The wait profile and the per-second history stop there: '
	   || 'the findings that read them (subxact_overflow''s lookups, subtrans_slru_contention, '
	   || 'old_snapshot_threshold_spinlock) cannot see what happened since, and their silence means nothing.' AS evidence,
	   CASE WHEN s.running THEN
			'Look at process ' || s.pid || ' (pg_stat_activity.backend_type pg_contention sampler, and the operating system: '
			|| 'stopped by a signal or a debugger, swapping, a disk that hangs while it saves pg_stat_tmp/pg_contention.stat); '
			|| 'SELECT pg_terminate_backend(' || s.pid || ') makes the postmaster start a new one within a second.'
	   ELSE 'The sampler exited and has not come back: the server log says why; the postmaster restarts it within a second unless it keeps failing.'
	   END AS advice,
	   jsonb_build_object('pid', s.pid, 'last_tick_at', s.last_tick_at, 'next_tick_due', s.next_tick_due,
						  'period_ms', s.period_ms,
						  'seconds_since_last_tick',
						  pg_catalog.round(pg_catalog.date_part('epoch', params.now - s.last_tick_at)::numeric, 1)) AS details,
	   coalesce(s.last_tick_at, s.started_at) AS since
  FROM @extschema@.pg_contention_sampler_status AS s, params
 WHERE s.stale;
END
$$;
