--
-- Who pays for the findings (1.4): the statements that paid for a problem
-- some finding names, left out as each finding leaves out its own culprit
-- (pg_contention_victims_of): the payers of the overflows that
-- subxact_overflow names (not its culprits' own statements: their pids,
-- applications and query ids), and the dead index entries visited behind
-- each holder that xmin_horizon_held or dead_tuple_index_scan names.  A
-- problem without a finding has no payer here, and nobody is shown paying
-- for a finding whose evidence says no one paid: what pg_contention top
-- and the HTML report list beside the findings.  The findings are the
-- incidents worker's last evaluation when it is the caller's answer, else
-- evaluated now (pg_contention_findings_latest).  One row per victim
-- statement (and index), whichever findings it paid for.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_findings_victims(
	window_length interval DEFAULT NULL,
	OUT kind text,
	OUT application_name text,
	OUT userid oid,
	OUT usename name,
	OUT dbid oid,
	OUT datname name,
	OUT query_id bigint,
	OUT query text,
	OUT indexrelid oid,
	OUT executions bigint,
	OUT paid bigint
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
WITH findings AS MATERIALIZED (
	SELECT f.problem, f.details, row_number() OVER () AS n
	  FROM @extschema@.pg_contention_findings_latest() AS f
	 WHERE f.problem IN ('subxact_overflow', 'xmin_horizon_held', 'dead_tuple_index_scan')
),
-- The overflows' culprits, as subxact_overflow passes them.
overflow_culprits AS (
	SELECT coalesce(jsonb_agg(jsonb_build_object(
			   'culprit', f.n::text,
			   'pids', (f.details -> 'pids') || coalesce(f.details -> 'earlier_run_pids', '[]'),
			   'query_ids', coalesce(f.details -> 'query_ids', '[]'::jsonb)
							|| jsonb_build_array(f.details -> 'query_id', f.details -> 'nested_query_id'))), '[]'::jsonb) AS list
	  FROM findings AS f
	 WHERE f.problem = 'subxact_overflow' AND jsonb_typeof(f.details -> 'pids') = 'array'
),
-- The holders whose hold some lookup paid for: xmin_horizon_held with an
-- index finding of its own, and the holders index findings name.
holder_culprits AS (
	SELECT coalesce(jsonb_agg(DISTINCT jsonb_build_object('culprit', h.pid::text, 'pids', jsonb_build_array(h.pid))), '[]'::jsonb) AS list
	  FROM (SELECT f.details -> 'pid' AS pid
			  FROM findings AS f
			 WHERE f.problem = 'xmin_horizon_held'
			   AND jsonb_typeof(f.details -> 'pid') = 'number'
			   AND jsonb_typeof(f.details -> 'index_findings') = 'array'
			   AND jsonb_array_length(f.details -> 'index_findings') > 0
			UNION
			SELECT f.details #> '{holder,pid}'
			  FROM findings AS f
			 WHERE f.problem = 'dead_tuple_index_scan'
			   AND jsonb_typeof(f.details #> '{holder,pid}') = 'number') AS h
),
victims AS (
	SELECT v.* FROM overflow_culprits AS c,
		   @extschema@.pg_contention_victims_of(window_length, c.list, 'suboverflowed_snapshots'::pg_catalog.text) AS v
	 WHERE jsonb_array_length(c.list) > 0
	UNION ALL
	SELECT v.* FROM holder_culprits AS c,
		   @extschema@.pg_contention_victims_of(window_length, c.list, 'dead_index_entries'::pg_catalog.text) AS v
	 WHERE jsonb_array_length(c.list) > 0
)
SELECT DISTINCT ON (v.kind, v.application_name, v.userid, v.dbid, v.query_id, v.indexrelid)
	   v.kind, v.application_name, v.userid, v.usename, v.dbid, v.datname,
	   v.query_id, v.query, v.indexrelid, v.executions, v.paid
  FROM victims AS v
 ORDER BY v.kind, v.application_name, v.userid, v.dbid, v.query_id, v.indexrelid;
END
$$;
