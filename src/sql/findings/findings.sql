--
-- Findings: what is wrong now, who causes it, who pays, what to do.  The
-- union of the rules (pg_contention_rule_*, one file each), most severe
-- first, in the order pg_contention_problems() gives.  Each rule is
-- evaluated once, here: a rule that builds on another's findings
-- (subtrans_slru_contention names the overflows, xmin_horizon_held counts
-- the dead index entries it keeps) is given them as an argument, never
-- calls it; the rules that name holders of the xmin horizon are given
-- them as read once.  The index rules' rows (pg_contention_index_findings,
-- one per statement and index) become one finding per cause: a holder's
-- dead entries in a thousand indexes are one line to read, one incident
-- to key.  A rule can be called alone to read or test it.
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
-- The index rules' rows, one per statement and index, in their order
-- (most severe, then costliest, first).
index_rows AS MATERIALIZED (
	SELECT i.*, pg_catalog.row_number() OVER () AS pos
	  FROM @extschema@.pg_contention_index_findings(window_length, (SELECT h.roots FROM horizon AS h)) AS i
),
index_found AS MATERIALIZED (
	SELECT * FROM index_rows AS i WHERE i.problem = 'dead_tuple_index_scan'
),
-- One finding per cause (details.cause, the incidents' key): one holder's
-- dead entries in a thousand indexes are one finding, the costliest row's,
-- which says how many more indexes there are ("and 999 more indexes", as
-- the incident does; or more statements on the one index), the next
-- costliest indexes and where every row is listed; its details count the
-- indexes and list them (touched_count, touched: the first ten, costliest
-- first, as the worker keeps them).
index_keys AS (
	SELECT i.problem, i.details ->> 'cause' AS cause,
		   'database ' || coalesce(i.details ->> 'database_oid', '?') || ' index '
		   || coalesce(i.details ->> 'indexrelid', '?') AS touched,
		   min(i.pos) AS pos,
		   -- the index as its costliest row names it, with that row's cost
		   (pg_catalog.array_agg(
				coalesce(i.details ->> 'index', 'oid ' || coalesce(i.details ->> 'indexrelid', '?'))
				|| coalesce(' in database ' || pg_catalog.quote_ident(nullif(i.details ->> 'database', pg_catalog.current_database())), '')
				|| coalesce(' (' || CASE WHEN i.problem = 'dead_tuple_index_scan'
										 THEN pg_catalog.to_char((i.details ->> 'dead_per_execution')::numeric, 'FM999,999,999,990')
											  || ' dead entries per execution'
										 ELSE pg_catalog.to_char((i.details ->> 'buffers_per_row')::numeric, 'FM999,999,999,990')
											  || ' buffers per row' END || ')', '')
				ORDER BY i.pos))[1] AS label
	  FROM index_rows AS i
	 GROUP BY 1, 2, 3
),
cause_rows AS (
	SELECT i.problem, coalesce(i.details ->> 'cause', '') AS cause, count(*) AS n_rows,
		   count(DISTINCT i.details ->> 'database_oid') AS databases, min(i.since) AS since
	  FROM index_rows AS i
	 GROUP BY 1, 2
),
causes AS (
	SELECT k.*, r.n_rows, r.databases, r.since
	  FROM (SELECT k.problem, coalesce(k.cause, '') AS cause, count(*) AS indexes, min(k.pos) AS first_pos,
				   (pg_catalog.array_agg(k.touched ORDER BY k.pos))[1:10] AS touched,
				   (pg_catalog.array_agg(k.label ORDER BY k.pos))[2:4] AS next_worst
			  FROM index_keys AS k
			 GROUP BY 1, 2) AS k
	  JOIN cause_rows AS r ON r.problem = k.problem AND r.cause = k.cause
),
index_grouped AS (
	SELECT i.problem, i.severity,
		   i.subject || CASE WHEN c.indexes > 1
							 THEN ' (and ' || (c.indexes - 1) || ' more '
								  || CASE WHEN c.indexes = 2 THEN 'index' ELSE 'indexes' END || ')'
							 WHEN c.n_rows > 1
							 THEN ' (and ' || (c.n_rows - 1) || ' more '
								  || CASE WHEN c.n_rows = 2 THEN 'statement' ELSE 'statements' END || ' on it)'
							 ELSE '' END AS subject,
		   i.evidence || CASE WHEN c.indexes > 1
							  THEN ' The same cause touches ' || pg_catalog.to_char(c.indexes, 'FM999,999,999,990') || ' indexes'
								   || CASE WHEN c.databases > 1 THEN ' in ' || c.databases || ' databases' ELSE '' END
								   || '; the next costliest: ' || pg_catalog.array_to_string(c.next_worst, ', ')
								   || '; every one in pg_contention_index_findings.'
							  WHEN c.n_rows > 1
							  THEN ' ' || (c.n_rows - 1) || ' other '
								   || CASE WHEN c.n_rows = 2 THEN 'statement visits' ELSE 'statements visit' END
								   || ' the same index: every one in pg_contention_index_findings.'
							  ELSE '' END AS evidence,
		   i.advice,
		   CASE WHEN c.n_rows > 1
				THEN i.details || jsonb_build_object('touched_count', c.indexes, 'touched', pg_catalog.to_jsonb(c.touched),
													 'statements', c.n_rows)
				ELSE i.details END AS details,
		   c.since
	  FROM causes AS c
	  JOIN index_rows AS i ON i.pos = c.first_pos
),
found AS (
	SELECT * FROM overflow_found
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_subtrans_slru_contention(
		window_length, (SELECT coalesce(jsonb_agg(jsonb_build_object('subject', o.subject, 'details', o.details)), '[]')
						  FROM overflow_found AS o))
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_subxact_near_overflow(window_length)
	UNION ALL SELECT * FROM index_grouped
	UNION ALL SELECT * FROM @extschema@.pg_contention_rule_xmin_horizon_held(
		window_length, (SELECT coalesce(jsonb_agg(jsonb_build_object(
											'severity', i.severity, 'holder', i.details -> 'holder' ->> 'holder',
											'indexrelid', i.details -> 'indexrelid',
											'database_oid', i.details -> 'database_oid')), '[]')
						  FROM index_found AS i),
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
