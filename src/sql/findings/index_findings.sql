--
-- The index rules' findings one by one: a row per statement and index
-- (dead_tuple_index_scan, hot_chain_scan), where pg_contention_findings
-- has one per cause (details.cause: one holder's dead entries in a
-- thousand indexes are one finding there, its costliest row).  Most
-- severe first, then by cost (dead entries per execution, buffers per
-- row), then by index: the order each cause's rows are counted in.
--
-- horizon_roots: the root holders as pg_contention_findings read them for
-- every rule of its evaluation; NULL: read now.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_index_findings(
	window_length interval DEFAULT NULL,
	horizon_roots jsonb DEFAULT NULL,
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
WITH horizon AS MATERIALIZED (
	SELECT coalesce(horizon_roots, (SELECT coalesce(jsonb_agg(r), '[]')
									  FROM @extschema@.pg_contention_horizon_roots(window_length, NULL::pg_catalog.jsonb) AS r))
		   AS roots
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM (SELECT * FROM @extschema@.pg_contention_rule_dead_tuple_index_scan(window_length, (SELECT h.roots FROM horizon AS h), false)
		UNION ALL
		SELECT * FROM @extschema@.pg_contention_rule_hot_chain_scan(window_length, (SELECT h.roots FROM horizon AS h), false)) AS f
 ORDER BY CASE f.severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
		  coalesce((f.details ->> 'dead_per_execution')::float8, (f.details ->> 'buffers_per_row')::float8) DESC NULLS LAST,
		  f.details ->> 'index', f.subject;
END
$$;

CREATE OR REPLACE VIEW @extschema@.pg_contention_index_findings AS
	SELECT * FROM @extschema@.pg_contention_index_findings(NULL::pg_catalog.interval, NULL::pg_catalog.jsonb);

GRANT SELECT ON @extschema@.pg_contention_index_findings TO PUBLIC;
