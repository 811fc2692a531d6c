--
-- Every argument of every SQL-callable function, and every setting, at the
-- edges of its documented range (works) and just outside (a clear error:
-- SQLSTATE, a message naming the argument or setting and its range, and a
-- hint where there is something to do).
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
\set SHOW_CONTEXT never
-- Every statement ends: one that ran on (a loop that never exits) fails
-- this test with a cancel instead of hanging it.
SET statement_timeout = '60s';

-- Runs a query, counts its rows: "ok", or the error's SQLSTATE, message,
-- detail and hint.
CREATE FUNCTION pg_temp.try(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	st text;
	msg text;
	det text;
	hint text;
BEGIN
	EXECUTE 'SELECT count(*) FROM (' || q || ') AS x' INTO n;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN st || ': ' || msg || coalesce(E'\nDETAIL: ' || nullif(det, ''), '')
		|| coalesce(E'\nHINT: ' || nullif(hint, ''), '');
END
$$;

-- ---- The findings' window (every rule, the findings, who pays, the
-- report): 1 second to 7 days, NULL for pg_contention.findings_window.
SELECT f AS function, w AS window_length,
	   -- The two rules given another's findings get none here.
	   pg_temp.try(pg_catalog.format('SELECT * FROM %s(%L::interval%s)', f, w,
									 CASE WHEN f IN ('pg_contention_rule_subtrans_slru_contention',
													 'pg_contention_rule_xmin_horizon_held')
										  THEN ', ''[]''::jsonb' ELSE '' END)) AS result
  FROM (VALUES ('pg_contention_findings'), ('pg_contention_findings_params'),
			   ('pg_contention_rule_subxact_overflow'), ('pg_contention_rule_subtrans_slru_contention'),
			   ('pg_contention_rule_subxact_near_overflow'), ('pg_contention_rule_dead_tuple_index_scan'),
			   ('pg_contention_rule_hot_chain_scan'), ('pg_contention_rule_xmin_horizon_held'),
			   ('pg_contention_rule_old_snapshot_threshold_spinlock'), ('pg_contention_rule_sampler_stale'),
			   ('pg_contention_subtrans_cost'), ('pg_contention_horizon_roots'),
			   ('pg_contention_victims'), ('pg_contention_victims_of'), ('pg_contention_victims_texts'),
			   ('pg_contention_report')) AS fs(f),
	   (VALUES (NULL), ('1 second'), ('7 days')) AS ws(w)
 ORDER BY 1, 2 NULLS FIRST;

-- The findings a rule is given: NULL, not an array, or elements of any
-- shape are none or ignored, never an error.
SELECT a AS findings_given,
	   pg_temp.try(pg_catalog.format('SELECT count(*) FROM pg_contention_rule_xmin_horizon_held(NULL, %s)', a)) AS xmin_rule,
	   pg_temp.try(pg_catalog.format('SELECT count(*) FROM pg_contention_rule_subtrans_slru_contention(NULL, %s)', a)) AS slru_rule
  FROM (VALUES ('NULL'), ($$'{}'::jsonb$$), ($$'[1, "x", null, {"holder": 7, "details": []}]'::jsonb$$)) AS fs(a);

-- The holders the three holder rules are given (as the findings read them
-- once): NULL reads them now; not an array is an error that says so,
-- whatever the rows; elements that are no object are left out; a value of
-- the wrong type in a row is an error of that type's input (the index
-- rules read the rows only where an index row needs its holder: none
-- here).
SELECT a AS roots_given,
	   pg_temp.try(pg_catalog.format('SELECT count(*) FROM pg_contention_horizon_roots(NULL, %s)', a)) AS roots,
	   pg_temp.try(pg_catalog.format('SELECT count(*) FROM pg_contention_rule_dead_tuple_index_scan(NULL, %s)', a)) AS index_rule,
	   pg_temp.try(pg_catalog.format('SELECT count(*) FROM pg_contention_rule_hot_chain_scan(NULL, %s)', a)) AS hot_rule,
	   pg_temp.try(pg_catalog.format('SELECT count(*) FROM pg_contention_rule_xmin_horizon_held(NULL, NULL, %s)', a)) AS xmin_rule
  FROM (VALUES ('NULL'), ($$'{}'::jsonb$$), ($$'[1, "x", null, [], {"kind": "backend", "holder": "7"}]'::jsonb$$),
			   ($$'[{"pid": "seven"}]'::jsonb$$)) AS fs(a);

