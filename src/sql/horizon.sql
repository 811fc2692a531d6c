--
-- Holders of the xmin horizon: backends, walsenders carrying standby
-- feedback, replication slots, prepared transactions; what holds most
-- first, root holders past the thresholds marked as blocking cleanup.
-- held_for is the age of the xmin, not of the transaction: a standby's
-- feedback (and an active slot's xmin) moves at every message, so what
-- counts is how long it has stood still behind the next XID, which is
-- what the standby's own queries hold (1.4).  On a standby the primary's
-- oldest running transaction is a holder too ('primary transaction').
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
	OUT own_xid xid,
	OUT xmin_since timestamp with time zone
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_horizon_holders'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE OR REPLACE VIEW @extschema@.pg_contention_horizon AS
	WITH procs AS MATERIALIZED (
		SELECT * FROM @extschema@.pg_contention_horizon_holders()
	), holders AS (
		SELECT h.kind, h.holder, h.pid, h.datid, h.usesysid, h.xmin,
			   h.own_xid, h.catalog_only, h.held_since, h.state, h.query,
			   h.xmin_since
		  FROM procs AS h
		UNION ALL
		-- On a standby: the primary's oldest running transaction, as replay
		-- knows it (the xmin of a snapshot taken now).  Every snapshot here
		-- has it for xmin: the sessions that follow it hold nothing by
		-- themselves, and cancelling them frees nothing (1.4).  Seen here
		-- since the oldest snapshot that has it.
		SELECT 'primary transaction', s.xmin::pg_catalog.text, NULL, NULL, NULL, s.xmin,
			   s.xmin, false, NULL, 'running on the primary', NULL,
			   (SELECT pg_catalog.min(coalesce(f.xmin_since, f.held_since))
				  FROM procs AS f WHERE f.xmin OPERATOR(pg_catalog.=) s.xmin)
		  FROM (SELECT ((pg_catalog.pg_snapshot_xmin(c.snap)::pg_catalog.text::pg_catalog.int8
						 OPERATOR(pg_catalog.%) 4294967296::pg_catalog.int8)::pg_catalog.text)::pg_catalog.xid AS xmin
				  FROM (SELECT pg_catalog.pg_current_snapshot() AS snap) AS c
				 WHERE pg_catalog.pg_is_in_recovery()
				   AND pg_catalog.pg_snapshot_xmin(c.snap) OPERATOR(pg_catalog.<) pg_catalog.pg_snapshot_xmax(c.snap)) AS s
		UNION ALL
		SELECT 'prepared transaction', p.gid, NULL, pd.oid, pr.oid,
			   p.transaction, p.transaction, false, p.prepared, 'prepared', NULL,
			   NULL
		  FROM pg_catalog.pg_prepared_xacts AS p
		  LEFT JOIN pg_catalog.pg_database AS pd ON pd.datname = p.database
		  LEFT JOIN pg_catalog.pg_roles AS pr ON pr.rolname = p.owner
	), judged AS (
		SELECT holders.*,
			   -- age() counts from the next xid as this transaction first
			   -- saw it: a holder whose snapshot is newer would read below 0.
			   greatest(pg_catalog.age(holders.xmin), 0) AS xmin_age,
			   -- How long its xmin has had its value (the sampler's xmin_since:
			   -- a transaction's snapshots are newer than its start, and a
			   -- standby's feedback moves at every message), else since its
			   -- transaction's start, its PREPARE, its slot's release.
			   -- greatest() would turn an unknown start into zero.
			   CASE WHEN coalesce(holders.xmin_since, holders.held_since) IS NOT NULL
					THEN greatest(pg_catalog.clock_timestamp()
								  OPERATOR(pg_catalog.-) coalesce(holders.xmin_since, holders.held_since),
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
		   j.own_xid,
		   a.client_port
	  FROM judged AS j
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = j.datid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = j.usesysid
	  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = j.pid
	 -- Longest held first, from the times themselves: held_for is read from
 -- the clock row by row, and equal times must not order by that.
 ORDER BY j.xmin_age DESC, coalesce(j.xmin_since, j.held_since) NULLS LAST, j.held_since NULLS LAST,
		  j.kind, j.holder;

GRANT SELECT ON @extschema@.pg_contention_horizon TO PUBLIC;
