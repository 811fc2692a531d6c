--
-- What the overflow costs, for the two rules that judge it
-- (subxact_overflow, subtrans_slru_contention): the readers' pg_subtrans
-- lookups (the Subtrans SLRU accesses less those the XIDs assigned can
-- account for as their parent records: pg_contention_history's
-- subtrans_reader_lookups) and the SubtransSLRU/SubtransBuffer wait samples
-- of the window's history seconds; whether an overflow was seen in the
-- window; their level; and the executions that ran on suboverflowed
-- snapshots (the victims), each with the sentence the evidence uses.
--
-- The level: critical at subtrans_wait_critical, warning at
-- subtrans_wait_warning or, with an overflow seen (an overflowed backend
-- in the history, an overflow event, an execution on a suboverflowed
-- snapshot), at subtrans_lookups_warning readers' lookups per second; else
-- info.  Without an overflow, lookups alone are never more than info.
-- An overflow that has ended is info too (the findings describe now):
-- on a primary, no backend is overflowed now and none was for
-- pg_contention.overflow_ended_after (overflow_ended_at: the end of the
-- last second one was seen in, or the last overflow event); a standby,
-- which cannot see the primary's transactions end, when its readers have
-- neither looked up pg_subtrans nor waited on it for as long (the end of
-- the last second they did), or at once when the primary runs no
-- transaction (primary_idle).
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
	OUT victims_text text,
	OUT slru_accesses numeric,
	OUT xids_assigned numeric,
	OUT overflow_seen boolean,
	OUT lookups_past_warning boolean,
	OUT overflow_ended_at timestamp with time zone,
	OUT primary_idle boolean
)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
cost AS (
	SELECT coalesce(sum(h.subtrans_reader_lookups), 0) AS lookups,
		   coalesce(sum(h.subtrans_lookups), 0) AS slru_accesses,
		   coalesce(sum(h.xids_assigned), 0) AS xids_assigned,
		   count(*) FILTER (WHERE h.subtrans_reader_lookups > 0 OR h.max_overflowed_backends > 0) AS busy_seconds,
		   min(h.bucket_start) FILTER (WHERE h.max_overflowed_backends > 0) AS first_overflow_second,
		   max(h.bucket_start) FILTER (WHERE h.max_overflowed_backends > 0) AS last_overflow_second,
		   max(h.bucket_start) FILTER (WHERE h.subtrans_reader_lookups > 0
										  OR h.subtrans_slru_samples + h.subtrans_buffer_samples > 0) AS last_cost_second,
		   coalesce(sum(h.subtrans_slru_samples::numeric + h.subtrans_buffer_samples), 0) AS wait_samples,
		   coalesce(sum(pg_catalog.round(h.avg_active_backends * h.ticks)), 0) AS active_samples
	  FROM params, @extschema@.pg_contention_history(params.cutoff) AS h
	 WHERE h.bucket_start >= params.cutoff
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
					 || count(DISTINCT r.stmt_key) FILTER (WHERE r.suboverflowed_calls > 0)
						+ count(*) FILTER (WHERE r.suboverflowed_calls > 0 AND r.stmt_key IS NULL)
					 || ' statement'
					 || CASE WHEN count(DISTINCT r.stmt_key) FILTER (WHERE r.suboverflowed_calls > 0)
								  + count(*) FILTER (WHERE r.suboverflowed_calls > 0 AND r.stmt_key IS NULL) = 1
							 THEN '' ELSE 's' END
					 || ' ran on suboverflowed snapshots' END AS text
	  FROM params,
		   -- A statement is a normalised text in a database: query ids that
		   -- differ only by parameter types count once (a masked text, NULL
		   -- here, counts once per row: it cannot be compared).
		   LATERAL (SELECT r0.*,
						   CASE WHEN r0.query <> '<insufficient privilege>'
								THEN r0.dbid::text || ':' || r0.query END AS stmt_key
					  FROM @extschema@.pg_contention_recent(params.w_s, true, false, true, false) AS r0) AS r
	 WHERE r.indexrelid IS NULL
),
-- An overflow in the window: a backend seen overflowed, an overflow
-- event, or an execution on a suboverflowed snapshot (on a standby, the
-- primary's overflow shows only there).
overflow AS (
	SELECT c.first_overflow_second IS NOT NULL OR v.calls > 0 OR e.last_event IS NOT NULL AS seen,
		   c.last_cost_second + interval '1 second' AS cost_last_seen,
		   -- A standby whose primary runs no transaction now (as replay
		   -- knows): a snapshot taken now is not suboverflowed.
		   params.standby AND (SELECT pg_catalog.pg_snapshot_xmin(x.snap) = pg_catalog.pg_snapshot_xmax(x.snap)
								 FROM (SELECT pg_catalog.pg_current_snapshot() AS snap) AS x) AS primary_idle,
		   greatest(c.last_overflow_second + interval '1 second', e.last_event) AS last_seen,
		   EXISTS (SELECT 1 FROM @extschema@.pg_contention_subxact() AS s WHERE s.subxact_overflowed) AS now_overflowed
	  FROM cost AS c, victims AS v, params,
		   LATERAL (SELECT max(e0.event_time) AS last_event
					  FROM @extschema@.pg_contention_overflow_events() AS e0
					 WHERE e0.event_time >= params.cutoff) AS e
),
-- Ended: seen in the window, over for overflow_ended_after, on a primary.
overflow_end AS (
	SELECT o.*,
		   CASE WHEN o.seen AND NOT params.standby AND NOT o.now_overflowed
					 AND o.last_seen <= params.now - params.overflow_ended_after
				THEN o.last_seen
				-- A standby cannot see the primary's transactions end: what
				-- it sees end is the cost, its readers' lookups and waits.
				WHEN o.seen AND params.standby
					 AND o.cost_last_seen <= params.now - params.overflow_ended_after
				THEN o.cost_last_seen
				WHEN o.seen AND o.primary_idle
				THEN least(coalesce(o.cost_last_seen, params.now), params.now) END AS ended_at
	  FROM overflow AS o, params
),
-- Hysteresis: while an incident of the overflow is open, its bars are at
-- 80%, so that a cost around a bar neither closes nor reopens it at each
-- evaluation (the finding, check and the incident read the same).
bars AS (
	SELECT CASE WHEN EXISTS (SELECT 1 FROM @extschema@.pg_contention_incidents(false, 0::pg_catalog.int8) AS i
							  WHERE i.closed IS NULL
								AND i.problem IN ('subxact_overflow', 'subtrans_slru_contention'))
				THEN 0.8 ELSE 1.0 END::float8 AS factor
),
cost_judged AS (
	SELECT c.*, o.seen AS overflow_seen, o.ended_at, o.primary_idle, b.factor AS bar_factor,
		   c.lookups::float8 / nullif(c.busy_seconds, 0) AS lookup_rate,
		   CASE WHEN c.active_samples >= 100
				THEN 100.0 * c.wait_samples / c.active_samples END AS wait_pct,
		   coalesce(c.lookups::float8 / nullif(c.busy_seconds, 0) >= b.factor * params.lookups_warning, false)
			   AS lookups_past_warning,
		   CASE WHEN o.ended_at IS NOT NULL THEN 'info'
				WHEN c.active_samples >= 100
					 AND 100.0 * c.wait_samples / c.active_samples >= b.factor * params.wait_critical THEN 'critical'
				WHEN (c.active_samples >= 100
					  AND 100.0 * c.wait_samples / c.active_samples >= b.factor * params.wait_warning)
					 OR (o.seen AND c.lookups::float8 / nullif(c.busy_seconds, 0) >= b.factor * params.lookups_warning)
					THEN 'warning'
				ELSE 'info' END AS level
	  FROM cost AS c, overflow_end AS o, params, bars AS b
)
SELECT c.lookups, c.busy_seconds, c.first_overflow_second, c.wait_samples,
	   c.active_samples, c.lookup_rate, c.wait_pct, c.level,
	   pg_catalog.to_char(c.lookups, 'FM999,999,999,999,990') || ' pg_subtrans lookups by readers'
	   || CASE WHEN c.busy_seconds > 0
			   THEN ' (' || pg_catalog.to_char(c.lookup_rate, 'FM999,999,999,990') || '/s over '
					|| c.busy_seconds || ' s)' ELSE '' END
	   || CASE WHEN c.slru_accesses > c.lookups
			   THEN ', beside ' || pg_catalog.to_char(c.slru_accesses - c.lookups, 'FM999,999,999,999,990')
					|| ' Subtrans accesses counted as parent records of the '
					|| pg_catalog.to_char(c.xids_assigned, 'FM999,999,999,999,990') || ' XIDs assigned,'
			   ELSE '' END
	   || ' and ' || pg_catalog.to_char(c.wait_samples, 'FM999,999,999,990')
	   || ' SubtransSLRU/SubtransBuffer wait samples'
	   || CASE WHEN c.wait_pct IS NOT NULL
			   THEN ' (' || pg_catalog.to_char(c.wait_pct, 'FM990.0') || '% of active time)'
			   ELSE ' (too little activity for a share)' END,
	   v.calls, v.first_seen, v.query_ids, v.text,
	   c.slru_accesses, c.xids_assigned, c.overflow_seen, c.lookups_past_warning, c.ended_at,
	   c.primary_idle
  INTO lookups, busy_seconds, first_overflow_second, wait_samples, active_samples,
	   lookup_rate, wait_pct, level, cost_text,
	   victim_calls, victim_first_seen, victim_query_ids, victims_text,
	   slru_accesses, xids_assigned, overflow_seen, lookups_past_warning, overflow_ended_at,
	   primary_idle
  FROM cost_judged AS c, victims AS v;
END
$$;