-- The index rules' per_cause: true, false or NULL (every row) answer.
SELECT c AS per_cause,
	   pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_rule_dead_tuple_index_scan(NULL, NULL, %s)', c)) AS index_rule,
	   pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_rule_hot_chain_scan(NULL, NULL, %s)', c)) AS hot_rule
  FROM (VALUES ('true'), ('false'), ('NULL')) AS cs(c);
-- A cause's finding from its costliest row: NULL counts leave the row as
-- it is; any counts give a text, never an error.
SELECT g.subject, g.evidence, g.details
  FROM (VALUES (NULL::bigint, NULL::bigint, NULL::bigint), (1, 1, 1), (3, 5, 2), (-1, 0, NULL), (1, 2, NULL))
		 AS c(indexes, statements, databases),
	   pg_contention_cause_group('s'::text, 'e.'::text, '{"a": 1}'::jsonb, c.indexes, c.statements, c.databases,
								 ARRAY['database 1 index 2']::text[], NULL::text[]) AS g;
SELECT g.* FROM pg_contention_cause_group(NULL::text, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
										  NULL::bigint, NULL::text[], NULL::text[]) AS g;

SELECT w AS window_length, pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_findings(%L::interval)', w)) AS result
  FROM (VALUES ('0.4 seconds'), ('0'), ('-1 minute'), ('7 days 1 second'), ('1 month'),
			   ('1000 years'), ('-178000000 years')) AS ws(w);
-- The same check in the report and who pays.
SELECT pg_temp.try($$SELECT pg_contention_report('1000 years')$$);
SELECT pg_temp.try($$SELECT * FROM pg_contention_victims('0')$$);
SELECT pg_temp.try($$SELECT pg_contention_victims_text('-1 s', 'dead_index_entries')$$);
-- Infinite intervals exist from PostgreSQL 17 on (before, 'infinity' is no
-- interval at all).
SELECT current_setting('server_version_num')::integer < 170000
	   OR pg_temp.try($$SELECT * FROM pg_contention_findings('infinity'::interval)$$)
		  LIKE '22023: window_length must be between 1 second and 7 days, not infinity%'
	   AS infinity_refused;

-- ---- Who pays: kinds and culprits.
SELECT a AS arguments, pg_temp.try('SELECT * FROM pg_contention_victims(' || a || ')') AS result
  FROM (VALUES ('NULL, NULL, NULL, NULL'), ($$NULL, '[]', '[]', 'suboverflowed_snapshots'$$),
			   ($$NULL, '[1, 2]', '[-5, 7]', 'dead_index_entries'$$),
			   ($$NULL, NULL, NULL, 'dead_entries'$$), ($$NULL, '42', NULL, NULL$$),
			   ($$NULL, NULL, '{"a": 1}', NULL$$)) AS t(a);
SELECT a AS arguments, pg_temp.try('SELECT * FROM pg_contention_victims_of(' || a || ')') AS result
  FROM (VALUES ($$NULL, '[]'$$), ($$NULL, '[{"culprit": "x", "pids": [1]}]', 'suboverflowed_snapshots'$$),
			   ($$NULL, '{"culprit": "x"}'$$), ($$NULL, NULL, 'other'$$)) AS t(a);
SELECT a AS arguments, pg_temp.try('SELECT * FROM pg_contention_victims_texts(' || a || ')') AS result
  FROM (VALUES ($$NULL, 'dead_index_entries', '[{"culprit": "x"}]'$$), ($$NULL, NULL, NULL$$),
			   ($$NULL, 'everything', NULL$$)) AS t(a);
