/* pg_contention--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_contention UPDATE TO '1.1'" to load this file. \quit

--
-- pg_contention_sampler_status: the memory the sampler's worker holds.
--
DROP VIEW @extschema@.pg_contention_sampler_status;
DROP FUNCTION @extschema@.pg_contention_sampler_status();

CREATE FUNCTION @extschema@.pg_contention_sampler_status(
	OUT running boolean,
	OUT pid integer,
	OUT started_at timestamp with time zone,
	OUT enabled boolean,
	OUT period_ms integer,
	OUT ticks bigint,
	OUT last_tick_us double precision,
	OUT max_tick_us double precision,
	OUT mean_tick_us double precision,
	OUT profile_entries integer,
	OUT profile_max integer,
	OUT profile_evictions bigint,
	OUT history_buckets integer,
	OUT memory_bytes bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_sampler_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_sampler_status AS
	SELECT * FROM @extschema@.pg_contention_sampler_status();

GRANT SELECT ON @extschema@.pg_contention_sampler_status TO PUBLIC;

--
-- pg_contention_horizon: who holds the horizon by itself (blocks_cleanup
-- marks root holders past pg_contention.horizon_min_age, not sessions
-- whose snapshot only follows another's transaction), application_name
-- and client_addr, durations never negative, the oldest and longest first.
--
DROP VIEW @extschema@.pg_contention_horizon;
DROP FUNCTION @extschema@.pg_contention_horizon_holders();

CREATE FUNCTION @extschema@.pg_contention_horizon_holders(
	OUT kind text,
	OUT holder text,
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT xmin xid,
	OUT catalog_only boolean,
	OUT held_since timestamp with time zone,
	OUT state text,
	OUT query text,
	OUT own_xid xid
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_horizon_holders'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW @extschema@.pg_contention_horizon AS
	WITH holders AS (
		SELECT h.kind, h.holder, h.pid, h.datid, h.usesysid, h.xmin,
			   h.own_xid, h.catalog_only, h.held_since, h.state, h.query
		  FROM @extschema@.pg_contention_horizon_holders() AS h
		UNION ALL
		SELECT 'prepared transaction', p.gid, NULL, pd.oid, pr.oid,
			   p.transaction, p.transaction, false, p.prepared, 'prepared', NULL
		  FROM pg_catalog.pg_prepared_xacts AS p
		  LEFT JOIN pg_catalog.pg_database AS pd ON pd.datname = p.database
		  LEFT JOIN pg_catalog.pg_roles AS pr ON pr.rolname = p.owner
	), judged AS (
		SELECT holders.*,
			   pg_catalog.age(holders.xmin) AS xmin_age,
			   -- greatest() would turn an unknown start into zero
			   CASE WHEN holders.held_since IS NOT NULL
					THEN greatest(pg_catalog.clock_timestamp() - holders.held_since,
								  interval '0')
			   END AS held_for,
			   (SELECT min(o.holder)
				  FROM holders AS o
				 WHERE o.own_xid = holders.xmin
				   AND (o.kind, o.holder) IS DISTINCT FROM (holders.kind, holders.holder))
			   AS follows
		  FROM holders
	)
	SELECT j.kind,
		   j.holder,
		   j.pid,
		   d.datname,
		   u.rolname AS usename,
		   a.application_name,
		   a.client_addr,
		   j.xmin,
		   j.xmin_age,
		   j.held_for,
		   j.state,
		   j.query,
		   j.catalog_only,
		   j.follows,
		   j.follows IS NULL
		   AND CASE WHEN j.held_for IS NOT NULL
					THEN j.held_for >= coalesce(pg_catalog.current_setting(
								'pg_contention.horizon_min_age', true), '1min')::pg_catalog.interval
					ELSE j.xmin_age >= coalesce(pg_catalog.current_setting(
								'pg_contention.horizon_min_xid_age', true), '10000')::pg_catalog.int4
			   END AS blocks_cleanup
	  FROM judged AS j
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = j.datid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = j.usesysid
	  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = j.pid
	 ORDER BY j.xmin_age DESC, j.held_for DESC NULLS LAST, j.kind, j.holder;

GRANT SELECT ON @extschema@.pg_contention_horizon TO PUBLIC;

--
-- pg_contention_statements: rows and buffers of top-level executions (the
-- cost of dead entries in buffers per row), the cache's high-water mark
-- and near-overflow executions, and the Subtrans waits the sampler saw.
--
DROP VIEW @extschema@.pg_contention_statements;
DROP FUNCTION @extschema@.pg_contention_statements();

CREATE FUNCTION @extschema@.pg_contention_statements(
	OUT userid oid,
	OUT dbid oid,
	OUT query_id bigint,
	OUT calls bigint,
	OUT suboverflowed_calls bigint,
	OUT standby_calls bigint,
	OUT overflow_events bigint,
	OUT first_seen timestamp with time zone,
	OUT last_seen timestamp with time zone,
	OUT query text,
	OUT rows bigint,
	OUT shared_blks_hit bigint,
	OUT shared_blks_read bigint,
	OUT max_subxacts integer,
	OUT near_overflow_calls bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_statements'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_statements AS
	SELECT s.userid,
		   r.rolname AS usename,
		   s.dbid,
		   d.datname,
		   s.query_id,
		   s.calls,
		   s.rows,
		   s.shared_blks_hit,
		   s.shared_blks_read,
		   ((s.shared_blks_hit + s.shared_blks_read)::double precision
			/ nullif(s.rows, 0)) AS blks_per_row,
		   s.suboverflowed_calls,
		   coalesce(w.subtrans_wait_samples, 0) AS subtrans_wait_samples,
		   s.max_subxacts,
		   s.near_overflow_calls,
		   s.overflow_events,
		   s.standby_calls,
		   s.first_seen,
		   s.last_seen,
		   s.query
	  FROM @extschema@.pg_contention_statements() AS s
	  LEFT JOIN (SELECT p.dbid, p.roleid, p.query_id,
						sum(p.samples)::bigint AS subtrans_wait_samples
				   FROM @extschema@.pg_contention_waits() AS p
				  WHERE p.wait_event_type = 'LWLock'
					AND p.wait_event IN ('SubtransSLRU', 'SubtransBuffer')
				  GROUP BY p.dbid, p.roleid, p.query_id) AS w
		ON w.dbid = s.dbid AND w.roleid = s.userid AND w.query_id = s.query_id
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.dbid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.userid;

GRANT SELECT ON @extschema@.pg_contention_statements TO PUBLIC;

--
-- pg_contention_index_scans: bitmap scans whose heap side can be
-- attributed count dead visits like plain scans; their lossy pages.
--
DROP VIEW @extschema@.pg_contention_index_scans;
DROP FUNCTION @extschema@.pg_contention_index_scans();

CREATE FUNCTION @extschema@.pg_contention_index_scans(
	OUT userid oid,
	OUT dbid oid,
	OUT query_id bigint,
	OUT indexrelid oid,
	OUT scans bigint,
	OUT entries_read bigint,
	OUT live_fetched bigint,
	OUT dead_visits bigint,
	OUT max_dead_visits_per_scan bigint,
	OUT index_only_scans bigint,
	OUT bitmap_scans bigint,
	OUT other_entries_read bigint,
	OUT last_seen timestamp with time zone,
	OUT query text,
	OUT indexes_untracked bigint,
	OUT bitmap_lossy_pages bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_index_scans'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_index_scans AS
	SELECT d.datname,
		   n.nspname AS schemaname,
		   t.relname,
		   ic.relname AS indexrelname,
		   s.dbid,
		   s.indexrelid,
		   s.query_id,
		   sum(s.scans)::bigint AS scans,
		   sum(s.entries_read)::bigint AS entries_read,
		   sum(s.live_fetched)::bigint AS live_fetched,
		   sum(s.dead_visits)::bigint AS dead_visits,
		   max(s.max_dead_visits_per_scan) AS max_dead_visits_per_scan,
		   (sum(s.dead_visits) / nullif(sum(s.entries_read), 0))::double precision AS dead_ratio,
		   sum(s.index_only_scans)::bigint AS index_only_scans,
		   sum(s.bitmap_scans)::bigint AS bitmap_scans,
		   sum(s.bitmap_lossy_pages)::bigint AS bitmap_lossy_pages,
		   sum(s.other_entries_read)::bigint AS other_entries_read,
		   max(s.last_seen) AS last_seen,
		   min(s.query) AS query
	  FROM @extschema@.pg_contention_index_scans() AS s
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.dbid
	  LEFT JOIN pg_catalog.pg_class AS ic
		ON ic.oid = s.indexrelid AND d.datname = pg_catalog.current_database()
	  LEFT JOIN pg_catalog.pg_index AS i ON i.indexrelid = ic.oid
	  LEFT JOIN pg_catalog.pg_class AS t ON t.oid = i.indrelid
	  LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = ic.relnamespace
	 GROUP BY d.datname, n.nspname, t.relname, ic.relname, s.dbid, s.indexrelid, s.query_id;

GRANT SELECT ON @extschema@.pg_contention_index_scans TO PUBLIC;
