--
-- Rule dead_tuple_index_scan: a statement's index scans visit many dead
-- entries per execution, on average or in its worst executions; names the
-- oldest root horizon holder that keeps them, says vacuum has not removed
-- them, or, once the cause is gone, says when and how it was resolved
-- (severity info).
--
-- horizon_roots: the root holders as pg_contention_findings read them for
-- every rule of the evaluation (pg_contention_horizon_roots takes them so); NULL:
-- read now.
--
-- per_cause: one row per cause (details.cause), as pg_contention_findings
-- shows them: the rows are judged on their figures, and only each cause's
-- costliest row is described, with the cause's counts
-- (pg_contention_cause_group).  False or NULL: every row, as
-- pg_contention_index_findings lists them.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_dead_tuple_index_scan(
	window_length interval DEFAULT NULL,
	horizon_roots jsonb DEFAULT NULL,
	per_cause boolean DEFAULT false,
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
-- Holders given as no array are an error whatever the rows
-- (pg_contention_horizon_roots says so), even where no row would have
-- read them; an array is read only where a row needs its holder.
IF horizon_roots IS NOT NULL AND pg_catalog.jsonb_typeof(horizon_roots) IS DISTINCT FROM 'array' THEN
	PERFORM pg_catalog.count(*) FROM @extschema@.pg_contention_horizon_roots(window_length, horizon_roots);
END IF;
RETURN QUERY
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
-- (read once, by keyed: not copied twice)
recent AS (
	-- Texts are shortened only where a finding shows them: 5,000 texts
	-- through a regular expression would cost more than everything else.
	SELECT r.*, d.datname
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true, false, false, true) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
),
-- When the table statistics (last_vacuum) were last lost: pg_stat_reset()
-- in this database, or a crash (or an immediate shutdown), after which the
-- server starts with empty statistics while the statement store comes
-- back from its file.  The crash shows as the shared statistics' reset
-- after the stores were loaded (a clean restart keeps both).
stats_lost AS MATERIALIZED (
	SELECT greatest(
			   (SELECT d.stats_reset FROM pg_catalog.pg_stat_database AS d
				 WHERE d.datname = pg_catalog.current_database()),
			   (SELECT b.stats_reset FROM pg_catalog.pg_stat_bgwriter AS b, @extschema@.pg_contention_info() AS i
				 WHERE b.stats_reset >= i.last_loaded)) AS at
),
-- Numbered oldest first: each row's holder is the oldest that qualifies,
-- its lowest number (an aggregate per row, not a sort per row).
root_holders AS MATERIALIZED (
	SELECT r.*, pg_catalog.row_number() OVER (ORDER BY r.xmin_age DESC, r.kind, r.holder) AS age_rank
	  FROM @extschema@.pg_contention_horizon_roots(window_length, horizon_roots) AS r
),
-- One statement is one normalised text in one database, per index: the
-- query ids a driver makes of it (a parameter bound as int2 here and int4
-- there), and its users, are summed into one finding, with every query
-- id in details.  A text masked from this role is not grouped.  The
-- worst execution is the group's worst; the last, its latest.
keyed AS MATERIALIZED (
	SELECT k.*, count(*) OVER (PARTITION BY k.dbid, k.indexrelid, k.text_key) AS group_rows
	  FROM (SELECT r.*,
				   CASE WHEN r.query = '<insufficient privilege>'
						THEN r.userid::text || ' ' || coalesce(r.query_id::text, '') ELSE r.query END AS text_key
			  FROM recent AS r
			 WHERE r.indexrelid IS NOT NULL AND r.scans > 0) AS k
),
-- A group of several rows: each row's place in it, by executions, by its
-- worst execution, its last, its last bad one, and the first of each
-- query id.
placed AS (
	SELECT k.*,
		   pg_catalog.row_number() OVER (PARTITION BY k.dbid, k.indexrelid, k.text_key ORDER BY k.scans DESC) AS by_scans,
		   pg_catalog.row_number() OVER (PARTITION BY k.dbid, k.indexrelid, k.text_key
										 ORDER BY k.worst_dead_visits DESC NULLS LAST) AS by_worst,
		   pg_catalog.row_number() OVER (PARTITION BY k.dbid, k.indexrelid, k.text_key ORDER BY k.last_at DESC NULLS LAST) AS by_last,
		   pg_catalog.row_number() OVER (PARTITION BY k.dbid, k.indexrelid, k.text_key
										 ORDER BY k.last_bad_at DESC NULLS LAST) AS by_bad,
		   pg_catalog.row_number() OVER (PARTITION BY k.dbid, k.indexrelid, k.text_key, k.query_id) AS by_query_id
	  FROM keyed AS k
	 WHERE k.group_rows > 1
),
grouped AS (
	-- Most groups are one row: it is the group.
	SELECT k.dbid, k.datname, k.indexrelid, k.text_key, k.query, k.query_id,
		   CASE WHEN k.query_id IS NULL THEN '[]' ELSE jsonb_build_array(k.query_id) END AS query_ids,
		   CASE WHEN k.query_id IS NULL THEN 0 ELSE 1 END::bigint AS n_query_ids,
		   k.period_start, k.period_end, k.calls, k.top_level_calls, k.shared_blks, k.scans, k.entries_read, k.dead_visits,
		   k.worst_dead_visits, k.worst_entries_read, k.worst_buffers, k.worst_rows, k.worst_at, k.worst_literals,
		   k.worst_caller_query_id AS worst_caller, k.query_id AS worst_query_id, k.last_dead_visits, k.last_at,
		   k.bad_scans, k.bad_dead_visits, k.last_bad_at, k.clean_since
	  FROM keyed AS k
	 WHERE k.group_rows = 1
	UNION ALL
	SELECT r.dbid, min(r.datname) AS datname, r.indexrelid, r.text_key,
		   min(r.query) FILTER (WHERE r.by_scans = 1),
		   min(r.query_id) FILTER (WHERE r.by_scans = 1),
		   coalesce(jsonb_agg(r.query_id ORDER BY r.query_id) FILTER (WHERE r.query_id IS NOT NULL AND r.by_query_id = 1),
					'[]'),
		   count(r.query_id) FILTER (WHERE r.by_query_id = 1),
		   min(r.period_start), max(r.period_end),
		   sum(r.calls)::bigint, sum(r.top_level_calls)::bigint,
		   sum(r.shared_blks)::bigint, sum(r.scans)::bigint,
		   sum(r.entries_read)::bigint, sum(r.dead_visits)::bigint,
		   min(r.worst_dead_visits) FILTER (WHERE r.by_worst = 1),
		   min(r.worst_entries_read) FILTER (WHERE r.by_worst = 1),
		   min(r.worst_buffers) FILTER (WHERE r.by_worst = 1),
		   min(r.worst_rows) FILTER (WHERE r.by_worst = 1),
		   min(r.worst_at) FILTER (WHERE r.by_worst = 1),
		   min(r.worst_literals) FILTER (WHERE r.by_worst = 1),
		   min(r.worst_caller_query_id) FILTER (WHERE r.by_worst = 1),
		   min(r.query_id) FILTER (WHERE r.by_worst = 1),
		   min(r.last_dead_visits) FILTER (WHERE r.by_last = 1),
		   max(r.last_at),
		   sum(r.bad_scans)::bigint, sum(r.bad_dead_visits)::bigint,
		   max(r.last_bad_at),
		   -- Clean since the group's last bad execution: that statement's.
		   min(r.clean_since) FILTER (WHERE r.by_bad = 1)
	  FROM placed AS r
	 GROUP BY r.dbid, r.indexrelid, r.text_key
),
index_rows AS (
	SELECT r.*, h.here,
		   r.dead_visits::float8 / r.scans AS dead_per_scan,
		   r.dead_visits::float8 / nullif(r.entries_read, 0) AS dead_ratio,
		   r.shared_blks::float8 / nullif(r.top_level_calls, 0) AS blks_per_call,
		   r.worst_dead_visits::float8 / nullif(r.worst_entries_read, 0) AS worst_ratio,
		   r.bad_dead_visits::float8 / nullif(r.bad_scans, 0) AS bad_per_scan,
		   -- The last execution that met the threshold (the worst, if the
		   -- threshold was raised since).
		   coalesce(r.last_bad_at, r.worst_at) AS last_bad,
		   -- This database's names from its catalog, another's as the
		   -- backends that scanned the index noted them there (with its
		   -- database in the texts: not the reader's).
		   CASE WHEN here THEN pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(ic.relname)
				ELSE pg_catalog.quote_ident(nm.schemaname) || '.' || pg_catalog.quote_ident(nm.indexrelname) END AS index_qname,
		   CASE WHEN here THEN '' ELSE ' in database ' || pg_catalog.quote_ident(r.datname) END AS in_database,
		   -- Not in this database's catalog: dropped (a temporary one with
		   -- its session), or not committed yet (then only the transaction
		   -- that made it can use it).
		   r.datname = pg_catalog.current_database() AND ic.oid IS NULL AS index_gone,
		   -- A temporary index (of one session) and its owner: the worker
		   -- makes one incident of one role's temporary indexes, and counts
		   -- an incident that no holder explains for the index's owner.
		   ic.relpersistence = 't' AS index_temporary, coalesce(ic.relowner, nm.owner) AS index_owner,
		   -- Another database's table, as noted with the index (this
		   -- database's table and its statistics are read only where a row
		   -- needs them: judged, index_findings).
		   nm.relid AS named_relid, nm.schemaname AS named_schema, nm.relname AS named_table
	  FROM grouped AS r
	  CROSS JOIN LATERAL (SELECT r.datname = pg_catalog.current_database() AS here) AS h
	  LEFT JOIN pg_catalog.pg_class AS ic ON ic.oid = r.indexrelid AND here
	  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
	  LEFT JOIN @extschema@.pg_contention_index_names() AS nm
		ON nm.dbid = r.dbid AND nm.indexrelid = r.indexrelid AND NOT here
),
judged AS MATERIALIZED (
	SELECT j.*,
		   CASE WHEN j.state IN ('vacuumed', 'clean', 'unknown', 'dropped') THEN 'info'
				WHEN j.state = 'held' AND j.dead_per_scan >= params.dead_critical THEN 'critical'
				ELSE 'warning' END AS severity
	  FROM params, (
	SELECT x.*, h.h_kind, h.h_holder, h.h_pid, h.h_xmin, h.h_xmin_age, h.h_blocks, h.h_subject,
		   -- another database's transaction says which
		   h.h_label || CASE WHEN h.h_kind IN ('backend', 'prepared transaction') AND h.h_datname IS DISTINCT FROM x.datname
							 THEN ' in database ' || pg_catalog.quote_ident(h.h_datname)
							 ELSE '' END AS h_label,
		   m.label || ' in database ' || pg_catalog.quote_ident(m.datname) AS m_label,
		   m.kind AS m_kind, m.holder AS m_holder, m.pid AS m_pid, m.datname AS m_datname, m.xmin_age AS m_xmin_age,
		   -- The average fires as before 1.4; the worst executions fire
		   -- alone when the clean ones average them away.
		   x.dead_per_scan >= params.dead_warning AND x.dead_ratio >= params.dead_ratio AS avg_fires,
		   v.last_vacuum,
		   CASE WHEN x.index_gone THEN 'dropped'
				WHEN h.h_subject IS NOT NULL THEN 'held'
				-- Vacuum ran after the last bad execution: they are gone.
				WHEN v.last_vacuum >= x.last_bad THEN 'vacuumed'
				-- The executions since the last bad one are clean: a plain
				-- scan marked the entries dead (a primary does once nothing
				-- holds the horizon), or the key is not looked up again.
				WHEN x.clean_since > x.last_bad THEN 'clean'
				-- The statistics that would say whether vacuum ran were
				-- lost after the last bad execution, and the statement has
				-- not run since: unknown, not a guess of "unvacuumed".
				WHEN v.last_vacuum IS NULL AND x.last_bad < stats_lost.at THEN 'unknown'
				ELSE 'unvacuumed' END AS state,
		   stats_lost.at AS stats_lost_at,
		   -- The cause, which pg_contention_findings groups the indexes by
		   -- (one finding) and the incidents are keyed on: the holder while
		   -- one holds the entries; one role's temporary indexes in one
		   -- database; else the index.
		   CASE WHEN h.h_subject IS NOT NULL AND NOT coalesce(x.index_gone, false)
				THEN 'held by ' || coalesce(h.h_kind, '?') || ' ' || coalesce(h.h_holder, '?')
				WHEN x.index_temporary
				THEN 'database ' || coalesce(x.dbid::text, '?') || ' temporary indexes of user '
					 || coalesce(x.index_owner::text, '?')
				ELSE 'database ' || coalesce(x.dbid::text, '?') || ' index ' || coalesce(x.indexrelid::text, '?') END AS cause
	  FROM (SELECT x.* FROM index_rows AS x, params
			 WHERE (x.dead_per_scan >= params.dead_warning AND x.dead_ratio >= params.dead_ratio)
				OR (x.worst_dead_visits >= params.dead_warning AND x.worst_ratio >= params.dead_ratio)) AS x
	  CROSS JOIN params
	  CROSS JOIN stats_lost
	  -- The oldest root holder that holds this table's cleanup: a slot or
	  -- standby feedback holds every database; a transaction with an XID
	  -- every database where snapshots are taken while it runs (each
	  -- snapshot's xmin is at or before it: these lookups' own snapshots
	  -- keep them from marking the entries dead, and vacuum's cutoff stops
	  -- at it whenever a session of the table's database has a snapshot);
	  -- a snapshot without an XID its own database only.  It must have been
	  -- holding at the last bad execution: one that began after it cannot
	  -- be what kept those entries.  A slot or a standby's feedback only
	  -- past the thresholds: their xmin moves at every message, and a few
	  -- seconds' stand is not a hold (when its age is unknown, past the
	  -- thresholds it is taken to have held).
	  LEFT JOIN LATERAL (SELECT r.kind AS h_kind, r.holder AS h_holder, r.pid AS h_pid,
								r.xmin AS h_xmin, r.xmin_age AS h_xmin_age, r.blocks_cleanup AS h_blocks,
								r.subject AS h_subject, r.label AS h_label, r.datname AS h_datname
						   FROM root_holders AS r
						  WHERE r.age_rank = (SELECT min(q.age_rank)
												FROM root_holders AS q
											   WHERE NOT q.catalog_only
												 AND (q.kind IN ('replication slot', 'standby feedback')
													  OR q.own_xid IS NOT NULL
													  OR q.datname IS NOT DISTINCT FROM x.datname)
												 AND (q.blocks_cleanup OR q.kind IN ('backend', 'prepared transaction'))
												 AND coalesce(q.held_since <= x.last_bad, q.blocks_cleanup))
						 -- (a scan of the few holders per row, not a hash of the
						 -- wide rows keyed on a subquery run twice per row)
						 OFFSET 0) AS h ON true
	  -- When vacuum last ran on the table, read where the state depends on
	  -- it (not held) and where every row is described (not per_cause): a
	  -- held row's is read for its description only.  Another database's
	  -- table from the shared statistics (PostgreSQL 15 on), so that the
	  -- finding read from here changes with that vacuum as read there.
	  LEFT JOIN LATERAL (SELECT @extschema@.pg_contention_table_last_vacuum(
									x.dbid, CASE WHEN x.here
												 THEN (SELECT i.indrelid FROM pg_catalog.pg_index AS i
														WHERE i.indexrelid = x.indexrelid)
												 ELSE x.named_relid END) AS last_vacuum
						  WHERE h.h_subject IS NULL OR NOT coalesce(per_cause, false)
						  -- (not pulled up: a held row does not read it)
						 OFFSET 0) AS v ON true
	  -- On 13 a snapshot in any database also keeps index scans from
	  -- marking entries dead (kill_prior_tuple tests RecentGlobalXmin, the
	  -- whole cluster's), while vacuum waits for its own database only: the
	  -- oldest such holder of another database, when none holds this one.
	  LEFT JOIN LATERAL (SELECT r.*
						   FROM root_holders AS r
						  WHERE params.version_num < 140000 AND h.h_subject IS NULL
							AND r.age_rank = (SELECT min(q.age_rank)
												FROM root_holders AS q
											   WHERE NOT q.catalog_only AND q.datname IS DISTINCT FROM x.datname
												 AND q.kind IN ('backend', 'prepared transaction')
												 AND (q.held_since <= x.last_bad
													  OR (q.held_for IS NULL AND q.blocks_cleanup)))
						 -- (on 14 and later, not run at all)
						 OFFSET 0) AS m ON true) AS j
),
-- Per cause (per_cause only), each row's place among its cause's rows
-- and its index's: most severe, then costliest, first (the order
-- pg_contention_index_findings lists them in); only the figures that
-- order and count them.
ranked AS MATERIALIZED (
	SELECT j.text_key, j.cause, j.dbid, j.indexrelid, j.index_qname, j.datname, j.dead_per_scan, j.period_start,
		   pg_catalog.row_number() OVER (PARTITION BY j.cause ORDER BY j.severity_rank, j.dead_per_scan DESC,
																  j.index_qname, j.datname, j.query) AS cause_pos,
		   pg_catalog.row_number() OVER (PARTITION BY j.cause, j.dbid, j.indexrelid
										 ORDER BY j.severity_rank, j.dead_per_scan DESC, j.query) AS index_pos
	  FROM (SELECT j.*, CASE j.severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END AS severity_rank
			  FROM judged AS j
			 WHERE per_cause) AS j
),
-- Per cause (per_cause only): its indexes, costliest first; how many
-- indexes, statements and databases; the first ten indexes and the next
-- three costliest after the first, as the finding names them.
cause_indexes AS (
	SELECT r.cause, r.dbid, r.indexrelid, r.index_qname, r.datname, r.dead_per_scan,
		   pg_catalog.row_number() OVER (PARTITION BY r.cause ORDER BY r.cause_pos) AS index_rank
	  FROM ranked AS r
	 WHERE r.index_pos = 1
),
causes AS (
	SELECT i.cause, count(*) AS indexes,
		   pg_catalog.array_agg('database ' || i.dbid || ' index ' || i.indexrelid ORDER BY i.index_rank)
			   FILTER (WHERE i.index_rank <= 10) AS touched,
		   pg_catalog.array_agg(coalesce(i.index_qname, 'oid ' || i.indexrelid)
								|| coalesce(' in database ' || pg_catalog.quote_ident(nullif(i.datname, pg_catalog.current_database())), '')
								|| ' (' || pg_catalog.to_char(pg_catalog.round(i.dead_per_scan::numeric, 1), 'FM999,999,999,990')
								|| ' dead entries per execution)' ORDER BY i.index_rank)
			   FILTER (WHERE i.index_rank BETWEEN 2 AND 4) AS next_worst,
		   s.statements, s.databases, s.since
	  FROM cause_indexes AS i
	  JOIN (SELECT r.cause, count(*) AS statements, count(DISTINCT r.dbid) AS databases, min(r.period_start) AS since
			  FROM ranked AS r
			 GROUP BY r.cause) AS s ON s.cause = i.cause
	 GROUP BY i.cause, s.statements, s.databases, s.since
),
-- The client statements that the worst executions ran in, when those
-- were a function's statements: their texts (read only for findings
-- that have one).
callers AS MATERIALIZED (
	SELECT s.dbid, s.query_id, s.query
	  FROM @extschema@.pg_contention_statements(false) AS s
	 -- (a one-time test first: without a caller the store is not read)
	 WHERE EXISTS (SELECT 1 FROM judged AS j WHERE j.worst_caller IS NOT NULL)
	   AND s.query_id IN (SELECT j.worst_caller FROM judged AS j WHERE j.worst_caller IS NOT NULL)
),
-- The functions those statements ran in (read once).
contexts AS MATERIALIZED (
	SELECT c.dbid, c.query_id, c.context, c.several
	  FROM @extschema@.pg_contention_nested_contexts() AS c
),
index_findings AS (
	SELECT 'dead_tuple_index_scan'::text AS problem, x.severity, x.cause,
		   'index ' || coalesce(x.index_qname || x.in_database, 'oid ' || x.indexrelid || ' in database ' || coalesce(x.datname, x.dbid::text))
		   || ' scanned by ' || @extschema@.pg_contention_shorten(x.query)
		   || coalesce(' (query id' || CASE WHEN x.n_query_ids > 1 THEN 's ' ELSE ' ' END
					   || nullif(pg_catalog.array_to_string(ARRAY(SELECT pg_catalog.jsonb_array_elements_text(x.query_ids)), ', '), '')
					   || ')', '')
		   -- A function's statement: the function, as the server's context
		   -- names it, and the client statement that called it.
		   || coalesce(' in ' || fc.context || CASE WHEN fc.several THEN ' (and elsewhere)' ELSE '' END || ',', '')
		   || coalesce(' inside ' || coalesce(@extschema@.pg_contention_shorten(nullif(cl.caller_text, '<insufficient privilege>'))
											  || ' (query id ' || x.worst_caller || ')',
											  'the client statement with query id ' || x.worst_caller), '') AS subject,
		   CASE x.state
				WHEN 'vacuumed' THEN 'resolved at ' || pg_catalog.to_char(lv.last_vacuum, 'HH24:MI:SS')
					 || ': vacuum removed them at ' || pg_catalog.to_char(lv.last_vacuum, 'HH24:MI:SS')
					 || ', after the last bad execution, and nothing that was holding the xmin horizon then holds it now; '
				WHEN 'dropped' THEN 'resolved: the index no longer exists (dropped, or made by a transaction that has not'
					 || ' committed, which alone can use it); '
				WHEN 'clean' THEN 'resolved at ' || pg_catalog.to_char(x.clean_since, 'HH24:MI:SS')
					 || ': nothing that was holding the xmin horizon at the last bad execution holds it now, and the executions since '
					 || pg_catalog.to_char(x.clean_since, 'HH24:MI:SS') || ' visited fewer than '
					 || pg_catalog.to_char(params.dead_warning, 'FM999,999,999,990') || ' dead entries (the most recent, at '
					 || pg_catalog.to_char(x.last_at, 'HH24:MI:SS') || ', '
					 || pg_catalog.to_char(x.last_dead_visits, 'FM999,999,999,990') || '); '
				ELSE '' END
		   || CASE WHEN x.avg_fires
				   THEN pg_catalog.to_char(x.scans, 'FM999,999,999,990') || ' execution'
						|| CASE WHEN x.scans = 1 THEN '' ELSE 's' END || ' from '
						|| pg_catalog.to_char(x.period_start, 'HH24:MI:SS') || ' to '
						|| pg_catalog.to_char(x.period_end, 'HH24:MI:SS') || ' visited '
						|| pg_catalog.to_char(x.dead_per_scan, 'FM999,999,999,990') || ' dead index entries each ('
						|| pg_catalog.to_char(100 * x.dead_ratio, 'FM990.0') || '% of the entries read)'
						|| coalesce(' and used ' || pg_catalog.to_char(x.blks_per_call, 'FM999,999,999,990')
									|| ' buffers per execution', '')
						|| '; ' || pg_catalog.to_char(x.bad_scans, 'FM999,999,999,990') || ' of '
						|| pg_catalog.to_char(x.calls, 'FM999,999,999,990') || ' executions visited at least '
						|| pg_catalog.to_char(params.dead_warning, 'FM999,999,999,990') || ', the worst '
				   ELSE pg_catalog.to_char(x.bad_scans, 'FM999,999,999,990') || ' of '
						|| pg_catalog.to_char(x.calls, 'FM999,999,999,990') || ' executions from '
						|| pg_catalog.to_char(x.period_start, 'HH24:MI:SS') || ' to '
						|| pg_catalog.to_char(x.period_end, 'HH24:MI:SS') || ' visited '
						|| coalesce(pg_catalog.to_char(x.bad_per_scan, 'FM999,999,999,990'), 'at least '
									|| pg_catalog.to_char(params.dead_warning, 'FM999,999,999,990'))
						|| ' dead index entries each, the worst ' END
		   || pg_catalog.to_char(x.worst_dead_visits, 'FM999,999,999,990') || ' at '
		   || pg_catalog.to_char(x.worst_at, 'HH24:MI:SS') || ' reading '
		   || pg_catalog.to_char(x.worst_entries_read, 'FM999,999,999,990') || ' entries'
		   || coalesce(' and ' || pg_catalog.to_char(x.worst_buffers, 'FM999,999,999,990') || ' buffers', '')
		   || coalesce(' (the worst execution ran with ' || nullif(x.worst_literals, '<insufficient privilege>') || ')', '')
		   || CASE WHEN x.avg_fires THEN ''
				   ELSE '; the average is ' || pg_catalog.to_char(x.dead_per_scan, 'FM999,999,999,990')
						|| ' over ' || pg_catalog.to_char(x.scans, 'FM999,999,999,990') || ' measured execution'
						|| CASE WHEN x.scans = 1 THEN '' ELSE 's' END END
		   || CASE x.state
				   WHEN 'held' THEN '; vacuum cannot remove them while ' || x.h_label || ' holds the xmin horizon ('
						|| pg_catalog.to_char(x.h_xmin_age, 'FM999,999,999,990') || ' transactions old).'
				   WHEN 'unknown' THEN '; the table statistics were reset at ' || pg_catalog.to_char(x.stats_lost_at, 'HH24:MI:SS')
						|| ' (a crash restart, or pg_stat_reset()), after the last of these executions: whether vacuum has removed'
						|| ' the dead entries since is unknown until the statement runs again.'
				   WHEN 'unvacuumed' THEN CASE WHEN x.m_label IS NULL THEN '; nothing holds the xmin horizon back: '
											   ELSE '; nothing in database ' || pg_catalog.quote_ident(x.datname)
													|| ' holds the xmin horizon back: ' END
						|| 'vacuum has not removed them yet'
						|| coalesce(' (' || t.table_qname || ': '
									|| pg_catalog.to_char(lv.n_dead_tup, 'FM999,999,999,990') || ' dead tuples, last vacuumed '
									|| coalesce(@extschema@.pg_contention_duration(params.now - lv.last_vacuum) || ' ago', 'never')
									|| ')', '') || ', and the most recent execution, at '
						|| pg_catalog.to_char(x.last_at, 'HH24:MI:SS') || ', still visited '
						|| pg_catalog.to_char(x.last_dead_visits, 'FM999,999,999,990')
						|| coalesce('; the scans cannot mark them dead while ' || x.m_label || ' holds its snapshot ('
									|| pg_catalog.to_char(x.m_xmin_age, 'FM999,999,999,990')
									|| ' transactions old): on PostgreSQL 13 a snapshot in any database stops that, though only'
									|| ' this database''s snapshots stop vacuum', '') || '.'
				   ELSE '.' END AS evidence,
		   CASE x.state
				WHEN 'held' THEN 'End what holds the horizon ('
					 || CASE WHEN x.h_blocks THEN 'see xmin_horizon_held' ELSE x.h_label END || '), then VACUUM '
					 || coalesce(t.table_qname || x.in_database, 'the table')
					 || '; the entries stay dead until vacuum removes them.'
				WHEN 'unvacuumed' THEN 'VACUUM ' || coalesce(t.table_qname || x.in_database, 'the table')
					 || CASE WHEN x.m_label IS NULL
							 THEN ' now; if this recurs without a holder, let autovacuum visit the table more often (a lower autovacuum_vacuum_scale_factor or cost delay for it).'
							 ELSE ' now: vacuum removes them although ' || x.m_label || ' holds its snapshot; the scans would mark'
								  || ' them dead themselves once it ends.' END
				WHEN 'unknown' THEN 'Nothing to do now: the next execution of the statement shows whether the dead entries are still there'
					 || ' (a warning again if they are). To know now, VACUUM '
					 || coalesce(t.table_qname || x.in_database, 'the table') || '.'
				ELSE 'Nothing to do now. If it recurs, look for what holds the xmin horizon (xmin_horizon_held) while these executions run.' END AS advice,
		   jsonb_build_object('cause', x.cause,
							  'indexrelid', x.indexrelid::bigint, 'relid', t.relid::bigint, 'database_oid', x.dbid::bigint,
							  'database', x.datname, 'index', x.index_qname, 'table', t.table_qname,
							  'temporary', x.index_temporary, 'owner_oid', x.index_owner::bigint,
							  'query_id', x.query_id, 'query_ids', x.query_ids, 'calls', x.calls, 'executions', x.scans,
							  'entries_read', x.entries_read, 'dead_visits', x.dead_visits,
							  'dead_per_execution', pg_catalog.round(x.dead_per_scan::numeric, 1),
							  'dead_ratio', pg_catalog.round(x.dead_ratio::numeric, 4),
							  'buffers_per_execution', pg_catalog.round(x.blks_per_call::numeric, 1),
							  'bad_executions', x.bad_scans,
							  'worst', jsonb_build_object('dead_visits', x.worst_dead_visits, 'entries_read', x.worst_entries_read,
														  'buffers', x.worst_buffers, 'rows', x.worst_rows, 'at', x.worst_at,
														  'literals', nullif(x.worst_literals, '<insufficient privilege>')),
							  'last', jsonb_build_object('dead_visits', x.last_dead_visits, 'at', x.last_at),
							  'last_bad_at', x.last_bad, 'clean_since', x.clean_since,
							  'worst_caller_query_id', x.worst_caller,
							  'worst_function', fc.context,
							  'state', x.state, 'last_vacuum', lv.last_vacuum, 'stats_reset', x.stats_lost_at,
							  'period_start', x.period_start, 'period_end', x.period_end,
							  'holder', CASE WHEN x.state = 'held'
											 THEN jsonb_build_object('kind', x.h_kind, 'holder', x.h_holder, 'pid', x.h_pid,
																	 'xmin', x.h_xmin::text, 'xmin_age', x.h_xmin_age) END,
							  -- 13: what keeps the scans from marking them dead.
							  'marking_held_by', CASE WHEN x.state = 'unvacuumed' AND x.m_label IS NOT NULL
													  THEN jsonb_build_object('kind', x.m_kind, 'holder', x.m_holder, 'pid', x.m_pid,
																			  'database', x.m_datname, 'xmin_age', x.m_xmin_age) END) AS details,
		   x.period_start AS since
	  FROM judged AS x
	  CROSS JOIN params
	  -- The index's table, its name and statistics, read for the rows
	  -- described: this database's from its catalog (none for a dropped
	  -- index), another's as noted with the index.
	  LEFT JOIN LATERAL (SELECT i.indrelid AS relid, tc.oid AS table_oid,
								pg_catalog.quote_ident(tn.nspname) || '.' || pg_catalog.quote_ident(tc.relname) AS table_qname
						   FROM pg_catalog.pg_index AS i
						   LEFT JOIN pg_catalog.pg_class AS tc ON tc.oid = i.indrelid
						   LEFT JOIN pg_catalog.pg_namespace AS tn ON tn.oid = tc.relnamespace
						  WHERE x.here AND i.indexrelid = x.indexrelid
						 UNION ALL
						 SELECT x.named_relid, NULL::oid,
								pg_catalog.quote_ident(x.named_schema) || '.' || pg_catalog.quote_ident(x.named_table)
						  WHERE NOT x.here) AS t ON true
	  CROSS JOIN LATERAL (SELECT coalesce(x.last_vacuum, @extschema@.pg_contention_table_last_vacuum(x.dbid, t.relid)) AS last_vacuum,
								 pg_catalog.pg_stat_get_dead_tuples(t.table_oid) AS n_dead_tup
						  OFFSET 0) AS lv
	  -- (a row is its group's key)
	  LEFT JOIN ranked AS o ON o.dbid = x.dbid AND o.indexrelid = x.indexrelid AND o.text_key = x.text_key
	  LEFT JOIN LATERAL (SELECT c.query AS caller_text FROM callers AS c
						  WHERE c.dbid = x.dbid AND c.query_id = x.worst_caller
						  LIMIT 1) AS cl ON x.worst_caller IS NOT NULL
	  LEFT JOIN contexts AS fc ON fc.dbid = x.dbid AND fc.query_id = x.worst_query_id AND x.worst_caller IS NOT NULL
	 -- per cause, only the costliest row is described
	 WHERE NOT coalesce(per_cause, false) OR o.cause_pos = 1
)
SELECT f.problem, f.severity, coalesce(g.subject, f.subject), coalesce(g.evidence, f.evidence), f.advice,
	   coalesce(g.details, f.details), coalesce(c.since, f.since)
  FROM index_findings AS f
  LEFT JOIN causes AS c ON c.cause = f.cause
  LEFT JOIN LATERAL (SELECT g.* FROM @extschema@.pg_contention_cause_group(
										 f.subject, f.evidence, f.details, c.indexes, c.statements, c.databases,
										 c.touched, c.next_worst) AS g
					  WHERE c.statements > 1
					  -- (not pulled up: a cause of one row does not call it)
					  OFFSET 0) AS g ON true;
END
$$;
