-- A text normalised as the statement store keeps statements: constants
-- replaced by $n (who pays finds the statements of pg_contention's own
-- SQL-language functions in their bodies normalised).
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_normalize(query text)
RETURNS text
AS 'MODULE_PATHNAME', 'pg_contention_normalize'
LANGUAGE C STRICT STABLE PARALLEL SAFE;

--
-- Who pays: the statements that paid for a problem in the window, per
-- application, user, database and query id (the statement store's rows
-- per application, pg_contention_recent(..., by_application)), with what
-- they paid:
--   kind 'suboverflowed_snapshots': executions on a suboverflowed snapshot
--     (subxact_overflow, subtrans_slru_contention);
--   kind 'dead_index_entries': dead index entries visited, per index
--     (dead_tuple_index_scan, xmin_horizon_held).
-- Never victims: pg_contention's own (the sampler, application
-- 'pg_contention sampler'; the client, application 'pg_contention'; any
-- statement whose text reads pg_contention's objects or is part of the
-- body of one of its SQL-language functions; the statements of its
-- PL/pgSQL functions name its objects, and its text helpers run none),
-- monitoring queries that read only the server's views and catalogs (a
-- suboverflowed snapshot costs them nothing), and the culprit's:
-- the statements of culprit_query_ids, and everything run by the
-- (application, user) of the culprit's pids (their sessions now, and their
-- overflow events in the window).  Without culprit_pids (NULL), every
-- culprit of the kind: for suboverflowed snapshots the backends that
-- overflowed in the window or are overflowed now, for dead index entries
-- the backends that hold the xmin horizon back (pg_contention_horizon_roots).
-- only_kind: the rows of one kind only.
--
-- The core of who pays, for several culprits at once, one row per culprit
-- and victim.  culprits: a JSON array of objects {"culprit": a key,
-- "pids": [...], "query_ids": [...]}, each what pg_contention_victims
-- takes for one culprit ("pids" null or absent: every culprit of the
-- kind); NULL: one culprit '' without pids.  The statement store's rows,
-- the sessions, the overflow events and pg_contention's own bodies are
-- read once per call: a rule passes all its culprits in one call, not one
-- per finding.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_victims_of(
	window_length interval DEFAULT NULL,
	culprits jsonb DEFAULT NULL,
	only_kind text DEFAULT NULL,
	OUT culprit text,
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
IF only_kind IS NOT NULL AND only_kind NOT IN ('suboverflowed_snapshots', 'dead_index_entries') THEN
	RAISE EXCEPTION 'only_kind must be suboverflowed_snapshots, dead_index_entries or NULL, not %', pg_catalog.left(only_kind, 100)
		USING ERRCODE = 'invalid_parameter_value', HINT = 'NULL returns both kinds.';
END IF;
IF pg_catalog.jsonb_typeof(culprits) IS DISTINCT FROM 'array' AND culprits IS NOT NULL THEN
	RAISE EXCEPTION 'culprits must be a JSON array or NULL, not %', pg_catalog.left(culprits::text, 100)
		USING ERRCODE = 'invalid_parameter_value',
			  HINT = 'Each element is an object {"culprit": key, "pids": [...], "query_ids": [...]}; NULL: every culprit.';
END IF;
IF pg_catalog.jsonb_typeof(culprits) = 'array' AND pg_catalog.jsonb_array_length(culprits) = 0 THEN
	RETURN;
END IF;
RETURN QUERY
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
culprit_list AS MATERIALIZED (
	SELECT DISTINCT ON (coalesce(c.value ->> 'culprit', ''))
		   coalesce(c.value ->> 'culprit', '') AS culprit,
		   c.value -> 'pids' AS pids,
		   c.value -> 'query_ids' AS query_ids,
		   coalesce(pg_catalog.jsonb_typeof(c.value -> 'pids'), 'null') = 'null' AS all_culprits
	  FROM pg_catalog.jsonb_array_elements(
			   CASE WHEN pg_catalog.jsonb_typeof(culprits) = 'array' THEN culprits
					ELSE '[{}]'::jsonb END) AS c(value)
	 WHERE pg_catalog.jsonb_typeof(c.value) = 'object'
),
culprit_pid AS MATERIALIZED (
	SELECT DISTINCT l.culprit, p.value::integer AS pid
	  FROM culprit_list AS l,
		   pg_catalog.jsonb_array_elements_text(
			   CASE WHEN pg_catalog.jsonb_typeof(l.pids) = 'array' THEN l.pids
					ELSE '[]'::jsonb END) AS p(value)
	 WHERE p.value ~ '^[0-9]{1,9}$'
),
culprit_query AS MATERIALIZED (
	SELECT DISTINCT l.culprit, q.value::bigint AS query_id
	  FROM culprit_list AS l,
		   pg_catalog.jsonb_array_elements_text(
			   CASE WHEN pg_catalog.jsonb_typeof(l.query_ids) = 'array' THEN l.query_ids
					ELSE '[]'::jsonb END) AS q(value)
	 WHERE q.value ~ '^-?[0-9]{1,19}$'
),
-- The bodies of pg_contention's SQL-language functions, normalised: a
-- statement they run is counted under its own text normalised, a slice of
-- one of them (numbered alike when the body is one statement, as theirs
-- are).  A few kB, searched only for statements never run at top level.
own_bodies AS MATERIALIZED (
	SELECT coalesce(pg_catalog.string_agg(@extschema@.pg_contention_normalize(p.prosrc), E'\n'), '') AS src
	  FROM pg_catalog.pg_depend AS d
	  JOIN pg_catalog.pg_proc AS p ON p.oid = d.objid
	 WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
	   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
	   AND d.deptype = 'e'
	   AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_contention')
	   AND p.prolang = (SELECT l.oid FROM pg_catalog.pg_language AS l WHERE l.lanname = 'sql')
),
activity AS MATERIALIZED (
	SELECT a.pid, a.application_name, a.usesysid FROM pg_catalog.pg_stat_activity AS a
),
-- The window's overflow events: only who ran them is asked (a few rows
-- where the ring holds a thousand events).
events AS MATERIALIZED (
	SELECT DISTINCT e.pid, e.application_name, e.usesysid
	  FROM params, @extschema@.pg_contention_overflow_events() AS e
	 WHERE e.event_time >= params.cutoff
),
kinds AS (
	SELECT k.kind FROM (VALUES ('suboverflowed_snapshots'), ('dead_index_entries')) AS k(kind)
),
-- Each culprit's (application, user) for each kind: the sessions of its
-- pids now, and their overflow events in the window (a session that has
-- ended); without pids, every culprit of the kind.
culprit AS MATERIALIZED (
	SELECT c.culprit, k.kind, a.application_name, a.usesysid AS userid
	  FROM culprit_pid AS c JOIN activity AS a ON a.pid = c.pid, kinds AS k
	UNION
	SELECT c.culprit, k.kind, e.application_name, e.usesysid
	  FROM culprit_pid AS c JOIN events AS e ON e.pid = c.pid, kinds AS k
	UNION
	SELECT l.culprit, 'suboverflowed_snapshots', e.application_name, e.usesysid
	  FROM culprit_list AS l, events AS e
	 WHERE l.all_culprits
	UNION
	SELECT l.culprit, 'suboverflowed_snapshots', s.application_name, s.usesysid
	  FROM culprit_list AS l,
		   (SELECT s.application_name, s.usesysid
			  FROM @extschema@.pg_contention_subxact() AS s
			 WHERE s.subxact_overflowed
			   -- read only when asked for: a one-time filter
			   AND EXISTS (SELECT 1 FROM culprit_list AS x WHERE x.all_culprits)) AS s
	 WHERE l.all_culprits
	UNION
	SELECT l.culprit, 'dead_index_entries', a.application_name, a.usesysid
	  FROM culprit_list AS l,
		   (SELECT h.pid
			  FROM @extschema@.pg_contention_horizon_roots(window_length, NULL::pg_catalog.jsonb) AS h
			 WHERE h.kind = 'backend'
			   AND EXISTS (SELECT 1 FROM culprit_list AS x WHERE x.all_culprits)
			   AND (only_kind IS NULL OR only_kind = 'dead_index_entries')) AS h
	  JOIN activity AS a ON a.pid = h.pid
	 WHERE l.all_culprits
),
-- The statements that paid, whoever the culprit: never pg_contention's.
-- The cheap tests first; a text is searched in the bodies only when the
-- statement never ran at top level.
candidates AS MATERIALIZED (
	-- (what the result shows, not every figure: thousands of index rows)
	SELECT r.application_name, r.userid, r.dbid, r.query_id, r.query, r.indexrelid,
		   r.suboverflowed_calls, r.scans, r.dead_visits,
		   CASE WHEN r.indexrelid IS NULL THEN 'suboverflowed_snapshots'
				ELSE 'dead_index_entries' END AS kind
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true, true, true, true) AS r
	 WHERE CASE WHEN r.indexrelid IS NULL THEN r.suboverflowed_calls > 0 ELSE r.dead_visits > 0 END
	   AND (only_kind IS NULL OR (r.indexrelid IS NULL) = (only_kind = 'suboverflowed_snapshots'))
	   AND r.application_name <> 'pg_contention'
	   AND r.application_name NOT LIKE 'pg\_contention %'
	   AND pg_catalog.strpos(r.query, 'pg_contention') = 0
	   AND (r.top_level_calls > 0
			OR pg_catalog.strpos((SELECT o.src FROM own_bodies AS o), r.query) = 0)
	   -- A monitoring query (pg_stat_activity, pg_locks, information_schema)
	   -- runs on a suboverflowed snapshot too, but checks no table row's
	   -- visibility: it pays nothing.  Every relation its text reads after
	   -- FROM or JOIN (or a comma after the first FROM) is the server's;
	   -- a text with another identifier there is kept, which errs on the
	   -- side of naming a payer.
	   AND NOT (r.indexrelid IS NULL
				AND r.query ~* '\m(from|join)\s+("?pg_catalog"?\.)?"?(pg_|information_schema)'
				AND NOT EXISTS (
					SELECT 1
					  FROM pg_catalog.regexp_matches(
							   pg_catalog.substring(r.query, '(?i)\mfrom\M.*'),
							   '(?:\mfrom|\mjoin|,)\s+("?[A-Za-z_][A-Za-z0-9_$]*"?(?:\."?[A-Za-z_][A-Za-z0-9_$]*"?)?)',
							   'gi') AS m(rel)
					 WHERE m.rel[1] !~* '^("?pg_catalog"?\.)?"?pg_|^"?information_schema"?\.'))
),
paid AS (
	SELECT l.culprit, r.*
	  FROM culprit_list AS l, candidates AS r
	 WHERE NOT EXISTS (SELECT 1 FROM culprit_query AS q
						WHERE q.culprit = l.culprit AND q.query_id = r.query_id)
	   AND NOT EXISTS (SELECT 1 FROM culprit AS c
						WHERE c.culprit = l.culprit AND c.kind = r.kind
						  AND c.application_name = r.application_name AND c.userid = r.userid)
)
SELECT v.culprit, v.kind, v.application_name, v.userid, u.rolname, v.dbid, d.datname,
	   v.query_id, v.query, v.indexrelid, v.executions, v.paid
  FROM (SELECT r.culprit, 'suboverflowed_snapshots'::text AS kind, r.application_name, r.userid, r.dbid,
			   r.query_id, r.query, NULL::oid AS indexrelid,
			   r.suboverflowed_calls AS executions, r.suboverflowed_calls AS paid
		  FROM paid AS r
		 WHERE r.indexrelid IS NULL
		UNION ALL
		SELECT r.culprit, 'dead_index_entries', r.application_name, r.userid, r.dbid,
			   r.query_id, r.query, r.indexrelid, r.scans, r.dead_visits
		  FROM paid AS r
		 WHERE r.indexrelid IS NOT NULL) AS v
  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = v.userid
  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = v.dbid
 ORDER BY v.culprit, v.kind, v.paid DESC, v.application_name, v.query_id;
