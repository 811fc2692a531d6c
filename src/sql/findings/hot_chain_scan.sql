--
-- Rule hot_chain_scan: an index lookup reads many buffers per row it
-- returns, behind a held xmin horizon, on a table updated mostly by HOT:
-- each index entry leads to a chain of heap versions that pruning cannot
-- remove, so the lookup walks them although the index holds few dead
-- entries (too few for dead_tuple_index_scan).  Judged on the worst
-- execution (the one with the most dead entries) of each statement and
-- index; names the table, the statement and the holder.
--
-- horizon_roots: the root holders as pg_contention_findings read them for
-- every rule of the evaluation (pg_contention_horizon_roots takes them so); NULL:
-- read now.
--
-- per_cause: one row per cause (the holder), as pg_contention_findings
-- shows them: only each cause's costliest row is described, with the
-- cause's counts (pg_contention_cause_group).  False or NULL: every row,
-- as pg_contention_index_findings lists them.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_hot_chain_scan(
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
recent AS MATERIALIZED (
	SELECT r.*, d.datname
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true, false, false, true) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
	 WHERE r.indexrelid IS NOT NULL AND r.scans > 0
	   AND r.worst_buffers IS NOT NULL AND r.worst_dead_visits > 0
	   AND r.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
),
root_holders AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_horizon_roots(window_length, horizon_roots)
),
candidates AS (
	SELECT r.*, i.indrelid, ic.relowner,
		   pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(ic.relname) AS index_name,
		   pg_catalog.quote_ident(t.schemaname) || '.' || pg_catalog.quote_ident(t.relname) AS table_name,
		   t.n_tup_upd, t.n_tup_hot_upd,
		   r.worst_buffers::float8 / greatest(r.worst_rows, 1) AS blks_per_row,
		   r.shared_blks::float8 / nullif(r.top_level_calls, 0) AS blks_per_call
	  FROM recent AS r
	  CROSS JOIN params
	  JOIN pg_catalog.pg_class AS ic ON ic.oid = r.indexrelid
	  JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
	  JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
	  JOIN pg_catalog.pg_stat_user_tables AS t ON t.relid = i.indrelid
	 WHERE r.worst_buffers >= params.hot_chain_buffers * greatest(r.worst_rows, 1)
	   -- Mostly HOT updates: the versions sit in chains behind few entries.
	   AND t.n_tup_hot_upd > 0 AND t.n_tup_hot_upd >= 0.5 * t.n_tup_upd
	   -- Many dead entries per execution are dead_tuple_index_scan's.
	   AND NOT (r.worst_dead_visits >= params.dead_warning
				AND r.worst_dead_visits >= params.dead_ratio * r.worst_entries_read)
	   AND NOT (r.dead_visits >= params.dead_warning * r.scans
				AND r.dead_visits >= params.dead_ratio * r.entries_read)
),
-- One row per normalised text and index (its query ids in details), on
-- the group's worst execution, with the holder: its cause (as the
-- incidents are keyed).  The oldest root holder of this database (or a
-- slot, standby feedback, or a transaction with an XID, in any database:
-- the pruning lookup's own snapshot's xmin is at or before it) that was
-- holding when the worst execution ran; without one, the next access
-- prunes the chains: no finding.  A slot or a standby's feedback only past
-- the thresholds: their xmin moves at every message, and a few seconds'
-- stand is not a hold.
hot_rows AS MATERIALIZED (
	SELECT DISTINCT ON (x.dbid, x.indexrelid, x.query)
		   x.*, h.kind AS h_kind, h.holder AS h_holder, h.pid AS h_pid, h.xmin AS h_xmin, h.xmin_age AS h_xmin_age,
		   h.label AS h_label, h.blocks_cleanup AS h_blocks,
		   'held by ' || coalesce(h.kind, '?') || ' ' || coalesce(h.holder, '?') AS cause
	  FROM candidates AS x
	  JOIN LATERAL (SELECT * FROM root_holders AS r
					 WHERE NOT r.catalog_only
					   AND (r.kind IN ('replication slot', 'standby feedback')
							OR r.own_xid IS NOT NULL
							OR r.datname IS NOT DISTINCT FROM x.datname)
					   AND (r.blocks_cleanup OR r.kind IN ('backend', 'prepared transaction'))
					   AND coalesce(r.held_since <= x.worst_at, r.blocks_cleanup)
					 ORDER BY r.xmin_age DESC LIMIT 1) AS h ON true
	 ORDER BY x.dbid, x.indexrelid, x.query, x.blks_per_row DESC
),
-- Each row's place among its cause's rows and its index's, costliest
-- first (the order pg_contention_index_findings lists them in).
ranked AS MATERIALIZED (
	SELECT r.*,
		   pg_catalog.row_number() OVER (PARTITION BY r.cause ORDER BY r.blks_per_row DESC, r.index_name, r.query) AS cause_pos,
		   pg_catalog.row_number() OVER (PARTITION BY r.cause, r.dbid, r.indexrelid
										 ORDER BY r.blks_per_row DESC, r.query) AS index_pos
	  FROM hot_rows AS r
),
-- Per cause (per_cause only): as dead_tuple_index_scan counts them.
cause_indexes AS (
	SELECT r.cause, r.dbid, r.indexrelid, r.index_name, r.blks_per_row,
		   pg_catalog.row_number() OVER (PARTITION BY r.cause ORDER BY r.cause_pos) AS index_rank
	  FROM ranked AS r
	 WHERE per_cause AND r.index_pos = 1
),
causes AS (
	SELECT i.cause, count(*) AS indexes,
		   pg_catalog.array_agg('database ' || i.dbid || ' index ' || i.indexrelid ORDER BY i.index_rank)
			   FILTER (WHERE i.index_rank <= 10) AS touched,
		   pg_catalog.array_agg(i.index_name || ' (' || pg_catalog.to_char(pg_catalog.round(i.blks_per_row::numeric, 1), 'FM999,999,999,990')
								|| ' buffers per row)' ORDER BY i.index_rank)
			   FILTER (WHERE i.index_rank BETWEEN 2 AND 4) AS next_worst,
		   s.statements, s.since
	  FROM cause_indexes AS i
	  JOIN (SELECT r.cause, count(*) AS statements, min(r.period_start) AS since
			  FROM ranked AS r
			 WHERE per_cause
			 GROUP BY r.cause) AS s ON s.cause = i.cause
	 GROUP BY i.cause, s.statements, s.since
),
hot_findings AS (
	SELECT 'hot_chain_scan'::text AS problem,
		   'warning'::text AS severity,
		   x.cause,
		   'table ' || x.table_name || ': lookups by index ' || x.index_name || ' of '
		   || @extschema@.pg_contention_shorten(x.query)
		   || coalesce(' (query id' || CASE WHEN g.n > 1 THEN 's ' ELSE ' ' END || coalesce(g.ids_text, x.query_id::text) || ')', '') AS subject,
		   'the worst of ' || pg_catalog.to_char(x.calls, 'FM999,999,999,990') || ' executions from '
		   || pg_catalog.to_char(x.period_start, 'HH24:MI:SS') || ' to '
		   || pg_catalog.to_char(x.period_end, 'HH24:MI:SS') || ', at '
		   || pg_catalog.to_char(x.worst_at, 'HH24:MI:SS') || ', read '
		   || pg_catalog.to_char(x.worst_buffers, 'FM999,999,999,990') || ' buffers for '
		   || pg_catalog.to_char(x.worst_rows, 'FM999,999,999,990') || ' row'
		   || CASE WHEN x.worst_rows = 1 THEN '' ELSE 's' END || ' ('
		   || pg_catalog.to_char(x.worst_entries_read, 'FM999,999,999,990') || ' index entries, '
		   || pg_catalog.to_char(x.worst_dead_visits, 'FM999,999,999,990') || ' of them to no visible version'
		   || coalesce('; ' || pg_catalog.to_char(x.blks_per_call, 'FM999,999,999,990') || ' buffers per execution on average', '')
		   || coalesce('; the worst execution ran with ' || nullif(x.worst_literals, '<insufficient privilege>'), '')
		   || '); ' || pg_catalog.to_char(x.n_tup_hot_upd, 'FM999,999,999,990') || ' of '
		   || pg_catalog.to_char(x.n_tup_upd, 'FM999,999,999,990') || ' updates of ' || x.table_name || ' were HOT ('
		   || pg_catalog.to_char(100.0 * x.n_tup_hot_upd / x.n_tup_upd, 'FM990') || '%): each entry leads to a chain of versions'
		   || ' that pruning cannot remove while ' || x.h_label || ' holds the xmin horizon ('
		   || pg_catalog.to_char(x.h_xmin_age, 'FM999,999,999,990') || ' transactions old).' AS evidence,
		   'End what holds the horizon ('
		   || CASE WHEN x.h_blocks THEN 'see xmin_horizon_held' ELSE x.h_label END
		   || '): the next access to each page then prunes its chains. A row updated this often should not be'
		   || ' read behind a long transaction or snapshot.' AS advice,
		   -- The cause (pg_contention_findings groups by it, the incidents
		   -- are keyed on it): the holder.
		   jsonb_build_object('cause', x.cause,
							  'indexrelid', x.indexrelid::bigint, 'relid', x.indrelid::bigint, 'database_oid', x.dbid::bigint,
							  'index', x.index_name, 'table', x.table_name,
							  'owner_oid', x.relowner::bigint,
							  'query_id', x.query_id, 'query_ids', coalesce(g.ids, jsonb_build_array(x.query_id)), 'calls', x.calls, 'executions', x.scans,
							  'n_tup_upd', x.n_tup_upd, 'n_tup_hot_upd', x.n_tup_hot_upd,
							  'buffers_per_row', pg_catalog.round(x.blks_per_row::numeric, 1),
							  'worst', jsonb_build_object('dead_visits', x.worst_dead_visits, 'entries_read', x.worst_entries_read,
														  'buffers', x.worst_buffers, 'rows', x.worst_rows, 'at', x.worst_at,
														  'literals', nullif(x.worst_literals, '<insufficient privilege>')),
							  'period_start', x.period_start, 'period_end', x.period_end,
							  'holder', jsonb_build_object('kind', x.h_kind, 'holder', x.h_holder, 'pid', x.h_pid,
														   'xmin', x.h_xmin::text, 'xmin_age', x.h_xmin_age)) AS details,
		   x.period_start AS since
	  FROM ranked AS x
	  LEFT JOIN LATERAL (SELECT count(DISTINCT o.query_id) AS n,
								pg_catalog.string_agg(DISTINCT o.query_id::text, ', ') AS ids_text,
								coalesce(jsonb_agg(DISTINCT o.query_id) FILTER (WHERE o.query_id IS NOT NULL), '[]') AS ids
						   FROM recent AS o
						  WHERE o.dbid = x.dbid AND o.indexrelid = x.indexrelid
							AND o.query = x.query AND x.query <> '<insufficient privilege>') AS g ON true
	 -- per cause, only the costliest row is described
	 WHERE NOT coalesce(per_cause, false) OR x.cause_pos = 1
)
SELECT f.problem, f.severity, coalesce(g.subject, f.subject), coalesce(g.evidence, f.evidence), f.advice,
	   coalesce(g.details, f.details), coalesce(c.since, f.since)
  FROM hot_findings AS f
  LEFT JOIN causes AS c ON c.cause = f.cause
  LEFT JOIN LATERAL (SELECT g.* FROM @extschema@.pg_contention_cause_group(
										 f.subject, f.evidence, f.details, c.indexes, c.statements, 1::bigint,
										 c.touched, c.next_worst) AS g
					  WHERE c.statements > 1
					  -- (not pulled up: a cause of one row does not call it)
					  OFFSET 0) AS g ON true;
END
$$;
