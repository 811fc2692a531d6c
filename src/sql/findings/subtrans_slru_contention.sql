--
-- Rule subtrans_slru_contention: pg_subtrans waits past their thresholds,
-- or readers' lookups past theirs, named after the overflows that drive
-- them (the subxact_overflow rule's culprits).  Above info only with an
-- overflow in the window or with the waits (pg_contention_subtrans_cost
-- judges); readers' lookups past the bar without an overflow are info.  The
-- advice points at subxact_overflow only when that rule has a finding.
--
-- overflow_findings: the subxact_overflow findings of the same evaluation,
-- a JSON array of {subject, details}, which pg_contention_findings gives
-- it (this rule does not evaluate that one again).  NULL: none.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_subtrans_slru_contention(
	window_length interval,
	overflow_findings jsonb,
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
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
-- Each store once.
history AS MATERIALIZED (
	SELECT h.*
	  FROM params, @extschema@.pg_contention_history(params.cutoff) AS h
	 WHERE h.bucket_start >= params.cutoff
),
subtrans AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_subtrans_cost(window_length)
),
cost_text AS (
	SELECT s.level, s.cost_text AS text, s.lookups, s.lookup_rate, s.wait_samples,
		   s.wait_pct, s.active_samples, s.busy_seconds, s.first_overflow_second,
		   s.slru_accesses, s.xids_assigned, s.overflow_seen, s.lookups_past_warning,
		   s.overflow_ended_at AS ended_at, s.primary_idle
	  FROM subtrans AS s
),
victims AS (
	SELECT s.victim_calls AS calls, s.victim_first_seen AS first_seen,
		   s.victim_query_ids AS query_ids, s.victims_text AS text
	  FROM subtrans AS s
),
overflow_found AS MATERIALIZED (
	SELECT o.value ->> 'subject' AS subject, o.value -> 'details' AS details
	  FROM pg_catalog.jsonb_array_elements(
			   CASE WHEN pg_catalog.jsonb_typeof(overflow_findings) = 'array' THEN overflow_findings ELSE '[]' END) AS o
),
overflow_culprits AS MATERIALIZED (
	SELECT o.subject, (o.details ->> 'overflow_events')::bigint AS events,
		   o.details -> 'query_id' AS query_id, o.details -> 'pids' AS pids
	  FROM overflow_found AS o
	 WHERE o.details ? 'pids'
),
slru_findings AS (
	SELECT 'subtrans_slru_contention'::text AS problem,
		   c.level AS severity,
		   'pg_subtrans, '
		   || CASE WHEN params.standby AND v.calls > 0
				   THEN 'driven by the primary''s overflowed transactions seen through this standby''s snapshots'
				   WHEN (SELECT count(*) FROM overflow_culprits) > 0
				   THEN 'driven by ' || (SELECT string_agg(o.subject, '; ' ORDER BY o.events DESC)
										   FROM (SELECT * FROM overflow_culprits ORDER BY events DESC LIMIT 3) AS o)
				   WHEN c.overflow_seen
				   THEN 'driven by an overflow in the window whose backend is no longer known'
				   ELSE 'with no subtransaction overflow seen in the window' END AS subject,
		   coalesce(CASE WHEN params.standby THEN 'Stopped at ' ELSE 'Ended at ' END
					|| pg_catalog.to_char(c.ended_at, 'HH24:MI:SS') || ', '
					|| @extschema@.pg_contention_duration(pg_catalog.now() - c.ended_at)
					|| CASE WHEN params.standby
							THEN CASE WHEN c.primary_idle
									  THEN ' ago: no transaction runs on the primary now, so new snapshots here are not suboverflowed. '
									  ELSE ' ago: no reader on this standby has looked up pg_subtrans or waited on it since. ' END
							ELSE ' ago: the overflow is over, so new snapshots are not suboverflowed. ' END, '')
		   -- The cost is the window's seconds; the executions are counted
		   -- over the statement store's periods (up to two windows back).
		   || 'In the last ' || params.w_text || ': ' || c.text || '; '
		   || coalesce('from ' || pg_catalog.to_char(coalesce(v.first_seen, params.cutoff), 'HH24:MI:SS')
					   || ' to ' || pg_catalog.to_char(params.now, 'HH24:MI:SS') || ', ', '')
		   || v.text || '.' AS evidence,
		   CASE WHEN c.ended_at IS NOT NULL
				THEN 'Nothing to do now; to keep it from recurring, keep transactions under 64 subtransactions (see subxact_overflow)'
				WHEN (SELECT count(*) FROM overflow_found) > 0
				THEN 'Remove the overflow (see subxact_overflow): fewer than 64 subtransactions per transaction, no per-row EXCEPTION blocks, no driver autosave, smaller batches'
				WHEN c.overflow_seen
				THEN 'Remove the overflow: a transaction took more than 64 subtransactions in the window (its event is older than the window or was overwritten); keep transactions under 64 subtransactions, no per-row EXCEPTION blocks, no driver autosave, smaller batches'
				ELSE 'No subtransaction overflow was seen in the window, so snapshots did not cause this: look for waits on row locks held by subtransactions (XactLockTableWait reads pg_subtrans) and for what waits on SubtransSLRU/SubtransBuffer in pg_contention_waits'
		   END
		   || CASE WHEN params.version_num >= 170000
				   THEN '; on PostgreSQL 17 and later raise subtransaction_buffers (now '
						|| pg_catalog.current_setting('subtransaction_buffers', true) || ', restart needed) to shorten the waits.'
				   ELSE '; before PostgreSQL 17 the pg_subtrans cache has a fixed 32 buffers.' END AS advice,
		   jsonb_build_object('subtrans_lookups', c.lookups,
							  'subtrans_lookups_per_second', pg_catalog.round(c.lookup_rate::numeric),
							  'subtrans_slru_accesses', c.slru_accesses,
							  'xids_assigned', c.xids_assigned,
							  'overflow_seen', c.overflow_seen, 'ended_at', c.ended_at,
							  'subtrans_wait_samples', c.wait_samples,
							  'subtrans_wait_pct', pg_catalog.round(c.wait_pct::numeric, 2),
							  'active_samples', c.active_samples,
							  'suboverflowed_calls', v.calls, 'victim_query_ids', v.query_ids,
							  'culprit_query_ids', (SELECT jsonb_agg(o.query_id) FROM overflow_culprits AS o),
							  'culprit_pids', (SELECT jsonb_agg(p) FROM overflow_culprits AS o,
													  jsonb_array_elements(o.pids) AS p),
							  'window_seconds', params.w_s) AS details,
		   coalesce((SELECT min(h.bucket_start) FROM history AS h
					  WHERE h.subtrans_slru_samples::numeric + h.subtrans_buffer_samples > 0
						 OR h.subtrans_reader_lookups >= params.lookups_warning),
					c.first_overflow_second) AS since
	  FROM cost_text AS c, victims AS v, params
	 WHERE c.level <> 'info' OR c.lookups_past_warning
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM slru_findings AS f;
END
$$;
