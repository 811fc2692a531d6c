/* pg_contention--1.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_contention" to load this file. \quit

--
-- Live subtransaction state of every backend with a transaction open.
--
CREATE FUNCTION @extschema@.pg_contention_subxact(
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT application_name text,
	OUT backend_type text,
	OUT state text,
	OUT xact_start timestamp with time zone,
	OUT top_xid xid,
	OUT backend_xmin xid,
	OUT subxact_count integer,
	OUT subxact_overflowed boolean,
	OUT query_id bigint,
	OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_subxact'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW @extschema@.pg_contention_subxact AS
	SELECT s.pid,
		   d.datname,
		   r.rolname AS usename,
		   s.application_name,
		   s.backend_type,
		   s.state,
		   s.xact_start,
		   s.top_xid,
		   s.backend_xmin,
		   s.subxact_count,
		   s.subxact_overflowed,
		   s.query_id,
		   s.query
	  FROM @extschema@.pg_contention_subxact() AS s
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.datid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.usesysid;

GRANT SELECT ON @extschema@.pg_contention_subxact TO PUBLIC;

--
-- Subtransaction-cache overflow events: one per top-level transaction whose
-- cache overflowed, naming the statement that was running.
--
CREATE FUNCTION @extschema@.pg_contention_overflow_events(
	OUT event_time timestamp with time zone,
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT application_name text,
	OUT top_xid xid,
	OUT query_id bigint,
	OUT nested_query_id bigint,
	OUT nesting_depth integer,
	OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_overflow_events'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_overflow_events AS
	SELECT e.event_time,
		   e.pid,
		   d.datname,
		   r.rolname AS usename,
		   e.application_name,
		   e.top_xid,
		   e.query_id,
		   e.nested_query_id,
		   e.nesting_depth,
		   e.query
	  FROM @extschema@.pg_contention_overflow_events() AS e
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = e.datid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = e.usesysid;

GRANT SELECT ON @extschema@.pg_contention_overflow_events TO PUBLIC;

--
-- Capacities and fill of the bounded stores, with their eviction and drop
-- counters.
--
CREATE FUNCTION @extschema@.pg_contention_info(
	OUT stats_reset timestamp with time zone,
	OUT statements_max integer,
	OUT statements integer,
	OUT statement_evictions bigint,
	OUT events_max integer,
	OUT events_written bigint,
	OUT events_dropped bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_info AS
	SELECT * FROM @extschema@.pg_contention_info();

GRANT SELECT ON @extschema@.pg_contention_info TO PUBLIC;

--
-- Index scans that visit dead or invisible entries, per statement and index
-- (plain scans, and bitmap scans whose heap side can be attributed).
--
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

--
-- Holders of the xmin horizon: backends, walsenders carrying standby
-- feedback, replication slots, prepared transactions; what holds most
-- first, root holders past the thresholds marked as blocking cleanup.
--
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
-- The sampler: wait profile, per-second history, and the worker's status.
--
CREATE FUNCTION @extschema@.pg_contention_waits(
	OUT dbid oid,
	OUT query_id bigint,
	OUT wait_event_type text,
	OUT wait_event text,
	OUT samples bigint,
	OUT share double precision,
	OUT roleid oid
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_waits'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_waits AS
	SELECT d.datname,
		   r.rolname AS usename,
		   w.dbid,
		   w.query_id,
		   w.wait_event_type,
		   w.wait_event,
		   w.samples,
		   w.share
	  FROM @extschema@.pg_contention_waits() AS w
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = w.dbid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = w.roleid;

GRANT SELECT ON @extschema@.pg_contention_waits TO PUBLIC;

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
	OUT subtrans_reads bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_history'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.pg_contention_history AS
	SELECT * FROM @extschema@.pg_contention_history();

GRANT SELECT ON @extschema@.pg_contention_history TO PUBLIC;

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
-- Per-statement counters: calls, rows and buffers, calls on suboverflowed
-- snapshots and the pg_subtrans waits sampled for them, the subtransaction
-- cache's high-water mark, calls on a hot standby, overflow events caused.
-- (After the sampler's functions: the view reads the wait profile.)
--
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
-- old_snapshot_threshold (PostgreSQL 13-16): the server's state and the
-- spinlock pressure figures, over a recent window and since the last reset.
--
CREATE FUNCTION @extschema@.pg_contention_old_snapshot(
	window_seconds integer DEFAULT 60,
	OUT setting_minutes integer,
	OUT enabled boolean,
	OUT applicable boolean,
	OUT snapshot_timestamp timestamp with time zone,
	OUT latest_xmin xid,
	OUT next_map_update timestamp with time zone,
	OUT threshold_timestamp timestamp with time zone,
	OUT threshold_xid xid,
	OUT map_entries_used integer,
	OUT window_seconds_covered integer,
	OUT probes bigint,
	OUT probe_p50_us double precision,
	OUT probe_p99_us double precision,
	OUT probe_max_us double precision,
	OUT lock_held_pct double precision,
	OUT lock_ops_per_sec_estimate double precision,
	OUT cpu_share_of_active double precision,
	OUT avg_active_backends double precision,
	OUT oldsnapshot_timemap_samples bigint,
	OUT procarray_samples bigint,
	OUT total_probes bigint,
	OUT total_probe_p50_us double precision,
	OUT total_probe_p99_us double precision,
	OUT total_probe_max_us double precision,
	OUT total_lock_held_pct double precision,
	OUT total_lock_ops_estimate bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_old_snapshot'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW @extschema@.pg_contention_old_snapshot AS
	SELECT pg_catalog.current_setting('old_snapshot_threshold', true) AS setting, o.*
	  FROM @extschema@.pg_contention_old_snapshot(60) AS o;

GRANT SELECT ON @extschema@.pg_contention_old_snapshot TO PUBLIC;

--
-- Forget all statements, events, the wait profile and the history
-- (superuser, or an explicit GRANT).
--
CREATE FUNCTION @extschema@.pg_contention_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_contention_reset'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_reset() FROM PUBLIC;
