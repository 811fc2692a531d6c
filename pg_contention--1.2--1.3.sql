/* pg_contention--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_contention UPDATE TO '1.3'" to load this file. \quit

-- 1.3 records the age of the cluster's xmin horizon in each second of the
-- history (the client's charts and reports show it over time).
DROP VIEW @extschema@.pg_contention_history;
DROP FUNCTION @extschema@.pg_contention_history();

CREATE FUNCTION @extschema@.pg_contention_history(
	OUT bucket_start timestamp with time zone,
	OUT ticks bigint,
	OUT avg_active_backends double precision,
	OUT idle_samples bigint,
	OUT cpu_samples bigint,
	OUT lwlock_samples bigint,
	OUT lock_samples bigint,
	OUT bufferpin_samples bigint,
	OUT io_samples bigint,
	OUT ipc_samples bigint,
	OUT timeout_samples bigint,
	OUT extension_samples bigint,
	OUT client_samples bigint,
	OUT other_samples bigint,
	OUT subtrans_slru_samples bigint,
	OUT subtrans_buffer_samples bigint,
	OUT oldsnapshot_timemap_samples bigint,
	OUT procarray_samples bigint,
	OUT spindelay_samples bigint,
	OUT max_overflowed_backends integer,
	OUT subtrans_lookups bigint,
	OUT subtrans_reads bigint,
	OUT horizon_xid_age bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_history'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_history AS
	SELECT * FROM @extschema@.pg_contention_history();

GRANT SELECT ON @extschema@.pg_contention_history TO PUBLIC;

-- 1.3's findings name a root holder younger than the thresholds in a
-- dead_tuple_index_scan finding when it was already running when the dead
-- entries were counted (before, they said nothing held the horizon).
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
-- Compiling this query would take longer than running it; planning it
-- takes longer than running it too, so one plan serves the whole session.
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
-- PL/pgSQL, not SQL: its plan is kept for the session's next call.
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH params AS MATERIALIZED (
	SELECT p.*,
		   p.now - pg_catalog.make_interval(secs => p.w_s) AS cutoff,
		   @extschema@.pg_contention_duration(pg_catalog.make_interval(secs => p.w_s)) AS w_text
	  FROM (SELECT pg_catalog.clock_timestamp() AS now,
				   pg_catalog.date_part('epoch', coalesce(window_length,
						pg_catalog.current_setting('pg_contention.findings_window', true)::interval))::integer AS w_s,
				   pg_catalog.pg_is_in_recovery() AS standby,
				   pg_catalog.current_setting('server_version_num')::integer AS version_num,
				   pg_catalog.current_setting('pg_contention.subxact_warn_level', true)::integer AS warn_level,
				   pg_catalog.current_setting('pg_contention.subtrans_lookups_warning', true)::float8 AS lookups_warning,
				   pg_catalog.current_setting('pg_contention.subtrans_wait_warning', true)::float8 AS wait_warning,
				   pg_catalog.current_setting('pg_contention.subtrans_wait_critical', true)::float8 AS wait_critical,
				   pg_catalog.current_setting('pg_contention.dead_visits_warning', true)::float8 AS dead_warning,
				   pg_catalog.current_setting('pg_contention.dead_visits_critical', true)::float8 AS dead_critical,
				   pg_catalog.current_setting('pg_contention.dead_ratio_warning', true)::float8 AS dead_ratio,
				   pg_catalog.current_setting('pg_contention.horizon_critical_age', true)::interval AS horizon_critical_age,
				   pg_catalog.current_setting('pg_contention.horizon_critical_xid_age', true)::integer AS horizon_critical_xid_age,
				   pg_catalog.current_setting('pg_contention.old_snapshot_probe_warning', true)::float8 AS probe_warning,
				   pg_catalog.current_setting('pg_contention.old_snapshot_probe_critical', true)::float8 AS probe_critical,
				   pg_catalog.current_setting('pg_contention.old_snapshot_held_warning', true)::float8 AS held_warning,
				   pg_catalog.current_setting('pg_contention.old_snapshot_held_critical', true)::float8 AS held_critical) AS p
),
-- Each store once.
history AS MATERIALIZED (
	SELECT h.*
	  FROM @extschema@.pg_contention_history() AS h, params
	 WHERE h.bucket_start >= params.cutoff
),
events AS MATERIALIZED (
	SELECT e.*
	  FROM @extschema@.pg_contention_overflow_events() AS e, params
	 WHERE e.event_time >= params.cutoff
),
live AS MATERIALIZED (
	SELECT s.* FROM @extschema@.pg_contention_subxact() AS s
),
activity AS MATERIALIZED (
	SELECT a.pid, a.usename, a.state, a.state_change FROM pg_catalog.pg_stat_activity AS a
),
recent AS MATERIALIZED (
	-- Texts are shortened only where a finding shows them: 5,000 texts
	-- through a regular expression would cost more than everything else.
	SELECT r.*, d.datname, u.rolname AS usename
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = r.userid
),
holders AS MATERIALIZED (
	SELECT h.* FROM @extschema@.pg_contention_horizon AS h
),
oldsnap AS MATERIALIZED (
	SELECT o.* FROM params, @extschema@.pg_contention_old_snapshot(
			  least(params.w_s, pg_catalog.date_part('epoch', pg_catalog.current_setting('pg_contention.history_seconds', true)::interval)::integer)) AS o
),
dead_here AS MATERIALIZED (
	SELECT t.relid, t.schemaname, t.relname, t.n_dead_tup, t.n_live_tup,
		   greatest(t.last_vacuum, t.last_autovacuum) AS last_vacuum
	  FROM pg_catalog.pg_stat_user_tables AS t
),
-- Derived figures.
cost AS (
	SELECT coalesce(sum(h.subtrans_lookups), 0) AS lookups,
		   count(*) FILTER (WHERE h.subtrans_lookups > 0 OR h.max_overflowed_backends > 0) AS busy_seconds,
		   count(*) FILTER (WHERE h.max_overflowed_backends > 0) AS overflow_seconds,
		   min(h.bucket_start) FILTER (WHERE h.max_overflowed_backends > 0) AS first_overflow_second,
		   coalesce(sum(h.subtrans_slru_samples + h.subtrans_buffer_samples), 0) AS wait_samples,
		   coalesce(sum(pg_catalog.round(h.avg_active_backends * h.ticks)), 0) AS active_samples,
		   count(*) AS seconds
	  FROM history AS h
),
cost_judged AS (
	SELECT c.*,
		   c.lookups::float8 / nullif(c.busy_seconds, 0) AS lookup_rate,
		   CASE WHEN c.active_samples >= 100
				THEN 100.0 * c.wait_samples / c.active_samples END AS wait_pct,
		   CASE WHEN c.active_samples >= 100
					 AND 100.0 * c.wait_samples / c.active_samples >= params.wait_critical THEN 'critical'
				WHEN (c.active_samples >= 100
					  AND 100.0 * c.wait_samples / c.active_samples >= params.wait_warning)
					 OR c.lookups::float8 / nullif(c.busy_seconds, 0) >= params.lookups_warning THEN 'warning'
				ELSE 'info' END AS level
	  FROM cost AS c, params
),
cost_text AS (
	SELECT c.*,
		   pg_catalog.to_char(c.lookups, 'FM999,999,999,999,990') || ' pg_subtrans lookups'
		   || CASE WHEN c.busy_seconds > 0
				   THEN ' (' || pg_catalog.to_char(c.lookup_rate, 'FM999,999,999,990') || '/s over '
						|| c.busy_seconds || ' s)' ELSE '' END
		   || ' and ' || pg_catalog.to_char(c.wait_samples, 'FM999,999,999,990')
		   || ' SubtransSLRU/SubtransBuffer wait samples'
		   || CASE WHEN c.wait_pct IS NOT NULL
				   THEN ' (' || pg_catalog.to_char(c.wait_pct, 'FM990.0') || '% of active time)'
				   ELSE ' (too little activity for a share)' END AS text
	  FROM cost_judged AS c
),
victims AS (
	SELECT coalesce(sum(r.suboverflowed_calls), 0) AS calls,
		   count(*) FILTER (WHERE r.suboverflowed_calls > 0) AS statements,
		   min(r.period_start) FILTER (WHERE r.suboverflowed_calls > 0) AS first_seen,
		   coalesce(jsonb_agg(r.query_id ORDER BY r.suboverflowed_calls DESC)
						FILTER (WHERE r.suboverflowed_calls > 0 AND r.query_id IS NOT NULL), '[]') AS query_ids,
		   CASE WHEN coalesce(sum(r.suboverflowed_calls), 0) = 0
				THEN 'no execution ran on a suboverflowed snapshot'
				ELSE pg_catalog.to_char(sum(r.suboverflowed_calls), 'FM999,999,999,990') || ' execution'
					 || CASE WHEN sum(r.suboverflowed_calls) = 1 THEN '' ELSE 's' END || ' of '
					 || count(*) FILTER (WHERE r.suboverflowed_calls > 0) || ' statement'
					 || CASE WHEN count(*) FILTER (WHERE r.suboverflowed_calls > 0) = 1 THEN '' ELSE 's' END
					 || ' ran on suboverflowed snapshots' END AS text
	  FROM recent AS r
	 WHERE r.indexrelid IS NULL
),
-- The savepoint statement each (database, user) runs most: a driver's
-- autosave or an ORM's nested transactions show here.
savepoints AS (
	SELECT DISTINCT ON (r.dbid, r.userid) r.dbid, r.userid,
		   @extschema@.pg_contention_shorten(r.query) AS text, r.calls,
		   CASE WHEN r.query ILIKE '%pgjdbc_autosave%' THEN 'PgJDBC autosave'
				WHEN r.query ILIKE '%sa\_savepoint\_%' THEN 'SQLAlchemy nested transactions'
				WHEN r.query ILIKE '%active\_record\_%' THEN 'Rails nested transactions'
				WHEN r.query ~* '^\s*savepoint\s+"?s[0-9a-f]+_x[0-9]+' THEN 'Django atomic blocks'
		   END AS driver
	  FROM recent AS r
	 WHERE r.indexrelid IS NULL AND r.query ~* '^\s*savepoint\s'
	 ORDER BY r.dbid, r.userid, r.calls DESC
),
-- Who overflowed: per statement that took a 65th subtransaction XID in
-- the window, and per backend overflowed now that no event of the
-- window names.
overflow_statements AS (
	SELECT e.datid, e.usesysid, e.query_id,
		   count(*) AS events,
		   count(DISTINCT e.pid) AS backends,
		   min(e.event_time) AS first_event,
		   (pg_catalog.array_agg(e.pid ORDER BY e.event_time DESC))[1] AS last_pid,
		   jsonb_agg(DISTINCT e.pid) AS pids,
		   (pg_catalog.array_agg(e.query ORDER BY e.event_time DESC))[1] AS query,
		   (pg_catalog.array_agg(e.application_name ORDER BY e.event_time DESC))[1] AS application_name,
		   max(e.nested_query_id) AS nested_query_id,
		   max(e.nesting_depth) AS nesting_depth
	  FROM events AS e
	 GROUP BY e.datid, e.usesysid, e.query_id
),
overflow_culprits AS (
	SELECT o.datid, o.usesysid, o.query_id,
		   greatest(o.events, coalesce(rs.overflow_events, 0)) AS events,
		   o.backends, least(o.first_event, rs.period_start) AS since,
		   o.pids, o.nested_query_id, o.nesting_depth,
		   'statement ' || @extschema@.pg_contention_shorten(o.query)
		   || coalesce(' (query id ' || o.query_id || ')', '')
		   || CASE WHEN o.backends = 1
				   THEN ' in pid ' || o.last_pid || ' ('
						|| concat_ws(', ',
							  'application ' || nullif(o.application_name, ''),
							  'user ' || u.rolname,
							  -- state is NULL for another role's session
							  CASE WHEN a.pid IS NULL THEN 'session ended'
								   ELSE a.state || ' for '
										|| @extschema@.pg_contention_duration(params.now - a.state_change) END)
						|| ')'
				   ELSE ' in ' || o.backends || ' backends ('
						|| concat_ws(', ', 'application ' || nullif(o.application_name, ''),
									 'user ' || u.rolname) || ')'
			  END
		   || coalesce(', savepoints by ' || sp.driver || ' (' || sp.text || ')',
					   ', savepoints ' || sp.text
					   || ' run ' || pg_catalog.to_char(sp.calls, 'FM999,999,999,990') || ' times', '')
		   || CASE WHEN o.nested_query_id IS NOT NULL
				   THEN ', inside a function (nested statement ' || o.nested_query_id || ')'
				   ELSE '' END AS subject,
		   -- The statement store counts every event; the ring keeps the last.
		   pg_catalog.to_char(greatest(o.events, coalesce(rs.overflow_events, 0)), 'FM999,999,999,990')
		   || ' overflow event'
		   || CASE WHEN greatest(o.events, coalesce(rs.overflow_events, 0)) = 1 THEN '' ELSE 's' END AS what
	  FROM overflow_statements AS o
	  CROSS JOIN params
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = o.usesysid
	  LEFT JOIN activity AS a ON a.pid = o.last_pid
	  LEFT JOIN savepoints AS sp ON sp.dbid = o.datid AND sp.userid = o.usesysid
	  LEFT JOIN recent AS rs
		ON rs.indexrelid IS NULL AND rs.dbid = o.datid AND rs.userid = o.usesysid
		   AND rs.query_id = o.query_id AND rs.overflow_events > 0
	UNION ALL
	SELECT l.datid, l.usesysid, l.query_id, 0, 1, l.xact_start,
		   jsonb_build_array(l.pid), NULL, NULL,
		   'pid ' || l.pid || ' ('
		   || concat_ws(', ', 'application ' || nullif(l.application_name, ''),
						'user ' || a.usename,
						a.state || ' for '
						|| @extschema@.pg_contention_duration(params.now - a.state_change),
						'transaction open for '
						|| @extschema@.pg_contention_duration(params.now - l.xact_start))
		   || ')' || coalesce(', last statement ' || @extschema@.pg_contention_shorten(l.query), ''),
		   'overflowed now, its transaction older than the window'
	  FROM live AS l
	  CROSS JOIN params
	  LEFT JOIN activity AS a ON a.pid = l.pid
	 WHERE l.subxact_overflowed
	   AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.pid = l.pid)
),
overflow_findings AS (
	SELECT 'subxact_overflow'::text AS problem,
		   c.level AS severity,
		   o.subject,
		   'In the last ' || params.w_text || ': ' || o.what || '; ' || v.text
		   || '; cost: ' || c.text || '.' AS evidence,
		   CASE c.level
				WHEN 'info' THEN 'It costs nothing measurable yet, but every snapshot taken meanwhile is suboverflowed; k'
				ELSE 'K' END
		   || 'eep transactions under 64 subtransactions: commit batches in smaller pieces, '
		   || 'avoid an EXCEPTION block (a subtransaction) per row in PL/pgSQL, '
		   || 'turn off driver autosave (PgJDBC autosave=never) or savepoints per statement'
		   || CASE WHEN params.version_num >= 170000
				   THEN '; on PostgreSQL 17 and later a larger subtransaction_buffers shortens the pg_subtrans waits, not the lookups.'
				   ELSE '.' END AS advice,
		   jsonb_build_object(
			   'pids', o.pids, 'query_id', o.query_id, 'database_oid', o.datid::bigint,
			   'user_oid', o.usesysid::bigint, 'overflow_events', o.events,
			   'nested_query_id', o.nested_query_id, 'nesting_depth', o.nesting_depth,
			   'suboverflowed_calls', v.calls, 'victim_query_ids', v.query_ids,
			   'subtrans_lookups', c.lookups, 'subtrans_lookups_per_second', pg_catalog.round(c.lookup_rate::numeric),
			   'subtrans_wait_samples', c.wait_samples, 'subtrans_wait_pct', pg_catalog.round(c.wait_pct::numeric, 2),
			   'active_samples', c.active_samples, 'window_seconds', params.w_s) AS details,
		   o.since
	  FROM overflow_culprits AS o, victims AS v, cost_text AS c, params
	UNION ALL
	-- A standby has no overflowed backend of its own: the primary's
	-- overflow reaches it through the snapshots built from its WAL.
	SELECT 'subxact_overflow', c.level,
		   'a transaction on the primary (its overflow reaches this standby''s snapshots)',
		   'In the last ' || params.w_text || ' on this standby: ' || v.text
		   || '; cost: ' || c.text || '.',
		   'Find the culprit on the primary: SELECT * FROM pg_contention_findings() there names the backend and statement; keep its transactions under 64 subtransactions.',
		   jsonb_build_object('suboverflowed_calls', v.calls, 'victim_query_ids', v.query_ids,
							  'subtrans_lookups', c.lookups, 'subtrans_wait_samples', c.wait_samples,
							  'subtrans_wait_pct', pg_catalog.round(c.wait_pct::numeric, 2),
							  'window_seconds', params.w_s),
		   v.first_seen
	  FROM victims AS v, cost_text AS c, params
	 WHERE params.standby AND v.calls > 0
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
				   sum(r.near_overflow_calls) AS near_calls, count(*) AS statements,
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
),
slru_findings AS (
	SELECT 'subtrans_slru_contention'::text AS problem,
		   CASE WHEN c.level = 'critical' THEN 'critical' ELSE 'warning' END AS severity,
		   'pg_subtrans, '
		   || CASE WHEN params.standby AND v.calls > 0
				   THEN 'driven by the primary''s overflowed transactions seen through this standby''s snapshots'
				   WHEN (SELECT count(*) FROM overflow_culprits) > 0
				   THEN 'driven by ' || (SELECT string_agg(o.subject, '; ' ORDER BY o.events DESC)
										   FROM (SELECT * FROM overflow_culprits ORDER BY events DESC LIMIT 3) AS o)
				   ELSE 'with no overflowed backend seen in the window' END AS subject,
		   'In the last ' || params.w_text || ': ' || c.text || '; ' || v.text || '.' AS evidence,
		   'Remove the overflow (see subxact_overflow): fewer than 64 subtransactions per transaction, no per-row EXCEPTION blocks, no driver autosave, smaller batches'
		   || CASE WHEN params.version_num >= 170000
				   THEN '; on PostgreSQL 17 and later raise subtransaction_buffers (now '
						|| pg_catalog.current_setting('subtransaction_buffers', true) || ', restart needed) to shorten the waits.'
				   ELSE '; before PostgreSQL 17 the pg_subtrans cache has a fixed 32 buffers.' END AS advice,
		   jsonb_build_object('subtrans_lookups', c.lookups,
							  'subtrans_lookups_per_second', pg_catalog.round(c.lookup_rate::numeric),
							  'subtrans_wait_samples', c.wait_samples,
							  'subtrans_wait_pct', pg_catalog.round(c.wait_pct::numeric, 2),
							  'active_samples', c.active_samples,
							  'suboverflowed_calls', v.calls, 'victim_query_ids', v.query_ids,
							  'culprit_query_ids', (SELECT jsonb_agg(o.query_id) FROM overflow_culprits AS o),
							  'culprit_pids', (SELECT jsonb_agg(p) FROM overflow_culprits AS o,
													  jsonb_array_elements(o.pids) AS p),
							  'window_seconds', params.w_s) AS details,
		   coalesce((SELECT min(h.bucket_start) FROM history AS h
					  WHERE h.subtrans_slru_samples + h.subtrans_buffer_samples > 0
						 OR h.subtrans_lookups >= params.lookups_warning),
					c.first_overflow_second) AS since
	  FROM cost_text AS c, victims AS v, params
	 WHERE c.level <> 'info'
),
root_holders AS (
	SELECT h.*,
		   CASE WHEN h.held_for >= params.horizon_critical_age
					 OR h.xmin_age >= params.horizon_critical_xid_age THEN 'critical'
				ELSE 'warning' END AS level,
		   CASE h.kind
				WHEN 'backend' THEN 'pid ' || h.pid || ' ('
					|| concat_ws(', ', 'application ' || nullif(h.application_name, ''),
								 'user ' || h.usename, 'database ' || h.datname,
								 coalesce(h.state, 'transaction') || coalesce(' for ' || @extschema@.pg_contention_duration(h.held_for), ''))
					|| ')' || coalesce(', last statement ' || @extschema@.pg_contention_shorten(h.query), '')
				WHEN 'replication slot' THEN 'replication slot ' || h.holder
					|| ' (' || h.state || CASE WHEN h.catalog_only THEN ', catalog rows only' ELSE '' END || ')'
				WHEN 'prepared transaction' THEN 'prepared transaction ''' || h.holder || ''''
					|| coalesce(' (database ' || h.datname || ', owner ' || h.usename || ')', '')
				WHEN 'standby feedback' THEN 'standby feedback through walsender pid ' || h.pid
					|| coalesce(' (' || nullif(h.application_name, '') || ')', '')
				ELSE h.kind || ' ' || h.holder END AS subject,
		   CASE h.kind
				WHEN 'backend' THEN 'pid ' || h.pid || coalesce(' (application ' || nullif(h.application_name, '') || ')', '')
				WHEN 'replication slot' THEN 'replication slot ' || h.holder
				WHEN 'prepared transaction' THEN 'prepared transaction ''' || h.holder || ''''
				WHEN 'standby feedback' THEN 'standby feedback (walsender pid ' || h.pid || ')'
				ELSE h.kind || ' ' || h.holder END AS label
	  FROM holders AS h, params
	 WHERE h.follows IS NULL
),
index_rows AS (
	SELECT r.*, i.indrelid,
		   r.dead_visits::float8 / r.scans AS dead_per_scan,
		   r.dead_visits::float8 / nullif(r.entries_read, 0) AS dead_ratio,
		   r.shared_blks::float8 / nullif(r.top_level_calls, 0) AS blks_per_call,
		   CASE WHEN r.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
				THEN pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(ic.relname) END AS index_name,
		   t.schemaname, t.relname, t.n_dead_tup, t.last_vacuum
	  FROM recent AS r
	  LEFT JOIN pg_catalog.pg_class AS ic
		ON ic.oid = r.indexrelid AND r.datname = pg_catalog.current_database()
	  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
	  LEFT JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
	  LEFT JOIN dead_here AS t ON t.relid = i.indrelid
	 WHERE r.indexrelid IS NOT NULL AND r.scans > 0
),
index_findings AS (
	SELECT 'dead_tuple_index_scan'::text AS problem,
		   CASE WHEN x.dead_per_scan >= params.dead_critical THEN 'critical' ELSE 'warning' END AS severity,
		   'index ' || coalesce(x.index_name, 'oid ' || x.indexrelid || ' in database ' || coalesce(x.datname, x.dbid::text))
		   || ' scanned by ' || @extschema@.pg_contention_shorten(x.query)
		   || coalesce(' (query id ' || x.query_id || ')', '') AS subject,
		   pg_catalog.to_char(x.scans, 'FM999,999,999,990') || ' execution'
		   || CASE WHEN x.scans = 1 THEN '' ELSE 's' END || ' from '
		   || pg_catalog.to_char(x.period_start, 'HH24:MI:SS') || ' to '
		   || pg_catalog.to_char(x.period_end, 'HH24:MI:SS') || ' visited '
		   || pg_catalog.to_char(x.dead_per_scan, 'FM999,999,999,990') || ' dead index entries each ('
		   || pg_catalog.to_char(100 * x.dead_ratio, 'FM990.0') || '% of the entries read)'
		   || coalesce(' and used ' || pg_catalog.to_char(x.blks_per_call, 'FM999,999,999,990')
					   || ' buffers per execution', '')
		   || '; ' || CASE WHEN h.subject IS NOT NULL
						   THEN 'vacuum cannot remove them while ' || h.label || ' holds the xmin horizon ('
								|| pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990') || ' transactions old).'
						   ELSE 'nothing holds the xmin horizon back: vacuum has not removed them yet'
								|| coalesce(' (' || x.schemaname || '.' || x.relname || ': '
											|| pg_catalog.to_char(x.n_dead_tup, 'FM999,999,999,990') || ' dead tuples, last vacuumed '
											|| coalesce(@extschema@.pg_contention_duration(params.now - x.last_vacuum) || ' ago', 'never')
											|| ')', '') || '.' END AS evidence,
		   CASE WHEN h.subject IS NOT NULL
				THEN 'End what holds the horizon ('
					 || CASE WHEN h.blocks_cleanup THEN 'see xmin_horizon_held' ELSE h.label END || '), then VACUUM '
					 || coalesce(pg_catalog.quote_ident(x.schemaname) || '.' || pg_catalog.quote_ident(x.relname), 'the table')
					 || '; the entries stay dead until vacuum removes them.'
				ELSE 'VACUUM ' || coalesce(pg_catalog.quote_ident(x.schemaname) || '.' || pg_catalog.quote_ident(x.relname), 'the table')
					 || ' now; if this recurs, let autovacuum visit the table more often (a lower autovacuum_vacuum_scale_factor or cost delay for it).' END AS advice,
		   jsonb_build_object('indexrelid', x.indexrelid::bigint, 'relid', x.indrelid::bigint, 'database_oid', x.dbid::bigint,
							  'query_id', x.query_id, 'executions', x.scans,
							  'entries_read', x.entries_read, 'dead_visits', x.dead_visits,
							  'dead_per_execution', pg_catalog.round(x.dead_per_scan::numeric, 1),
							  'dead_ratio', pg_catalog.round(x.dead_ratio::numeric, 4),
							  'buffers_per_execution', pg_catalog.round(x.blks_per_call::numeric, 1),
							  'period_start', x.period_start, 'period_end', x.period_end,
							  'holder', CASE WHEN h.subject IS NOT NULL
											 THEN jsonb_build_object('kind', h.kind, 'holder', h.holder, 'pid', h.pid,
																	 'xmin', h.xmin::text, 'xmin_age', h.xmin_age) END) AS details,
		   x.period_start AS since
	  FROM index_rows AS x
	  CROSS JOIN params
	  -- The oldest root holder that holds this table's cleanup: a slot or
	  -- standby feedback holds every database, a transaction its own.
	  -- Past the thresholds (blocks_cleanup), or younger but already
	  -- running when this period's dead entries were counted: a
	  -- transaction that began after them cannot be what keeps them.
	  LEFT JOIN LATERAL (SELECT * FROM root_holders AS r
						  WHERE NOT r.catalog_only
							AND (r.kind IN ('replication slot', 'standby feedback')
								 OR r.datname IS NOT DISTINCT FROM x.datname)
							AND (r.blocks_cleanup OR params.now - r.held_for <= x.period_start)
						  ORDER BY r.xmin_age DESC LIMIT 1) AS h ON true
	 WHERE x.dead_per_scan >= params.dead_warning
	   AND x.dead_ratio >= params.dead_ratio
),
horizon_findings AS (
	SELECT 'xmin_horizon_held'::text AS problem,
		   CASE WHEN h.level = 'critical'
					 OR EXISTS (SELECT 1 FROM index_findings AS f
								 WHERE f.severity = 'critical' AND f.details -> 'holder' ->> 'holder' = h.holder)
				THEN 'critical' ELSE 'warning' END AS severity,
		   h.subject,
		   'Its xmin is ' || pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990') || ' transactions old'
		   || coalesce(', held for ' || @extschema@.pg_contention_duration(h.held_for), '')
		   || CASE WHEN h.catalog_only THEN '; it holds back the removal of dead catalog rows only'
				   ELSE '; the tables of database ' || pg_catalog.current_database() || ' hold '
						|| pg_catalog.to_char((SELECT coalesce(sum(t.n_dead_tup), 0) FROM dead_here AS t), 'FM999,999,999,990')
						|| ' dead tuples' END
		   || CASE WHEN (SELECT count(*) FROM index_findings AS f WHERE f.details -> 'holder' ->> 'holder' = h.holder) > 0
				   THEN '; it keeps the dead index entries of '
						|| (SELECT count(*) FROM index_findings AS f WHERE f.details -> 'holder' ->> 'holder' = h.holder)
						|| ' dead_tuple_index_scan finding(s)'
				   ELSE '' END || '.' AS evidence,
		   CASE h.kind
				WHEN 'backend' THEN
					CASE WHEN h.state LIKE 'idle in transaction%'
						 THEN 'End the transaction: have the application commit, or SELECT pg_terminate_backend(' || h.pid
							  || '); idle_in_transaction_session_timeout keeps it from recurring.'
						 ELSE 'If the statement can go, SELECT pg_cancel_backend(' || h.pid
							  || ') (pg_terminate_backend ends the session); long reports belong on a standby or under statement_timeout.' END
				WHEN 'replication slot' THEN
					'If nothing consumes slot ' || h.holder || ' any more, drop it: SELECT pg_drop_replication_slot('
					|| pg_catalog.quote_literal(h.holder) || '); otherwise get its consumer running again.'
				WHEN 'prepared transaction' THEN
					'Finish it: COMMIT PREPARED ' || pg_catalog.quote_literal(h.holder) || ' or ROLLBACK PREPARED '
					|| pg_catalog.quote_literal(h.holder) || ' (whoever prepared it should decide which).'
				WHEN 'standby feedback' THEN
					'A query on the standby holds it through hot_standby_feedback: find it in pg_contention_horizon on the standby and end it; with hot_standby_feedback = off such queries get cancelled instead.'
				ELSE 'End it.' END AS advice,
		   jsonb_build_object('kind', h.kind, 'holder', h.holder, 'pid', h.pid, 'database', h.datname,
							  'xmin', h.xmin::text, 'xmin_age', h.xmin_age,
							  'held_seconds', pg_catalog.round(pg_catalog.date_part('epoch', h.held_for)::numeric),
							  'catalog_only', h.catalog_only,
							  'dead_tuples', (SELECT coalesce(sum(t.n_dead_tup), 0) FROM dead_here AS t),
							  'index_findings', (SELECT coalesce(jsonb_agg(f.details -> 'indexrelid'), '[]')
												   FROM index_findings AS f
												  WHERE f.details -> 'holder' ->> 'holder' = h.holder)) AS details,
		   params.now - h.held_for AS since
	  FROM root_holders AS h, params
	 WHERE h.blocks_cleanup
),
oldsnap_findings AS (
	SELECT 'old_snapshot_threshold_spinlock'::text AS problem,
		   CASE WHEN o.probe_p99_us >= params.probe_critical OR o.lock_held_pct >= params.held_critical THEN 'critical'
				WHEN o.probe_p99_us >= params.probe_warning OR o.lock_held_pct >= params.held_warning THEN 'warning'
				ELSE 'info' END AS severity,
		   'old_snapshot_threshold = ' || pg_catalog.current_setting('old_snapshot_threshold') AS subject,
		   'In the last ' || coalesce(o.window_seconds_covered, 0) || ' s: '
		   || CASE WHEN coalesce(o.probes, 0) = 0 THEN 'no probe of its spinlock yet'
				   ELSE 'its spinlock took ' || coalesce(pg_catalog.round(o.probe_p99_us::numeric, 1)::text, '?')
						|| ' us at the 99th percentile (max '
						|| coalesce(pg_catalog.round(o.probe_max_us::numeric, 1)::text, '?') || ' us) over '
						|| o.probes || ' probes, and was held in '
						|| pg_catalog.to_char(coalesce(o.lock_held_pct, 0), 'FM990.0') || '% of reads' END
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
),
found AS (
	SELECT * FROM overflow_findings
	UNION ALL SELECT * FROM slru_findings
	UNION ALL SELECT * FROM near_overflow_findings
	UNION ALL SELECT * FROM index_findings
	UNION ALL SELECT * FROM horizon_findings
	UNION ALL SELECT * FROM oldsnap_findings
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM found AS f
 ORDER BY CASE f.severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
		  CASE f.problem
			   WHEN 'xmin_horizon_held' THEN 0 WHEN 'subxact_overflow' THEN 1
			   WHEN 'subtrans_slru_contention' THEN 2 WHEN 'dead_tuple_index_scan' THEN 3
			   WHEN 'old_snapshot_threshold_spinlock' THEN 4 ELSE 5 END,
		  f.since NULLS LAST, f.subject;
END
$$;

--
-- The report's last section shows the horizon's age too.
--
-- A plain-text report for pasting into a ticket: the findings, then the
-- top statements and indexes by cost, the horizon holders, and the last
-- minutes of history second by second.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_report(window_length interval DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET jit = off
AS $$
DECLARE
	report text;
	section text;
	n integer;
BEGIN
	report := pg_catalog.format(E'pg_contention report at %s\nPostgreSQL %s, %s, findings window %s\n',
		pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ'),
		pg_catalog.current_setting('server_version'),
		CASE WHEN pg_catalog.pg_is_in_recovery() THEN 'hot standby' ELSE 'primary' END,
		@extschema@.pg_contention_duration(coalesce(window_length,
			pg_catalog.current_setting('pg_contention.findings_window', true)::interval)));

	SELECT count(*),
		   pg_catalog.string_agg(pg_catalog.format(E'%s. [%s] %s: %s\n   %s\n   Advice: %s\n   Since: %s',
				f.n, f.severity, f.problem, f.subject, f.evidence, f.advice,
				coalesce(pg_catalog.to_char(f.since, 'YYYY-MM-DD HH24:MI:SS'), 'unknown')), E'\n' ORDER BY f.n)
	  INTO n, section
	  FROM (SELECT pg_catalog.row_number() OVER () AS n, x.*
			  FROM @extschema@.pg_contention_findings(window_length) AS x) AS f;
	report := report || pg_catalog.format(E'\n== Findings (%s)\n%s\n', n,
		coalesce(section, 'None: nothing pg_contention checks for is wrong now.'));

	SELECT pg_catalog.string_agg(pg_catalog.format('%10s %12s %10s %12s %8s  %s',
				s.calls, s.rows, coalesce(pg_catalog.round(s.blks_per_row::numeric, 1)::text, '-'),
				s.suboverflowed_calls, s.subtrans_wait_samples,
				@extschema@.pg_contention_shorten(s.query)), E'\n')
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_statements
			 ORDER BY shared_blks_hit + shared_blks_read DESC, suboverflowed_calls DESC
			 LIMIT 10) AS s;
	report := report || E'\n== Top statements by buffers used, since the last reset\n'
		|| pg_catalog.format('%10s %12s %10s %12s %8s  %s', 'calls', 'rows', 'blks/row',
							 'suboverflow', 'subtrans', 'statement')
		|| E'\n' || coalesce(section, '(none)') || E'\n';

	SELECT pg_catalog.string_agg(pg_catalog.format('%-30s %10s %14s %14s %7s  %s',
				coalesce(i.schemaname || '.' || i.indexrelname, 'oid ' || i.indexrelid),
				i.scans, i.dead_visits, i.max_dead_visits_per_scan,
				coalesce(pg_catalog.to_char(100 * i.dead_ratio, 'FM990.0') || '%', '-'),
				@extschema@.pg_contention_shorten(i.query)), E'\n')
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_index_scans
			 WHERE dead_visits > 0
			 ORDER BY dead_visits DESC LIMIT 10) AS i;
	report := report || E'\n== Top indexes by dead entries visited, since the last reset\n'
		|| pg_catalog.format('%-30s %10s %14s %14s %7s  %s', 'index', 'scans', 'dead visits',
							 'max per scan', 'dead', 'statement')
		|| E'\n' || coalesce(section, '(none)') || E'\n';

	SELECT pg_catalog.string_agg(pg_catalog.format('%-20s %-16s %8s %12s %14s %-7s %s',
				h.kind, h.holder, coalesce(h.pid::text, '-'), h.xmin_age,
				coalesce(@extschema@.pg_contention_duration(h.held_for), '-'),
				CASE WHEN h.blocks_cleanup THEN 'yes' ELSE 'no' END,
				concat_ws(', ', h.state, nullif(h.application_name, ''),
						  @extschema@.pg_contention_shorten(h.query))), E'\n')
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_horizon LIMIT 10) AS h;
	report := report || E'\n== Holders of the xmin horizon\n'
		|| pg_catalog.format('%-20s %-16s %8s %12s %14s %-7s %s', 'kind', 'holder', 'pid',
							 'xmin age', 'held for', 'blocks', 'state')
		|| E'\n' || coalesce(section, '(none)') || E'\n';

	SELECT pg_catalog.string_agg(pg_catalog.format('%8s %6s %6s %6s %6s %6s %6s %8s %6s %12s %10s',
				pg_catalog.to_char(h.bucket_start, 'HH24:MI:SS'),
				pg_catalog.round(h.avg_active_backends::numeric, 1), h.cpu_samples, h.lwlock_samples,
				h.lock_samples, h.io_samples, h.ipc_samples,
				h.subtrans_slru_samples + h.subtrans_buffer_samples,
				h.max_overflowed_backends, coalesce(h.subtrans_lookups::text, '-'),
				coalesce(h.horizon_xid_age::text, '-')),
				E'\n' ORDER BY h.bucket_start)
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_history
			 ORDER BY bucket_start DESC LIMIT 60) AS h;
	report := report || E'\n== The last 60 seconds (samples per second)\n'
		|| pg_catalog.format('%8s %6s %6s %6s %6s %6s %6s %8s %6s %12s %10s', 'second', 'active',
							 'cpu', 'lwlock', 'lock', 'io', 'ipc', 'subtrans', 'ovfl', 'lookups',
							 'xmin age')
		|| E'\n' || coalesce(section, '(no history: is the sampler running?)') || E'\n';
	RETURN report;
END
$$;

--
-- Metrics (1.3): every figure a monitoring system polls, one row each,
-- with bounded labels (the five worst index scans only).  families limits
-- the work to some of them: subxact, sampler, horizon, index,
-- old_snapshot, findings (an exporter's queries each read their own).
--
CREATE FUNCTION @extschema@.pg_contention_metrics(
	families text[] DEFAULT NULL,
	OUT metric text,
	OUT labels jsonb,
	OUT value double precision,
	OUT help text,
	OUT type text
)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
	IF NOT coalesce(families, '{}') <@ ARRAY['subxact', 'sampler', 'horizon', 'index', 'old_snapshot', 'findings']
		OR array_position(families, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'unknown metric family in %', families
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The families are subxact, sampler, horizon, index, old_snapshot and findings; NULL reads them all.';
	END IF;

	IF families IS NULL OR 'subxact' = ANY (families) THEN
		-- Subtransaction caches now.
		RETURN QUERY
		SELECT 'overflowed_backends', '{}'::jsonb, count(*) FILTER (WHERE s.subxact_overflowed)::float8,
			   'Backends whose subtransaction cache has overflowed (more than 64 subtransactions): every snapshot taken meanwhile is suboverflowed.', 'gauge'
		  FROM @extschema@.pg_contention_subxact AS s
		UNION ALL
		SELECT 'near_overflow_backends', '{}', count(*) FILTER (WHERE NOT s.subxact_overflowed AND s.subxact_count >
				coalesce(pg_catalog.current_setting('pg_contention.subxact_warn_level', true), '48')::integer)::float8,
			   'Backends with more subtransactions than pg_contention.subxact_warn_level (48), not yet overflowed.', 'gauge'
		  FROM @extschema@.pg_contention_subxact AS s;
	END IF;

	IF families IS NULL OR 'subxact' = ANY (families) THEN
		-- Counters since the last reset.
		RETURN QUERY
		SELECT 'overflow_events_total', '{}'::jsonb, i.events_written::float8,
			   'Subtransaction-cache overflow events since the last reset.', 'counter'
		  FROM @extschema@.pg_contention_info AS i
		UNION ALL
		SELECT 'statement_evictions_total', '{}', i.statement_evictions::float8,
			   'Statements evicted from the full statement store since the last reset.', 'counter'
		  FROM @extschema@.pg_contention_info AS i
		UNION ALL
		SELECT 'suboverflowed_calls_total', '{}', coalesce(sum(s.suboverflowed_calls), 0)::float8,
			   'Executions that ran on a suboverflowed snapshot, summed over the statements kept (an evicted statement takes its count with it).', 'counter'
		  FROM @extschema@.pg_contention_statements() AS s;
	END IF;

	IF families IS NULL OR 'sampler' = ANY (families) THEN
		-- The sampler's last 15 seconds.
		RETURN QUERY
		WITH h AS (
			SELECT * FROM @extschema@.pg_contention_history
			 WHERE bucket_start >= pg_catalog.clock_timestamp() - interval '16 seconds'
		)
		SELECT 'subtrans_lookups_per_second', '{}'::jsonb, coalesce(avg(h.subtrans_lookups), 0)::float8,
			   'pg_subtrans (Subtrans SLRU) page lookups per second over the last 15 seconds.', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'active_backends', '{}', coalesce(avg(h.avg_active_backends), 0)::float8,
			   'Active backends (not idle), average over the last 15 seconds.', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'subtrans_wait_share', '{}',
			   coalesce(sum(h.subtrans_slru_samples + h.subtrans_buffer_samples)::float8
						/ nullif(sum(h.avg_active_backends * h.ticks), 0), 0),
			   'Share of active backends'' samples waiting on SubtransSLRU or SubtransBuffer over the last 15 seconds (0 to 1).', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'max_overflowed_backends', '{}', coalesce(max(h.max_overflowed_backends), 0)::float8,
			   'Most backends seen overflowed in one sample over the last 15 seconds.', 'gauge'
		  FROM h;
	END IF;

	IF families IS NULL OR 'horizon' = ANY (families) THEN
		-- The xmin horizon: per kind of holder, the oldest; and how many block
		-- cleanup (root holders past pg_contention.horizon_min_age).
		RETURN QUERY
		WITH kinds(kind) AS (
			VALUES ('backend'), ('prepared transaction'), ('replication slot'), ('standby feedback')
		), h AS MATERIALIZED (
			SELECT * FROM @extschema@.pg_contention_horizon
		)
		SELECT 'horizon_age_xids', jsonb_build_object('kind', k.kind),
			   coalesce(max(h.xmin_age), 0)::float8,
			   'Age in transactions of the oldest xmin held by each kind of holder (0: none holds).', 'gauge'
		  FROM kinds AS k LEFT JOIN h ON h.kind = k.kind
		 GROUP BY k.kind
		UNION ALL
		SELECT 'horizon_held_seconds', jsonb_build_object('kind', k.kind),
			   coalesce(max(pg_catalog.date_part('epoch', h.held_for)), 0)::float8,
			   'How long the longest holder of each kind has held the horizon, in seconds (0: none, or unknown for slots and standby feedback).', 'gauge'
		  FROM kinds AS k LEFT JOIN h ON h.kind = k.kind
		 GROUP BY k.kind
		UNION ALL
		SELECT 'horizon_blocking_holders', '{}', count(*) FILTER (WHERE h.blocks_cleanup)::float8,
			   'Root holders of the xmin horizon past pg_contention.horizon_min_age (or horizon_min_xid_age): what keeps vacuum from removing dead rows.', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'cluster_horizon_age_xids', '{}', coalesce((SELECT x.horizon_xid_age FROM @extschema@.pg_contention_history AS x
														  ORDER BY x.bucket_start DESC LIMIT 1), 0)::float8,
			   'Age in transactions of the cluster''s xmin horizon as vacuum computes it, at the last second the sampler recorded.', 'gauge';
	END IF;

	IF families IS NULL OR 'index' = ANY (families) THEN
		-- The worst index scans by dead entries per execution: the top 5, so
		-- that the labels stay few.
		RETURN QUERY
		WITH worst AS (
			-- The store's rows, without the view's names for every one of them.
			SELECT s.indexrelid, s.query_id, sum(s.dead_visits)::float8 / sum(s.scans) AS per_execution
			  FROM @extschema@.pg_contention_index_scans() AS s
			 WHERE s.dead_visits > 0 AND s.scans > 0
			   AND s.dbid = (SELECT d.oid FROM pg_catalog.pg_database AS d
							  WHERE d.datname = pg_catalog.current_database())
			 GROUP BY s.indexrelid, s.query_id
			 ORDER BY 3 DESC
			 LIMIT 5
		)
		SELECT 'index_dead_entries_per_execution',
			   jsonb_build_object('database', pg_catalog.current_database(),
								  'index', coalesce(n.nspname || '.' || c.relname, 'oid ' || w.indexrelid),
								  'query_id', w.query_id::text),
			   w.per_execution,
			   'Dead index entries visited per execution, since the last reset: the five worst (index, statement) pairs of this database.', 'gauge'
		  FROM worst AS w
		  LEFT JOIN pg_catalog.pg_class AS c ON c.oid = w.indexrelid
		  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
		 ORDER BY w.per_execution DESC;
	END IF;

	IF families IS NULL OR 'old_snapshot' = ANY (families) THEN
		-- old_snapshot_threshold pressure (13 to 16, while it is on).
		RETURN QUERY
		SELECT 'old_snapshot_probe_p99_seconds', '{}'::jsonb, coalesce(o.probe_p99_us, 0) / 1e6,
			   'old_snapshot_threshold: 99th percentile of the time to take its spinlock over the last minute (0 when off).', 'gauge'
		  FROM @extschema@.pg_contention_old_snapshot AS o
		UNION ALL
		SELECT 'old_snapshot_lock_held_ratio', '{}', coalesce(o.lock_held_pct, 0) / 100,
			   'old_snapshot_threshold: share of reads that found its spinlock held over the last minute (0 to 1; 0 when off).', 'gauge'
		  FROM @extschema@.pg_contention_old_snapshot AS o;
	END IF;

	IF families IS NULL OR 'findings' = ANY (families) THEN
		-- The findings: a fixed set of problems and severities.
		RETURN QUERY
		WITH problems(problem) AS (
			VALUES ('subxact_overflow'), ('subxact_near_overflow'), ('subtrans_slru_contention'),
				   ('dead_tuple_index_scan'), ('xmin_horizon_held'), ('old_snapshot_threshold_spinlock')
		), severities(severity) AS (
			VALUES ('info'), ('warning'), ('critical')
		), f AS MATERIALIZED (
			SELECT f.problem, f.severity FROM @extschema@.pg_contention_findings() AS f
		)
		SELECT 'findings', jsonb_build_object('problem', p.problem, 'severity', s.severity),
			   (SELECT count(*) FROM f WHERE f.problem = p.problem AND f.severity = s.severity)::float8,
			   'Current findings (pg_contention_findings) by problem and severity.', 'gauge'
		  FROM problems AS p CROSS JOIN severities AS s;
	END IF;

	IF families IS NULL OR 'sampler' = ANY (families) THEN
		RETURN QUERY
		SELECT 'sampler_running', '{}'::jsonb, (CASE WHEN s.running THEN 1 ELSE 0 END)::float8,
			   'Whether the sampler background worker is running (1) or not (0).', 'gauge'
		  FROM @extschema@.pg_contention_sampler_status AS s;
	END IF;
END
$$;

CREATE VIEW @extschema@.pg_contention_metrics AS
	SELECT * FROM @extschema@.pg_contention_metrics(NULL);

GRANT SELECT ON @extschema@.pg_contention_metrics TO PUBLIC;
