--
-- Findings: what is wrong now, who causes it, who pays, what to do.  The
-- union of the rules (pg_contention_rule_*, one file each), most severe
-- first, in the order pg_contention_problems() gives.  Each rule is
-- evaluated once, here: a rule that builds on another's findings
-- (subtrans_slru_contention names the overflows, xmin_horizon_held counts
-- the dead index entries it keeps) is given them as an argument, never
-- calls it; the rules that name holders of the xmin horizon are given
-- them as read once.  The index rules give one finding per cause
-- (pg_contention_index_findings has their row per statement and index): a
-- holder's dead entries in a thousand indexes are one line to read, one
-- incident to key.  A rule can be called alone to read or test it.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_findings(
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
-- Compiling these queries would take longer than running them; planning
-- them takes longer than running them too, so one plan serves the whole
-- session (PL/pgSQL keeps it; a SQL function would plan at every call).
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
-- The holders of the xmin horizon, read once: the three rules that name
-- them name the same ones.
WITH horizon AS MATERIALIZED (
	SELECT coalesce(jsonb_agg(r), '[]') AS roots
	  FROM @extschema@.pg_contention_horizon_roots(window_length, NULL::pg_catalog.jsonb) AS r
),
overflow_found AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_rule_subxact_overflow(window_length)
),
-- The index rules, one finding per cause (details.cause, the incidents'
-- key): one holder's dead entries in a thousand indexes are one finding,
-- which counts them and names the costliest (pg_contention_cause_group);
-- pg_contention_index_findings lists every row.
index_found AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_rule_dead_tuple_index_scan(window_length, (SELECT h.roots FROM horizon AS h), true)
	UNION ALL
	SELECT * FROM @extschema@.pg_contention_rule_hot_chain_scan(window_length, (SELECT h.roots FROM horizon AS h), true)
),
found AS (
	SELECT * FROM overflow_found
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_subtrans_slru_contention(
		window_length, (SELECT coalesce(jsonb_agg(jsonb_build_object('subject', o.subject, 'details', o.details)), '[]')
						  FROM overflow_found AS o))
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_subxact_near_overflow(window_length)
	UNION ALL SELECT * FROM index_found
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_xmin_horizon_held(
		window_length, (SELECT coalesce(jsonb_agg(jsonb_build_object(
											'severity', i.severity, 'holder', i.details -> 'holder' ->> 'holder',
											'indexrelid', i.details -> 'indexrelid',
											'database_oid', i.details -> 'database_oid',
											'indexes', coalesce(i.details -> 'touched_count', '1'))), '[]')
						  FROM index_found AS i
						 WHERE i.problem = 'dead_tuple_index_scan'),
		(SELECT h.roots FROM horizon AS h))
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_old_snapshot_threshold_spinlock(window_length)
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_sampler_stale(window_length)
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM found AS f
  LEFT JOIN @extschema@.pg_contention_problems() AS p ON p.problem = f.problem
 ORDER BY CASE f.severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
		  p.rank NULLS LAST, f.since NULLS LAST, f.subject;
END
$$;

CREATE OR REPLACE VIEW @extschema@.pg_contention_findings AS
	SELECT * FROM @extschema@.pg_contention_findings(NULL::pg_catalog.interval);

GRANT SELECT ON @extschema@.pg_contention_findings TO PUBLIC;