END
$$;

--
-- Who pays for one culprit (see above): its pids (NULL: every culprit of
-- the kind) and query ids; only_kind: the rows of one kind only.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_victims(
	window_length interval DEFAULT NULL,
	culprit_pids jsonb DEFAULT NULL,
	culprit_query_ids jsonb DEFAULT NULL,
	only_kind text DEFAULT NULL,
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
IF pg_catalog.jsonb_typeof(culprit_pids) IS DISTINCT FROM 'array' AND culprit_pids IS NOT NULL THEN
	RAISE EXCEPTION 'culprit_pids must be a JSON array of pids or NULL, not %', pg_catalog.left(culprit_pids::text, 100)
		USING ERRCODE = 'invalid_parameter_value', HINT = 'NULL: every culprit of the kind.';
END IF;
IF pg_catalog.jsonb_typeof(culprit_query_ids) IS DISTINCT FROM 'array' AND culprit_query_ids IS NOT NULL THEN
	RAISE EXCEPTION 'culprit_query_ids must be a JSON array of query ids or NULL, not %', pg_catalog.left(culprit_query_ids::text, 100)
		USING ERRCODE = 'invalid_parameter_value';
END IF;
RETURN QUERY
SELECT v.kind, v.application_name, v.userid, v.usename, v.dbid, v.datname,
	   v.query_id, v.query, v.indexrelid, v.executions, v.paid
  FROM @extschema@.pg_contention_victims_of(
		   window_length,
		   pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
			   'culprit', '', 'pids', culprit_pids, 'query_ids', culprit_query_ids)),
		   only_kind) AS v;
