--
-- What the overflow costs, for the two rules that judge it
-- (subxact_overflow, subtrans_slru_contention): the pg_subtrans lookups
-- and SubtransSLRU/SubtransBuffer wait samples of the window's history
-- seconds, their level, and the executions that ran on suboverflowed
-- snapshots (the victims), each with the sentence the evidence uses.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_subtrans_cost(
	window_length interval DEFAULT NULL,
	OUT lookups numeric,
	OUT busy_seconds bigint,
	OUT first_overflow_second timestamp with time zone,
	OUT wait_samples numeric,
	OUT active_samples double precision,
	OUT lookup_rate double precision,
	OUT wait_pct double precision,
	OUT level text,
	OUT cost_text text,
	OUT victim_calls numeric,
	OUT victim_first_seen timestamp with time zone,
	OUT victim_query_ids jsonb,
	OUT victims_text text
)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
cost AS (
	SELECT coalesce(sum(h.subtrans_lookups), 0) AS lookups,
		   count(*) FILTER (WHERE h.subtrans_lookups > 0 OR h.max_overflowed_backends > 0) AS busy_seconds,
		   min(h.bucket_start) FILTER (WHERE h.max_overflowed_backends > 0) AS first_overflow_second,
		   coalesce(sum(h.subtrans_slru_samples + h.subtrans_buffer_samples), 0) AS wait_samples,
		   coalesce(sum(pg_catalog.round(h.avg_active_backends * h.ticks)), 0) AS active_samples
	  FROM params, @extschema@.pg_contention_history() AS h
	 WHERE h.bucket_start >= params.cutoff
),
cost_judged AS (
	SELECT c.*,
		   c.lookups::float8 / nullif(c.busy_seconds, 0) AS lookup_rate,
		   CASE WHEN c.active_samples >= 100
				THEN 100.0 * c.wait_samples / c.active_samples END AS wait_pct,
		   CASE WHEN c.active_samples >= 100
					 AND 100.0 * c.wait_samples / c.active_samples >= params.wait_critical THEN 'critical'
				WHEN (c.active_samples >= 100
					  AND 100.0 * c.wait_samples / c.active_samples >= params.wait_warning)
					 OR c.lookups::float8 / nullif(c.busy_seconds, 0) >= params.lookups_warning THEN 'warning'
				ELSE 'info' END AS level
	  FROM cost AS c, params
),
victims AS (
	SELECT coalesce(sum(r.suboverflowed_calls), 0) AS calls,
		   min(r.period_start) FILTER (WHERE r.suboverflowed_calls > 0) AS first_seen,
		   coalesce(jsonb_agg(r.query_id ORDER BY r.suboverflowed_calls DESC)
						FILTER (WHERE r.suboverflowed_calls > 0 AND r.query_id IS NOT NULL), '[]') AS query_ids,
		   CASE WHEN coalesce(sum(r.suboverflowed_calls), 0) = 0
				THEN 'no execution ran on a suboverflowed snapshot'
				ELSE pg_catalog.to_char(sum(r.suboverflowed_calls), 'FM999,999,999,990') || ' execution'
					 || CASE WHEN sum(r.suboverflowed_calls) = 1 THEN '' ELSE 's' END || ' of '
					 || count(*) FILTER (WHERE r.suboverflowed_calls > 0) || ' statement'
					 || CASE WHEN count(*) FILTER (WHERE r.suboverflowed_calls > 0) = 1 THEN '' ELSE 's' END
					 || ' ran on suboverflowed snapshots' END AS text
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true) AS r
	 WHERE r.indexrelid IS NULL
)
SELECT c.lookups, c.busy_seconds, c.first_overflow_second, c.wait_samples,
	   c.active_samples, c.lookup_rate, c.wait_pct, c.level,
	   pg_catalog.to_char(c.lookups, 'FM999,999,999,999,990') || ' pg_subtrans lookups'
	   || CASE WHEN c.busy_seconds > 0
			   THEN ' (' || pg_catalog.to_char(c.lookup_rate, 'FM999,999,999,990') || '/s over '
					|| c.busy_seconds || ' s)' ELSE '' END
	   || ' and ' || pg_catalog.to_char(c.wait_samples, 'FM999,999,999,990')
	   || ' SubtransSLRU/SubtransBuffer wait samples'
	   || CASE WHEN c.wait_pct IS NOT NULL
			   THEN ' (' || pg_catalog.to_char(c.wait_pct, 'FM990.0') || '% of active time)'
			   ELSE ' (too little activity for a share)' END,
	   v.calls, v.first_seen, v.query_ids, v.text
  INTO lookups, busy_seconds, first_overflow_second, wait_samples, active_samples,
	   lookup_rate, wait_pct, level, cost_text,
	   victim_calls, victim_first_seen, victim_query_ids, victims_text
  FROM cost_judged AS c, victims AS v;
END
$$;