SELECT pg_temp.try($$SELECT pg_contention_victims_text(NULL, 'suboverflowed_snapshots', '[1]', '[2]')$$);
SELECT pg_temp.try($$SELECT pg_contention_victims_text(NULL, 'nothing')$$);

-- ---- pg_contention_recent(window_seconds): 1 and more.
SELECT w AS window_seconds, pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_recent(%s, %L, %L)', w, n, b)) AS result
  FROM (VALUES (1, true, false), (2147483647, false, true), (0, false, false), (-1, true, true)) AS t(w, n, b);
-- statement_rows and index_rows: every combination, NULL (no row: strict).
SELECT s AS statement_rows, i AS index_rows,
	   pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_recent(300, true, false, %s, %s)', s, i)) AS result
  FROM (VALUES ('true'), ('false'), ('NULL')) AS a(s), (VALUES ('true'), ('false'), ('NULL')) AS b(i);

-- ---- pg_contention_old_snapshot(window_seconds): 1 to
-- pg_contention.history_seconds (900 here); NULL (the view's) 60 or fewer.
SELECT w AS window_seconds, pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_old_snapshot(%s)', w)) AS result
  FROM (VALUES ('NULL'), ('1'), ('900'), ('0'), ('901'), ('-2147483648')) AS t(w);
SELECT window_seconds_covered <= 60 AS default_window FROM pg_contention_old_snapshot();

-- ---- pg_contention_metrics(families): NULL, any of the six.
SELECT f AS families, pg_temp.try(pg_catalog.format('SELECT * FROM pg_contention_metrics(%L)', f)) AS result
  FROM (VALUES (NULL), ('{}'), ('{subxact,sampler,horizon,index,old_snapshot,findings}'),
			   ('{sampler}'), ('{samplers}'), ('{subxact,NULL}')) AS t(f);

-- ---- The helpers: any text, any interval, any time.
SELECT pg_temp.try($$SELECT pg_contention_duration(i) FROM (VALUES ('-1 day'::interval), ('0'), ('59.5 s'), ('1000 years')) AS t(i)$$);
SELECT pg_contention_duration('-1 day'), pg_contention_duration('0'), pg_contention_duration('1000 years');
SELECT pg_temp.try($$SELECT pg_contention_shorten(t) FROM (VALUES (''), (repeat('x', 100000)), (NULL)) AS v(t)$$);
SELECT pg_temp.try($$SELECT pg_contention_normalize(t) FROM (VALUES (''), (repeat('''', 10001)), (NULL)) AS v(t)$$);
SELECT pg_temp.try($$SELECT pg_contention_before_restart(a, b) FROM (VALUES ('-infinity'::timestamptz, 'infinity'::timestamptz), (NULL, NULL), (now(), NULL)) AS v(a, b)$$);

-- ---- The functions without arguments.
SELECT f AS function, pg_temp.try('SELECT * FROM ' || f || '()') AS result
  FROM (VALUES ('pg_contention_subxact'), ('pg_contention_overflow_events'), ('pg_contention_info'),
			   ('pg_contention_index_scans'), ('pg_contention_horizon_holders'), ('pg_contention_waits'),
			   ('pg_contention_history'), ('pg_contention_sampler_status'), ('pg_contention_statements'),
			   ('pg_contention_problems')) AS t(f);

-- ---- Settings a session may change: the edges work (the findings, the
-- metrics and the report read them), one past is refused with the range.
SET pg_contention.horizon_min_age = 0;
SET pg_contention.horizon_min_xid_age = 0;
SET pg_contention.subtrans_lookups_warning = 1;
SET pg_contention.subtrans_wait_warning = 0;
SET pg_contention.subtrans_wait_critical = 0;
SET pg_contention.dead_visits_warning = 1;
SET pg_contention.dead_visits_critical = 1;
SET pg_contention.hot_chain_buffers_warning = 1;
SET pg_contention.dead_ratio_warning = 0;
SET pg_contention.horizon_critical_age = 0;
SET pg_contention.horizon_critical_xid_age = 0;
SET pg_contention.old_snapshot_probe_warning = 1;
SET pg_contention.old_snapshot_probe_critical = 1;
SET pg_contention.old_snapshot_held_warning = 0;
SET pg_contention.old_snapshot_held_critical = 0;
SELECT pg_temp.try('SELECT * FROM pg_contention_findings') AS findings,
	   pg_temp.try('SELECT * FROM pg_contention_metrics') AS metrics,
	   pg_temp.try('SELECT pg_contention_report()') AS report;
SET pg_contention.horizon_min_age = 2147483;
SET pg_contention.horizon_min_xid_age = 2147483647;
SET pg_contention.subtrans_lookups_warning = 2147483647;
SET pg_contention.subtrans_wait_warning = 100;
SET pg_contention.subtrans_wait_critical = 100;
SET pg_contention.dead_visits_warning = 2147483647;
SET pg_contention.dead_visits_critical = 2147483647;
SET pg_contention.hot_chain_buffers_warning = 2147483647;
SET pg_contention.dead_ratio_warning = 1;
SET pg_contention.horizon_critical_age = 2147483;
SET pg_contention.horizon_critical_xid_age = 2147483647;
SET pg_contention.old_snapshot_probe_warning = 2147483647;
SET pg_contention.old_snapshot_probe_critical = 2147483647;
SET pg_contention.old_snapshot_held_warning = 100;
SET pg_contention.old_snapshot_held_critical = 100;
SELECT pg_temp.try('SELECT * FROM pg_contention_findings') AS findings,
	   pg_temp.try('SELECT * FROM pg_contention_metrics') AS metrics,
	   pg_temp.try('SELECT pg_contention_report()') AS report;
RESET ALL;

SELECT s AS setting, pg_temp.try(pg_catalog.format('SELECT set_config(%L, %L, true)', s, v)) AS result
  FROM (VALUES ('pg_contention.horizon_min_age', '-1'), ('pg_contention.horizon_min_age', '2147484'),
			   ('pg_contention.horizon_min_xid_age', '-1'),
			   ('pg_contention.subtrans_lookups_warning', '0'), ('pg_contention.subtrans_wait_warning', '100.5'),
			   ('pg_contention.subtrans_wait_critical', '-0.1'), ('pg_contention.dead_visits_warning', '0'),
			   ('pg_contention.dead_visits_critical', '0'), ('pg_contention.hot_chain_buffers_warning', '0'),
			   ('pg_contention.dead_ratio_warning', '1.01'), ('pg_contention.horizon_critical_age', '-1'),
			   ('pg_contention.horizon_critical_xid_age', '2147483648'),
			   ('pg_contention.old_snapshot_probe_warning', '0'), ('pg_contention.old_snapshot_probe_critical', '0'),
			   ('pg_contention.old_snapshot_held_warning', '-1'), ('pg_contention.old_snapshot_held_critical', '101'),
			   ('pg_contention.track_statements', 'maybe')) AS t(s, v);

-- ---- Settings of the server (reload or restart): ALTER SYSTEM checks the
-- range (the edges are written, then removed; one past is refused).
ALTER SYSTEM SET pg_contention.max_query_length = 64;
ALTER SYSTEM SET pg_contention.max_query_length = 65536;
ALTER SYSTEM SET pg_contention.max_query_length = 63;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.max_events = 1;
ALTER SYSTEM SET pg_contention.max_events = 1000000;
ALTER SYSTEM SET pg_contention.max_events = 0;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.max_statements = 100;
ALTER SYSTEM SET pg_contention.max_statements = 1000000;
ALTER SYSTEM SET pg_contention.max_statements = 1000001;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.max_index_names = 64;
ALTER SYSTEM SET pg_contention.max_index_names = 20000;
ALTER SYSTEM SET pg_contention.max_index_names = 63;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.sample_period = 1;
ALTER SYSTEM SET pg_contention.sample_period = 1000;
ALTER SYSTEM SET pg_contention.sample_period = 0;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.max_profile_entries = 10;
ALTER SYSTEM SET pg_contention.max_profile_entries = 1000000;
ALTER SYSTEM SET pg_contention.max_profile_entries = 9;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.history_seconds = 5;
ALTER SYSTEM SET pg_contention.history_seconds = 86400;
ALTER SYSTEM SET pg_contention.history_seconds = 4;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.subxact_warn_level = 0;
ALTER SYSTEM SET pg_contention.subxact_warn_level = 64;
ALTER SYSTEM SET pg_contention.subxact_warn_level = 65;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.save_interval = 0;
ALTER SYSTEM SET pg_contention.save_interval = 86400;
ALTER SYSTEM SET pg_contention.save_interval = -1;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.findings_window = 10;
ALTER SYSTEM SET pg_contention.findings_window = 86400;
ALTER SYSTEM SET pg_contention.findings_window = 9;
\echo :LAST_ERROR_SQLSTATE
ALTER SYSTEM SET pg_contention.sampler = off;
ALTER SYSTEM SET pg_contention.save = off;
-- Each removed again by name (RESET ALL would also remove what a server
-- under `make installcheck` had of its own).
ALTER SYSTEM RESET pg_contention.max_query_length;
ALTER SYSTEM RESET pg_contention.max_events;
ALTER SYSTEM RESET pg_contention.max_statements;
ALTER SYSTEM RESET pg_contention.max_index_names;
ALTER SYSTEM RESET pg_contention.sample_period;
ALTER SYSTEM RESET pg_contention.max_profile_entries;
ALTER SYSTEM RESET pg_contention.history_seconds;
ALTER SYSTEM RESET pg_contention.subxact_warn_level;
ALTER SYSTEM RESET pg_contention.save_interval;
ALTER SYSTEM RESET pg_contention.findings_window;
ALTER SYSTEM RESET pg_contention.sampler;
ALTER SYSTEM RESET pg_contention.save;

-- ---- Every function of the extension, from the catalog (none left out
-- by hand): each argument in turn NULL and at its type's extremes, the
-- others at their defaults (else a plain value).  Each call a statement of
-- its own (\gexec), so that each has the statement timeout above: every
-- call ends, with a result or a clear error (the errors are listed; no
-- internal error, XX000, and no cancel, 57014, may be among them).
SET statement_timeout = '60s';
CREATE TEMP TABLE fuzz (call text, result text);
CREATE FUNCTION pg_temp.edges(t regtype) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
SELECT CASE t
	WHEN 'text'::regtype THEN ARRAY['NULL', $q$''$q$, $q$repeat('x', 1000000)$q$, $q$'subxact_overflow'$q$,
		$q$'dead_index_entries'$q$]
	WHEN 'jsonb'::regtype THEN ARRAY['NULL', $q$'{}'$q$, $q$'[]'$q$, $q$'"x"'$q$,
		$q$(repeat('[', 1000) || repeat(']', 1000))::jsonb$q$,
		$q$(SELECT jsonb_agg(i) FROM generate_series(1, 100000) AS i)$q$,
		$q$'{"pids": [1, "x", null], "kind": "backend", "holder": "1", "indexrelid": "x"}'$q$]
	WHEN 'interval'::regtype THEN ARRAY['NULL', $q$'-1 s'$q$, $q$'10 s'$q$, $q$'178000000 years'$q$]
	WHEN 'integer'::regtype THEN ARRAY['NULL', $q$'-2147483648'$q$, '0', '2147483647']
	WHEN 'bigint'::regtype THEN ARRAY['NULL', $q$'-9223372036854775808'$q$, '0', '9223372036854775807']
	WHEN 'boolean'::regtype THEN ARRAY['NULL', 'true', 'false']
	WHEN 'timestamp with time zone'::regtype THEN ARRAY['NULL', $q$'-infinity'$q$, $q$'infinity'$q$]
	WHEN 'text[]'::regtype THEN ARRAY['NULL', $q$'{}'$q$, $q$'{NULL}'$q$,
		$q$(SELECT array_agg(i::text) FROM generate_series(1, 100000) AS i)$q$]
	ELSE ARRAY['NULL'] END
$$;
CREATE FUNCTION pg_temp.plain(t regtype) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
SELECT CASE t WHEN 'text'::regtype THEN $q$'xmin_horizon_held'$q$ WHEN 'jsonb'::regtype THEN $q$'{}'$q$
	WHEN 'interval'::regtype THEN $q$'10 s'$q$ WHEN 'integer'::regtype THEN '1000'
	WHEN 'bigint'::regtype THEN '1' WHEN 'boolean'::regtype THEN 'true'
	WHEN 'timestamp with time zone'::regtype THEN 'now()' ELSE 'NULL' END
$$;
WITH fns AS (
	SELECT p.oid, p.proname, p.pronargs - p.pronargdefaults AS required, p.proargtypes::oid[] AS types,
		   p.proargnames AS names, p.proretset OR p.prorettype = 'record'::regtype AS rows
	  FROM pg_proc AS p JOIN pg_depend AS d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
	  JOIN pg_extension AS e ON e.oid = d.refobjid AND d.refclassid = 'pg_extension'::regclass
	 WHERE e.extname = 'pg_contention' AND p.proname <> 'pg_contention_reset'),
calls AS (
	-- The required arguments in order (plain values but the one at its
	-- edge), then the one at its edge by name if it has a default.
	SELECT f.proname, f.rows, a.n AS edge_arg, v.value,
		   concat_ws(', ',
			   (SELECT string_agg(CASE WHEN x.n = a.n THEN v.value ELSE pg_temp.plain(x.t::regtype) END
								  || '::' || format_type(x.t, NULL), ', ' ORDER BY x.n)
				  FROM unnest(f.types) WITH ORDINALITY AS x(t, n)
				 WHERE x.n <= f.required),
			   CASE WHEN a.n > f.required
					THEN format('%I => %s::%s', f.names[a.n], v.value, format_type(a.t, NULL)) END) AS args
	  FROM fns AS f
	  CROSS JOIN LATERAL unnest(f.types) WITH ORDINALITY AS a(t, n)
	  CROSS JOIN LATERAL unnest(pg_temp.edges(a.t::regtype)) AS v(value))
SELECT format('INSERT INTO fuzz SELECT %L, pg_temp.try(%L)', c.proname || '(' || c.args || ')',
			  CASE WHEN c.rows THEN format('SELECT * FROM %I(%s)', c.proname, c.args)
				   ELSE format('SELECT %I(%s)', c.proname, c.args) END)
  FROM calls AS c
 ORDER BY c.proname, c.edge_arg, c.value
\set ECHO none
\gexec
\set ECHO all
SELECT count(DISTINCT regexp_replace(call, '\(.*', '')) =
		   (SELECT count(*) FROM pg_proc AS p JOIN pg_depend AS d ON d.objid = p.oid
			  JOIN pg_extension AS e ON e.oid = d.refobjid
			 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
			   AND e.extname = 'pg_contention' AND p.pronargs > 0) AS every_function_with_arguments,
	   count(*) FILTER (WHERE result = 'ok') > count(*) / 2 AS most_answer,
	   count(*) FILTER (WHERE result LIKE 'XX%' OR result LIKE '57014%') AS internal_or_cancelled
  FROM fuzz;
-- The clear errors, one line per function and error (each echoes at most
-- 100 characters of what it was given).
SELECT regexp_replace(call, '\(.*', '') AS function, regexp_replace(result, E'\n.*', '', 's') AS error,
	   count(*) AS calls
  FROM fuzz WHERE result <> 'ok'
 GROUP BY 1, 2 ORDER BY 1, 2;