END
$$;

--
-- Who pays, in words, for findings' evidence: the victims of one kind
-- (see pg_contention_victims_of) of each culprit, per application, the
-- three that paid most: "Paid by application api (user web: 12,034
-- executions of SELECT ... on suboverflowed snapshots) and application
-- reports (...)."  No row for a culprit when nobody but it and
-- pg_contention paid.  One call for all the culprits of a rule.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_victims_texts(
	window_length interval DEFAULT NULL,
	kind text DEFAULT NULL,
	culprits jsonb DEFAULT NULL,
	OUT culprit text,
	OUT sentence text
)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
IF pg_contention_victims_texts.kind IS NOT NULL
   AND pg_contention_victims_texts.kind NOT IN ('suboverflowed_snapshots', 'dead_index_entries') THEN
	RAISE EXCEPTION 'kind must be suboverflowed_snapshots, dead_index_entries or NULL, not %', pg_catalog.left(pg_contention_victims_texts.kind, 100)
		USING ERRCODE = 'invalid_parameter_value';
END IF;
RETURN QUERY
WITH v AS (
	SELECT * FROM @extschema@.pg_contention_victims_of(window_length, culprits,
													   pg_contention_victims_texts.kind) AS v
),
-- An index scan's rows summed over the statement's indexes.
statements AS (
	SELECT v.culprit, v.application_name, v.usename, v.userid, v.query_id, v.query,
		   sum(v.executions) AS executions, sum(v.paid) AS paid
	  FROM v
	 GROUP BY v.culprit, v.application_name, v.usename, v.userid, v.query_id, v.query
),
apps AS (
	SELECT s.culprit, s.application_name, sum(s.paid) AS paid, count(*) AS statements,
		   (pg_catalog.array_agg(coalesce(s.usename::text, s.userid::text) ORDER BY s.paid DESC))[1] AS top_user,
		   (pg_catalog.array_agg(s.query ORDER BY s.paid DESC))[1] AS top_query,
		   (pg_catalog.array_agg(s.executions ORDER BY s.paid DESC))[1] AS top_executions,
		   (pg_catalog.array_agg(s.paid ORDER BY s.paid DESC))[1] AS top_paid
	  FROM statements AS s
	 GROUP BY s.culprit, s.application_name
),
ranked AS (
	SELECT a.*, row_number() OVER (PARTITION BY a.culprit ORDER BY a.paid DESC, a.application_name) AS n,
		   count(*) OVER (PARTITION BY a.culprit) AS napps
	  FROM apps AS a
)
SELECT r.culprit,
	   'Paid by '
	   || pg_catalog.string_agg(
			  CASE WHEN r.n = 1 THEN ''
				   WHEN r.n = r.napps AND r.napps <= 3 THEN ' and '
				   ELSE ', ' END
			  || CASE WHEN r.application_name = '' THEN 'an application without a name'
					  ELSE 'application ' || r.application_name END
			  || ' (user ' || r.top_user || ': '
			  || CASE WHEN pg_contention_victims_texts.kind = 'suboverflowed_snapshots'
					  THEN pg_catalog.to_char(r.top_paid, 'FM999,999,999,999,990') || ' execution'
						   || CASE WHEN r.top_paid = 1 THEN '' ELSE 's' END || ' of '
						   || @extschema@.pg_contention_shorten(r.top_query)
						   || ' on suboverflowed snapshots'
					  ELSE @extschema@.pg_contention_shorten(r.top_query) || ' visited '
						   || pg_catalog.to_char(r.top_paid, 'FM999,999,999,999,990') || ' dead index entries in '
						   || pg_catalog.to_char(r.top_executions, 'FM999,999,999,999,990') || ' execution'
						   || CASE WHEN r.top_executions = 1 THEN '' ELSE 's' END END
			  || CASE WHEN r.statements > 1
					  THEN '; ' || (r.statements - 1) || ' other statement'
						   || CASE WHEN r.statements = 2 THEN '' ELSE 's' END || ' '
						   || pg_catalog.to_char(r.paid - r.top_paid, 'FM999,999,999,999,990')
						   || CASE WHEN pg_contention_victims_texts.kind = 'suboverflowed_snapshots'
								   THEN ' more' ELSE ' more entries' END
					  ELSE '' END
			  || ')', '' ORDER BY r.n) FILTER (WHERE r.n <= 3)
	   || CASE WHEN max(r.napps) > 3
			   THEN ' and ' || (max(r.napps) - 3) || ' other application'
					|| CASE WHEN max(r.napps) = 4 THEN '' ELSE 's' END
			   ELSE '' END
	   || '.'
  FROM ranked AS r
 GROUP BY r.culprit;
END
$$;

--
-- The same for one culprit: its pids (NULL: every culprit of the kind)
-- and query ids.  NULL when nobody but the culprit and pg_contention paid.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_victims_text(
	window_length interval,
	kind text,
	culprit_pids jsonb DEFAULT NULL,
	culprit_query_ids jsonb DEFAULT NULL
)
RETURNS text
LANGUAGE sql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.sentence
	  FROM @extschema@.pg_contention_victims_texts(
			   window_length, kind,
			   pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
				   'culprit', '', 'pids', culprit_pids, 'query_ids', culprit_query_ids))) AS t
$$;
