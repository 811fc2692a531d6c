--
-- Rule dead_tuple_index_scan: a statement's index scans visit many dead
-- entries per execution; names the oldest root horizon holder that keeps
-- them, or says vacuum has not removed them.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_dead_tuple_index_scan(
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
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = r.userid
),
dead_here AS MATERIALIZED (
	SELECT t.relid, t.schemaname, t.relname, t.n_dead_tup, t.n_live_tup,
		   greatest(t.last_vacuum, t.last_autovacuum) AS last_vacuum
	  FROM pg_catalog.pg_stat_user_tables AS t
),
root_holders AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_horizon_roots(window_length)
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
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM index_findings AS f;
END
$$;
