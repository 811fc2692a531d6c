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
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_dead_tuple_index_scan(
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
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
recent AS MATERIALIZED (
	-- Texts are shortened only where a finding shows them: 5,000 texts
	-- through a regular expression would cost more than everything else.
	SELECT r.*, d.datname, u.rolname AS usename
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true, false) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = r.userid
),
dead_here AS MATERIALIZED (
	SELECT t.relid, t.schemaname, t.relname, t.n_dead_tup, t.n_live_tup,
		   greatest(t.last_vacuum, t.last_autovacuum) AS last_vacuum
	  FROM pg_catalog.pg_stat_user_tables AS t
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
root_holders AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_horizon_roots(window_length, horizon_roots)
),
-- One statement is one normalised text in one database, per index: the
-- query ids a driver makes of it (a parameter bound as int2 here and int4
-- there), and its users, are summed into one finding, with every query
-- id in details.  A text masked from this role is not grouped.  The
-- worst execution is the group's worst; the last, its latest.
grouped AS (
	SELECT r.dbid, min(r.datname) AS datname, r.indexrelid,
		   (pg_catalog.array_agg(r.query ORDER BY r.scans DESC))[1] AS query,
		   (pg_catalog.array_agg(r.query_id ORDER BY r.scans DESC))[1] AS query_id,
		   coalesce(jsonb_agg(DISTINCT r.query_id) FILTER (WHERE r.query_id IS NOT NULL), '[]') AS query_ids,
		   pg_catalog.string_agg(DISTINCT r.query_id::text, ', ') AS query_ids_text,
		   count(DISTINCT r.query_id) AS n_query_ids,
		   min(r.period_start) AS period_start, max(r.period_end) AS period_end,
		   sum(r.calls)::bigint AS calls, sum(r.top_level_calls)::bigint AS top_level_calls,
		   sum(r.shared_blks)::bigint AS shared_blks, sum(r.scans)::bigint AS scans,
		   sum(r.entries_read)::bigint AS entries_read, sum(r.dead_visits)::bigint AS dead_visits,
		   (pg_catalog.array_agg(r.worst_dead_visits ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_dead_visits,
		   (pg_catalog.array_agg(r.worst_entries_read ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_entries_read,
		   (pg_catalog.array_agg(r.worst_buffers ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_buffers,
		   (pg_catalog.array_agg(r.worst_rows ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_rows,
		   (pg_catalog.array_agg(r.worst_at ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_at,
		   (pg_catalog.array_agg(r.worst_literals ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_literals,
		   (pg_catalog.array_agg(r.worst_caller_query_id ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_caller,
		   (pg_catalog.array_agg(r.query_id ORDER BY r.worst_dead_visits DESC NULLS LAST))[1] AS worst_query_id,
		   (pg_catalog.array_agg(r.last_dead_visits ORDER BY r.last_at DESC NULLS LAST))[1] AS last_dead_visits,
		   max(r.last_at) AS last_at,
		   sum(r.bad_scans)::bigint AS bad_scans, sum(r.bad_dead_visits)::bigint AS bad_dead_visits,
		   max(r.last_bad_at) AS last_bad_at,
		   -- Clean since the group's last bad execution: that statement's.
		   (pg_catalog.array_agg(r.clean_since ORDER BY r.last_bad_at DESC NULLS LAST))[1] AS clean_since
	  FROM recent AS r
	 WHERE r.indexrelid IS NOT NULL AND r.scans > 0
	 GROUP BY r.dbid, r.indexrelid,
			  CASE WHEN r.query = '<insufficient privilege>'
				   THEN r.userid::text || ' ' || coalesce(r.query_id::text, '') ELSE r.query END
),
index_rows AS (
	SELECT r.*, coalesce(i.indrelid, nm.relid) AS indrelid,
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
		   CASE WHEN here THEN pg_catalog.quote_ident(t.schemaname) || '.' || pg_catalog.quote_ident(t.relname)
				ELSE pg_catalog.quote_ident(nm.schemaname) || '.' || pg_catalog.quote_ident(nm.relname) END AS table_qname,
		   CASE WHEN here THEN '' ELSE ' in database ' || pg_catalog.quote_ident(r.datname) END AS in_database,
		   -- Not in this database's catalog: dropped (a temporary one with
		   -- its session), or not committed yet (then only the transaction
		   -- that made it can use it).
		   r.datname = pg_catalog.current_database() AND ic.oid IS NULL AS index_gone,
		   -- A temporary index (of one session) and its owner: the worker
		   -- makes one incident of one role's temporary indexes, and counts
		   -- an incident that no holder explains for the index's owner.
		   ic.relpersistence = 't' AS index_temporary, coalesce(ic.relowner, nm.owner) AS index_owner,
		   t.schemaname, t.relname, t.n_dead_tup,
		   -- Another database's table: when vacuum last ran there, from the
		   -- shared statistics (PostgreSQL 15 on), so that the finding read
		   -- from here changes with that vacuum as read there.
		   CASE WHEN here THEN t.last_vacuum
				ELSE @extschema@.pg_contention_table_last_vacuum(r.dbid, nm.relid) END AS last_vacuum
	  FROM grouped AS r
	  CROSS JOIN LATERAL (SELECT r.datname = pg_catalog.current_database() AS here) AS h
	  LEFT JOIN pg_catalog.pg_class AS ic ON ic.oid = r.indexrelid AND here
	  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
	  LEFT JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
	  LEFT JOIN dead_here AS t ON t.relid = i.indrelid
	  LEFT JOIN @extschema@.pg_contention_index_names() AS nm
		ON nm.dbid = r.dbid AND nm.indexrelid = r.indexrelid AND NOT here
),
judged AS (
	SELECT x.*, h.*, m.*,
		   -- The average fires as before 1.4; the worst executions fire
		   -- alone when the clean ones average them away.
		   x.dead_per_scan >= params.dead_warning AND x.dead_ratio >= params.dead_ratio AS avg_fires,
		   CASE WHEN x.index_gone THEN 'dropped'
				WHEN h.h_subject IS NOT NULL THEN 'held'
				-- Vacuum ran after the last bad execution: they are gone.
				WHEN x.last_vacuum >= x.last_bad THEN 'vacuumed'
				-- The executions since the last bad one are clean: a plain
				-- scan marked the entries dead (a primary does once nothing
				-- holds the horizon), or the key is not looked up again.
				WHEN x.clean_since > x.last_bad THEN 'clean'
				-- The statistics that would say whether vacuum ran were
				-- lost after the last bad execution, and the statement has
				-- not run since: unknown, not a guess of "unvacuumed".
				WHEN x.last_vacuum IS NULL AND x.last_bad < stats_lost.at THEN 'unknown'
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
	  FROM index_rows AS x
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
								r.subject AS h_subject,
								-- another database's transaction says which
								r.label || CASE WHEN r.kind IN ('backend', 'prepared transaction')
													 AND r.datname IS DISTINCT FROM x.datname
												THEN ' in database ' || pg_catalog.quote_ident(r.datname)
												ELSE '' END AS h_label
						   FROM root_holders AS r
						  WHERE NOT r.catalog_only
							AND (r.kind IN ('replication slot', 'standby feedback')
								 OR r.own_xid IS NOT NULL
								 OR r.datname IS NOT DISTINCT FROM x.datname)
							AND (r.blocks_cleanup OR r.kind IN ('backend', 'prepared transaction'))
							AND coalesce(r.held_since <= x.last_bad, r.blocks_cleanup)
						  ORDER BY r.xmin_age DESC LIMIT 1) AS h ON true
	  -- On 13 a snapshot in any database also keeps index scans from
	  -- marking entries dead (kill_prior_tuple tests RecentGlobalXmin, the
	  -- whole cluster's), while vacuum waits for its own database only: the
	  -- oldest such holder of another database, when none holds this one.
	  LEFT JOIN LATERAL (SELECT r.label || ' in database ' || pg_catalog.quote_ident(r.datname) AS m_label,
								r.kind AS m_kind, r.holder AS m_holder, r.pid AS m_pid,
								r.datname AS m_datname, r.xmin_age AS m_xmin_age
						   FROM root_holders AS r
						  WHERE params.version_num < 140000 AND h.h_subject IS NULL
							AND NOT r.catalog_only AND r.datname IS DISTINCT FROM x.datname
							AND r.kind IN ('backend', 'prepared transaction')
							AND (r.held_since <= x.last_bad
								 OR (r.held_for IS NULL AND r.blocks_cleanup))
						  ORDER BY r.xmin_age DESC LIMIT 1) AS m ON true
	 WHERE (x.dead_per_scan >= params.dead_warning AND x.dead_ratio >= params.dead_ratio)
		OR (x.worst_dead_visits >= params.dead_warning AND x.worst_ratio >= params.dead_ratio)
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
	SELECT 'dead_tuple_index_scan'::text AS problem,
		   CASE WHEN x.state IN ('vacuumed', 'clean', 'unknown', 'dropped') THEN 'info'
				WHEN x.state = 'held' AND x.dead_per_scan >= params.dead_critical THEN 'critical'
				ELSE 'warning' END AS severity,
		   'index ' || coalesce(x.index_qname || x.in_database, 'oid ' || x.indexrelid || ' in database ' || coalesce(x.datname, x.dbid::text))
		   || ' scanned by ' || @extschema@.pg_contention_shorten(x.query)
		   || coalesce(' (query id' || CASE WHEN x.n_query_ids > 1 THEN 's ' ELSE ' ' END
					   || x.query_ids_text || ')', '')
		   -- A function's statement: the function, as the server's context
		   -- names it, and the client statement that called it.
		   || coalesce(' in ' || fc.context || CASE WHEN fc.several THEN ' (and elsewhere)' ELSE '' END || ',', '')
		   || coalesce(' inside ' || coalesce(@extschema@.pg_contention_shorten(nullif(cl.caller_text, '<insufficient privilege>'))
											  || ' (query id ' || x.worst_caller || ')',
											  'the client statement with query id ' || x.worst_caller), '') AS subject,
		   CASE x.state
				WHEN 'vacuumed' THEN 'resolved at ' || pg_catalog.to_char(x.last_vacuum, 'HH24:MI:SS')
					 || ': vacuum removed them at ' || pg_catalog.to_char(x.last_vacuum, 'HH24:MI:SS')
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
						|| coalesce(' (' || x.table_qname || ': '
									|| pg_catalog.to_char(x.n_dead_tup, 'FM999,999,999,990') || ' dead tuples, last vacuumed '
									|| coalesce(@extschema@.pg_contention_duration(params.now - x.last_vacuum) || ' ago', 'never')
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
					 || coalesce(x.table_qname || x.in_database, 'the table')
					 || '; the entries stay dead until vacuum removes them.'
				WHEN 'unvacuumed' THEN 'VACUUM ' || coalesce(x.table_qname || x.in_database, 'the table')
					 || CASE WHEN x.m_label IS NULL
							 THEN ' now; if this recurs without a holder, let autovacuum visit the table more often (a lower autovacuum_vacuum_scale_factor or cost delay for it).'
							 ELSE ' now: vacuum removes them although ' || x.m_label || ' holds its snapshot; the scans would mark'
								  || ' them dead themselves once it ends.' END
				WHEN 'unknown' THEN 'Nothing to do now: the next execution of the statement shows whether the dead entries are still there'
					 || ' (a warning again if they are). To know now, VACUUM '
					 || coalesce(x.table_qname || x.in_database, 'the table') || '.'
				ELSE 'Nothing to do now. If it recurs, look for what holds the xmin horizon (xmin_horizon_held) while these executions run.' END AS advice,
		   jsonb_build_object('cause', x.cause,
							  'indexrelid', x.indexrelid::bigint, 'relid', x.indrelid::bigint, 'database_oid', x.dbid::bigint,
							  'database', x.datname, 'index', x.index_qname, 'table', x.table_qname,
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
							  'state', x.state, 'last_vacuum', x.last_vacuum, 'stats_reset', x.stats_lost_at,
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
	  LEFT JOIN LATERAL (SELECT c.query AS caller_text FROM callers AS c
						  WHERE c.dbid = x.dbid AND c.query_id = x.worst_caller
						  LIMIT 1) AS cl ON x.worst_caller IS NOT NULL
	  LEFT JOIN contexts AS fc ON fc.dbid = x.dbid AND fc.query_id = x.worst_query_id AND x.worst_caller IS NOT NULL
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM index_findings AS f;
END
$$;
