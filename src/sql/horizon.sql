--
-- Holders of the xmin horizon: backends, walsenders carrying standby
-- feedback, replication slots, prepared transactions; what holds most
-- first, root holders past the thresholds marked as blocking cleanup.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_horizon_holders(
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

CREATE OR REPLACE VIEW @extschema@.pg_contention_horizon AS
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
			   -- age() counts from the next xid as this transaction first
			   -- saw it: a holder whose snapshot is newer would read below 0.
			   greatest(pg_catalog.age(holders.xmin), 0) AS xmin_age,
			   -- greatest() would turn an unknown start into zero
			   CASE WHEN holders.held_since IS NOT NULL
					THEN greatest(pg_catalog.clock_timestamp() - holders.held_since,
								  interval '0')
			   END AS held_for,
			   leader.holder AS follows
		  FROM holders
		  -- The holder whose own running XID is this one's xmin: an XID is
		  -- one transaction's, so at most one.  A join, not a subquery per
		  -- row: the planner's estimate for that crossed jit_above_cost.
		  -- Only an older holder is followed.  A snapshot (or a slot) taken
		  -- while no transaction ran has for xmin the next XID, which the
		  -- next writer gets: a transaction that began after this holder
		  -- has its xid equal to this xmin without being the reason for it.
		  -- So a holder whose start is known follows only a leader that
		  -- began no later (a prepared transaction's start is unknown: its
		  -- PREPARE time stands for it, erring on "holds by itself"); and an
		  -- inactive slot follows nobody: its xmin stays when the
		  -- transaction ends.  Holders whose start is unknown (standby
		  -- feedback, active slots) move with the oldest transaction
		  -- running, so they may follow it.
		  LEFT JOIN holders AS leader
			ON leader.own_xid = holders.xmin
		   AND (leader.kind, leader.holder) IS DISTINCT FROM (holders.kind, holders.holder)
		   AND coalesce(leader.held_since <= holders.held_since, true)
		   AND NOT (holders.kind = 'replication slot' AND holders.state = 'inactive')
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
			   END AS blocks_cleanup,
		   -- Its own XID (a backend's that wrote, a prepared transaction's):
		   -- every snapshot taken in any database while it runs has an xmin
		   -- at or before it, so it holds back the cleanup of every database
		   -- where snapshots are taken, not only its own (1.4).
		   j.own_xid
	  FROM judged AS j
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = j.datid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = j.usesysid
	  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = j.pid
	 ORDER BY j.xmin_age DESC, j.held_for DESC NULLS LAST, j.kind, j.holder;

GRANT SELECT ON @extschema@.pg_contention_horizon TO PUBLIC;
