--
-- The root holders of the xmin horizon (pg_contention_horizon rows that
-- follow no other holder), each with its level against the critical
-- thresholds, a subject naming it for a DBA and a short label: read by
-- the dead_tuple_index_scan and xmin_horizon_held rules.  follower_databases:
-- the databases of the holders that follow it now (their snapshots' xmin
-- is its XID): it holds back their cleanup too.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_horizon_roots(
	window_length interval DEFAULT NULL,
	OUT kind text,
	OUT holder text,
	OUT pid integer,
	OUT datname name,
	OUT usename name,
	OUT application_name text,
	OUT client_addr inet,
	OUT xmin xid,
	OUT xmin_age integer,
	OUT held_for interval,
	OUT state text,
	OUT query text,
	OUT catalog_only boolean,
	OUT follows text,
	OUT blocks_cleanup boolean,
	OUT own_xid xid,
	OUT level text,
	OUT subject text,
	OUT label text,
	OUT follower_databases name[]
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
holders AS MATERIALIZED (
	SELECT h.* FROM @extschema@.pg_contention_horizon AS h
)
SELECT h.*,
	   CASE WHEN h.held_for >= params.horizon_critical_age
				 OR h.xmin_age >= params.horizon_critical_xid_age THEN 'critical'
			ELSE 'warning' END AS level,
	   CASE h.kind
			WHEN 'backend' THEN 'pid ' || h.pid || ' ('
				|| concat_ws(', ', 'application ' || nullif(h.application_name, ''),
							 'user ' || h.usename, 'database ' || h.datname,
							 coalesce(h.state, 'transaction') || coalesce(' for ' || @extschema@.pg_contention_duration(h.held_for), ''))
				-- normalized: a subject goes to the server log, check and tickets
				|| ')' || coalesce(', last statement '
								   || @extschema@.pg_contention_shorten(@extschema@.pg_contention_normalize(h.query)), '')
			-- A logical slot holds by its catalog_xmin (catalog rows only);
			-- a physical slot's xmin is its standby's hot_standby_feedback.
			WHEN 'replication slot' THEN 'replication slot ' || h.holder
				|| ' (' || h.state
				|| CASE WHEN h.catalog_only THEN ', by its catalog_xmin: catalog rows only'
						WHEN h.datname IS NULL THEN ', '
							|| concat_ws(', ', 'the xmin its standby sends through hot_standby_feedback',
										 'application ' || nullif(h.application_name, ''),
										 'client ' || pg_catalog.host(h.client_addr))
						ELSE '' END || ')'
			WHEN 'prepared transaction' THEN 'prepared transaction ''' || h.holder || ''''
				|| coalesce(' (database ' || h.datname || ', owner ' || h.usename || ')', '')
			-- The queries on that standby hold it: say which standby.
			WHEN 'standby feedback' THEN 'hot_standby_feedback of a standby ('
				|| concat_ws(', ', 'application ' || nullif(h.application_name, ''),
							 'client ' || pg_catalog.host(h.client_addr),
							 'walsender pid ' || h.pid)
				|| ')'
			ELSE h.kind || ' ' || h.holder END AS subject,
	   CASE h.kind
			WHEN 'backend' THEN 'pid ' || h.pid || coalesce(' (application ' || nullif(h.application_name, '') || ')', '')
			WHEN 'replication slot' THEN 'replication slot ' || h.holder
				|| CASE WHEN h.catalog_only THEN ' (catalog_xmin)' ELSE '' END
			WHEN 'prepared transaction' THEN 'prepared transaction ''' || h.holder || ''''
			WHEN 'standby feedback' THEN 'hot_standby_feedback of a standby ('
				|| concat_ws(', ', 'application ' || nullif(h.application_name, ''), 'walsender pid ' || h.pid) || ')'
			ELSE h.kind || ' ' || h.holder END AS label,
	   ARRAY(SELECT DISTINCT f.datname FROM holders AS f
			  WHERE f.follows = h.holder AND f.datname IS NOT NULL AND f.datname IS DISTINCT FROM h.datname
			  ORDER BY 1) AS follower_databases
  FROM holders AS h, params
 WHERE h.follows IS NULL;
END
$$;
