--
-- Metrics (1.3): every figure a monitoring system polls, one row each,
-- with bounded labels (the five worst index scans only).  families limits
-- the work to some of them: subxact, sampler, horizon, index,
-- old_snapshot, findings, incidents (an exporter's queries each read
-- their own).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_metrics(
	families text[] DEFAULT NULL,
	OUT metric text,
	OUT labels jsonb,
	OUT value double precision,
	OUT help text,
	OUT type text
)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
	IF NOT coalesce(families, '{}') <@ ARRAY['subxact', 'sampler', 'horizon', 'index', 'old_snapshot', 'findings', 'incidents']
		OR array_position(families, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'unknown metric family in %', pg_catalog.left(families::text, 100)
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The families are subxact, sampler, horizon, index, old_snapshot, findings and incidents; NULL reads them all.';
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
		  FROM @extschema@.pg_contention_statements(true) AS s;	-- all with any
	END IF;

	IF families IS NULL OR 'sampler' = ANY (families) THEN
		-- The sampler's last 15 seconds.
		RETURN QUERY
		WITH h AS (
			SELECT * FROM @extschema@.pg_contention_history
			 WHERE bucket_start >= pg_catalog.clock_timestamp() - interval '16 seconds'
		)
		SELECT 'subtrans_lookups_per_second', '{}'::jsonb, coalesce(avg(h.subtrans_lookups), 0)::float8,
			   'pg_subtrans (Subtrans SLRU) page accesses per second over the last 15 seconds, the parent records new subtransactions write included (subtrans_reader_lookups_per_second leaves them out).', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'subtrans_reader_lookups_per_second', '{}', coalesce(avg(h.subtrans_reader_lookups), 0)::float8,
			   'pg_subtrans lookups per second by readers (suboverflowed snapshots, waits on subtransactions) over the last 15 seconds: the Subtrans accesses less one parent record per XID assigned.', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'active_backends', '{}', coalesce(avg(h.avg_active_backends), 0)::float8,
			   'Active backends (not idle), average over the last 15 seconds.', 'gauge'
		  FROM h
		UNION ALL
		SELECT 'subtrans_wait_share', '{}',
			   coalesce(sum(h.subtrans_slru_samples::numeric + h.subtrans_buffer_samples)::float8
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
			-- The store's rows, without the view's names for every one of them:
			-- those of the indexes that visited dead entries, each summed over
			-- all of its rows (every user and application of the statement),
			-- as the view sums them; of every database (the application is
			-- seldom in the one the exporter connects to).
			SELECT s.dbid, s.indexrelid, s.query_id, sum(s.dead_visits)::float8 / sum(s.scans) AS per_execution
			  FROM @extschema@.pg_contention_index_scans(true) AS s
			 GROUP BY s.dbid, s.indexrelid, s.query_id
			HAVING sum(s.dead_visits) > 0 AND sum(s.scans) > 0
			 ORDER BY 4 DESC
			 LIMIT 5
		)
		SELECT 'index_dead_entries_per_execution',
			   jsonb_build_object('database', coalesce(d.datname::text, 'oid ' || w.dbid),
								  -- This database's names from its catalog,
								  -- another's as noted there.
								  'index', coalesce(CASE WHEN d.datname = pg_catalog.current_database()
														 THEN n.nspname || '.' || c.relname
														 ELSE nm.schemaname || '.' || nm.indexrelname END,
													'oid ' || w.indexrelid),
								  'query_id', w.query_id::text),
			   w.per_execution,
			   'Dead index entries visited per execution, since the last reset: the five worst (index, statement) pairs of the cluster.', 'gauge'
		  FROM worst AS w
		  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = w.dbid
		  LEFT JOIN pg_catalog.pg_class AS c
			ON c.oid = w.indexrelid AND d.datname = pg_catalog.current_database()
		  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
		  LEFT JOIN @extschema@.pg_contention_index_names() AS nm
			ON nm.dbid = w.dbid AND nm.indexrelid = w.indexrelid
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
		-- The findings: a fixed set of problems and severities.  As the
		-- incidents worker last evaluated them when that is this reader's
		-- answer (pg_contention_findings_latest): a scrape then costs a
		-- copy, not an evaluation of every rule.
		RETURN QUERY
		WITH problems AS (
			SELECT p.problem FROM @extschema@.pg_contention_problems() AS p
		), severities(severity) AS (
			VALUES ('info'), ('warning'), ('critical')
		), f AS MATERIALIZED (
			SELECT f.problem, f.severity FROM @extschema@.pg_contention_findings_latest() AS f
		)
		SELECT 'findings', jsonb_build_object('problem', p.problem, 'severity', s.severity),
			   (SELECT count(*) FROM f WHERE f.problem = p.problem AND f.severity = s.severity)::float8,
			   'Current findings (pg_contention_findings) by problem and severity, as the incidents worker last evaluated them (at most two pg_contention.incident_interval ago) when that is this reader''s answer, else evaluated now.', 'gauge'
		  FROM problems AS p CROSS JOIN severities AS s;
	END IF;

	IF families IS NULL OR 'incidents' = ANY (families) THEN
		-- The incidents (1.4): the findings the server remembered.  Cheap:
		-- read from the store, no evaluation, so a family of their own that
		-- an exporter's cheap query can read beside the others.
		RETURN QUERY
		WITH problems AS (
			SELECT p.problem FROM @extschema@.pg_contention_problems() AS p WHERE p.incidents
		), severities(severity) AS (
			VALUES ('warning'), ('critical')
		), i AS MATERIALIZED (
			SELECT i.incidents_opened FROM @extschema@.pg_contention_info() AS i
		)
		SELECT 'incidents_opened_total', jsonb_build_object('problem', p.problem, 'severity', s.severity),
			   coalesce((i.incidents_opened -> p.problem ->> s.severity)::float8, 0),
			   'Incidents opened since the last reset, by problem and the severity they opened at (pg_contention_incidents; escalations are not counted again).', 'counter'
		  FROM problems AS p CROSS JOIN severities AS s CROSS JOIN i
		UNION ALL
		SELECT 'incidents_open', '{}', count(*)::float8,
			   'Incidents open now (pg_contention_incidents with closed NULL).', 'gauge'
		  FROM @extschema@.pg_contention_incidents(false, 0::pg_catalog.int8) AS x
		 WHERE x.closed IS NULL;
	END IF;

	IF families IS NULL OR 'sampler' = ANY (families) THEN
		RETURN QUERY
		-- Running means sampling: a worker that stopped (stale) counts as 0.
		WITH s AS MATERIALIZED (
			SELECT * FROM @extschema@.pg_contention_sampler_status
		)
		SELECT 'sampler_running', '{}'::jsonb, (CASE WHEN s.running AND NOT s.stale THEN 1 ELSE 0 END)::float8,
			   'Whether the sampler background worker is running and sampling on time (1) or not (0: not running, or stale: its last tick is more than max(5 s, 5 periods) older than it promised).', 'gauge'
		  FROM s
		UNION ALL
		SELECT 'sampler_last_tick_age_seconds', '{}',
			   coalesce(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - s.last_tick_at), 0)::float8,
			   'Seconds since the sampler last sampled (0 before its first sample); a few sample periods while it runs, up to 1.5 s while it dozes on an idle server.', 'gauge'
		  FROM s;
	END IF;
END
$$;

CREATE OR REPLACE VIEW @extschema@.pg_contention_metrics AS
	SELECT * FROM @extschema@.pg_contention_metrics(NULL::pg_catalog.text[]);

GRANT SELECT ON @extschema@.pg_contention_metrics TO PUBLIC;
