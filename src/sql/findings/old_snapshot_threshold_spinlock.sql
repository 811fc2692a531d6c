--
-- Rule old_snapshot_threshold_spinlock (PostgreSQL 13-16): the setting is
-- on, judged by the sampler's probes of its spinlock.  Judged only over at
-- least 400 probes in the window (each comes with 2.5 looks at the lock
-- words: about 10 s of sampling while anything runs, at the default
-- period): a backend preempted while it holds a spinlock is seen holding
-- it for a tick or three, which over a few hundred looks (a server that
-- dozes, or one just started) would weigh like contention.  Fewer: info.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_old_snapshot_threshold_spinlock(
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
	SELECT p.*, 400 AS min_probes
	  FROM @extschema@.pg_contention_findings_params(window_length) AS p
),
oldsnap AS MATERIALIZED (
	SELECT o.* FROM params, @extschema@.pg_contention_old_snapshot(
			  least(params.w_s, pg_catalog.date_part('epoch', pg_catalog.current_setting('pg_contention.history_seconds', true)::interval)::integer)) AS o
),
oldsnap_findings AS (
	SELECT 'old_snapshot_threshold_spinlock'::text AS problem,
		   CASE WHEN coalesce(o.probes, 0) < params.min_probes THEN 'info'
				WHEN o.probe_p99_us >= params.probe_critical OR o.lock_held_pct >= params.held_critical THEN 'critical'
				WHEN o.probe_p99_us >= params.probe_warning OR o.lock_held_pct >= params.held_warning THEN 'warning'
				ELSE 'info' END AS severity,
		   'old_snapshot_threshold = ' || pg_catalog.current_setting('old_snapshot_threshold') AS subject,
		   'In the last ' || coalesce(o.window_seconds_covered, 0) || ' s: '
		   || CASE WHEN coalesce(o.probes, 0) = 0 THEN 'no probe of its spinlock yet'
				   ELSE 'its spinlock took ' || coalesce(pg_catalog.round(o.probe_p99_us::numeric, 1)::text, '?')
						|| ' us at the 99th percentile (max '
						|| coalesce(pg_catalog.round(o.probe_max_us::numeric, 1)::text, '?') || ' us) over '
						|| o.probes || ' probes, and was held in '
						|| pg_catalog.to_char(coalesce(o.lock_held_pct, 0), 'FM990.0') || '% of reads'
						|| CASE WHEN o.probes < params.min_probes
								THEN ' (too few probes to judge: it takes ' || params.min_probes
									 || ', about 10 s of sampling while anything runs)'
								ELSE '' END END
		   || coalesce('; ' || pg_catalog.to_char(o.lock_ops_per_sec_estimate, 'FM999,999,990') || ' snapshot and page operations/s', '')
		   || coalesce('; ' || pg_catalog.to_char(o.avg_active_backends, 'FM990.0') || ' active backends, '
					   || pg_catalog.to_char(100 * o.cpu_share_of_active, 'FM990') || '% of them on CPU', '')
		   || '.' AS evidence,
		   'Set old_snapshot_threshold = -1 and restart: with it on, every snapshot and page prune takes a global spinlock that shows only as CPU; PostgreSQL 17 removed the feature. Bound long snapshots with statement_timeout and idle_in_transaction_session_timeout instead.' AS advice,
		   jsonb_build_object('setting_minutes', o.setting_minutes, 'probes', o.probes,
							  'probe_p99_us', o.probe_p99_us, 'probe_max_us', o.probe_max_us,
							  'lock_held_pct', o.lock_held_pct,
							  'operations_per_second', o.lock_ops_per_sec_estimate,
							  'cpu_share_of_active', o.cpu_share_of_active,
							  'avg_active_backends', o.avg_active_backends,
							  'window_seconds', o.window_seconds_covered) AS details,
		   pg_catalog.pg_postmaster_start_time() AS since
	  FROM oldsnap AS o, params
	 WHERE o.applicable AND o.enabled
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM oldsnap_findings AS f;
END
$$;
