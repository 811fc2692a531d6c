--
-- Rule subxact_near_overflow (info): transactions of one user and database
-- that come close to the 64-subtransaction cache without overflowing.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_subxact_near_overflow(
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
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
-- Who overflowed in the window: only (database, user) is asked of them.
events AS MATERIALIZED (
	SELECT DISTINCT e.datid, e.usesysid
	  FROM @extschema@.pg_contention_overflow_events() AS e, params
	 WHERE e.event_time >= params.cutoff
),
recent AS MATERIALIZED (
	-- Texts are shortened only where a finding shows them: 5,000 texts
	-- through a regular expression would cost more than everything else.
	SELECT r.*, d.datname, u.rolname AS usename
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true, false, true, false) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = r.userid
	 -- the statements' rows (not thousands of indexes' with dead entries)
	 WHERE r.indexrelid IS NULL
),
near_overflow_findings AS (
	-- Per database and user: one transaction pattern shows in each of its
	-- statements.  Silent where the same pattern overflowed in the window.
	SELECT 'subxact_near_overflow'::text AS problem, 'info'::text AS severity,
		   'transactions of user ' || coalesce(n.usename, n.userid::text) || ' in database '
		   || coalesce(n.datname, n.dbid::text) || ', for example statement '
		   || @extschema@.pg_contention_shorten(n.top_text)
		   || coalesce(' (query id ' || n.top_query_id || ')', '') AS subject,
		   pg_catalog.to_char(n.near_calls, 'FM999,999,999,990') || ' executions of ' || n.statements
		   || ' statement' || CASE WHEN n.statements = 1 THEN '' ELSE 's' END || ' from '
		   || pg_catalog.to_char(n.period_start, 'HH24:MI:SS') || ' to '
		   || pg_catalog.to_char(n.period_end, 'HH24:MI:SS') || ' ended in a transaction with more than '
		   || params.warn_level || ' subtransaction XIDs cached (at most ' || n.max_subxacts
		   || ' of 64), without overflowing.' AS evidence,
		   'These transactions come close to the 64-subtransaction cache; a few more and every snapshot in the cluster is suboverflowed: fewer savepoints or EXCEPTION blocks per transaction, smaller batches.' AS advice,
		   jsonb_build_object('database_oid', n.dbid::bigint, 'user_oid', n.userid::bigint, 'query_ids', n.query_ids,
							  'near_overflow_calls', n.near_calls, 'max_subxacts', n.max_subxacts,
							  'warn_level', params.warn_level,
							  'period_start', n.period_start, 'period_end', n.period_end) AS details,
		   n.period_start AS since
	  FROM (SELECT r.dbid, r.userid, min(r.datname) AS datname, min(r.usename) AS usename,
				   -- A statement is a normalised text: query ids that differ
				   -- only by parameter types count once (a masked text
				   -- cannot be compared: once per row).
				   sum(r.near_overflow_calls) AS near_calls,
				   count(DISTINCT nullif(r.query, '<insufficient privilege>'))
				   + count(*) FILTER (WHERE r.query = '<insufficient privilege>') AS statements,
				   max(r.max_subxacts) AS max_subxacts,
				   min(r.period_start) AS period_start, max(r.period_end) AS period_end,
				   (pg_catalog.array_agg(r.query ORDER BY r.near_overflow_calls DESC))[1] AS top_text,
				   (pg_catalog.array_agg(r.query_id ORDER BY r.near_overflow_calls DESC))[1] AS top_query_id,
				   jsonb_agg(r.query_id ORDER BY r.near_overflow_calls DESC) AS query_ids
			  FROM recent AS r
			 WHERE r.indexrelid IS NULL AND r.near_overflow_calls > 0
			   AND NOT EXISTS (SELECT 1 FROM events AS e
								WHERE e.datid = r.dbid AND e.usesysid = r.userid)
			 GROUP BY r.dbid, r.userid) AS n, params
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM near_overflow_findings AS f;
END
$$;
