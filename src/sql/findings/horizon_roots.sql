--
-- The root holders of the xmin horizon (pg_contention_horizon rows that
-- follow no other holder), each with its level against the critical
-- thresholds, a subject naming it for a DBA and a short label: read by
-- the dead_tuple_index_scan, hot_chain_scan and xmin_horizon_held rules.
-- horizon_roots: these rows as read before (a JSON array of them, as
-- pg_contention_findings reads them once for all three rules, so that one
-- evaluation names one set of holders); NULL: read now.  follower_databases:
-- the databases of the holders that follow it now (their snapshots' xmin
-- is its XID): it holds back their cleanup too.  command, object and
-- progress: a backend's index build, REINDEX, CLUSTER or VACUUM FULL, from
-- the progress views (NULL for another role's without pg_read_all_stats),
-- so that the advice leaves no invalid index or lost work behind.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_horizon_roots(
	window_length interval DEFAULT NULL,
	horizon_roots jsonb DEFAULT NULL,
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
	OUT client_port integer,
	OUT held_since timestamp with time zone,
	OUT level text,
	OUT subject text,
	OUT label text,
	OUT follower_databases name[],
	OUT command text,
	OUT object text,
	OUT progress text,
	OUT address_connections integer,
	OUT pooler text
)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
IF horizon_roots IS NOT NULL THEN
	IF pg_catalog.jsonb_typeof(horizon_roots) IS DISTINCT FROM 'array' THEN
		RAISE EXCEPTION 'horizon_roots must be a JSON array of pg_contention_horizon_roots rows, or NULL'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass NULL to read the holders now.';
	END IF;
	-- (An element that is no object is no row: left out.)
	RETURN QUERY
	SELECT * FROM pg_catalog.jsonb_to_recordset(
			(SELECT coalesce(pg_catalog.jsonb_agg(e.value), '[]') FROM pg_catalog.jsonb_array_elements(horizon_roots) AS e
			  WHERE pg_catalog.jsonb_typeof(e.value) = 'object'))
		AS r(kind text, holder text, pid integer, datname name,
			usename name, application_name text, client_addr inet, xmin xid,
			xmin_age integer, held_for interval, state text, query text,
			catalog_only boolean, follows text, blocks_cleanup boolean, own_xid xid,
			client_port integer, held_since timestamp with time zone, level text, subject text,
			label text, follower_databases name[], command text, object text,
			progress text, address_connections integer, pooler text);
	RETURN;
END IF;
RETURN QUERY
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
-- held_since: since when it has held its xmin, on the clock held_for
-- was read from (the view reads it row by row): the rules compare it
-- with when an execution ran, and the evaluation's own start is earlier
-- by the time it has taken, which would make a holder that began just
-- after an execution seem to have held it.
holders AS MATERIALIZED (
	SELECT h.*, pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) h.held_for AS held_since
	  FROM @extschema@.pg_contention_horizon AS h
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
				-- where it connects from: a pooler's address and port lead to
				-- the client behind it (PgBouncer's SHOW SERVERS)
				|| coalesce(', client ' || pg_catalog.host(h.client_addr) || coalesce(':' || h.client_port, ''), '')
				|| CASE WHEN pl.pooler IS NULL THEN ''
						WHEN pl.certain THEN ', a pooler''s connection'
						ELSE ', a pooler''s perhaps' END
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
			WHEN 'primary transaction' THEN 'the primary''s transaction ' || h.holder
				|| ' (the oldest running there as this standby replays: every snapshot here has it for xmin)'
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
			WHEN 'primary transaction' THEN 'the primary''s transaction ' || h.holder
			WHEN 'standby feedback' THEN 'hot_standby_feedback of a standby ('
				|| concat_ws(', ', 'application ' || nullif(h.application_name, ''), 'walsender pid ' || h.pid) || ')'
			ELSE h.kind || ' ' || h.holder END AS label,
	   ARRAY(SELECT DISTINCT f.datname FROM holders AS f
			  WHERE f.follows = h.holder AND f.datname IS NOT NULL AND f.datname IS DISTINCT FROM h.datname
			  ORDER BY 1) AS follower_databases,
	   p.command, p.object, p.progress,
	   ac.address_connections, pl.pooler
  FROM holders AS h
  CROSS JOIN params
  -- How many sessions connect from the same address: a pooler's many.
  CROSS JOIN LATERAL (
		SELECT CASE WHEN h.client_addr IS NOT NULL
					THEN (SELECT count(*) FROM pg_catalog.pg_stat_activity AS s
						   WHERE s.client_addr OPERATOR(pg_catalog.=) h.client_addr)::integer END AS address_connections
	) AS ac
  -- A pooler's connection, and why it is said to be one: PgBouncer's
  -- application_name_add_host appends the client's address and port to
  -- the application name (" - 10.0.0.5:51234"), which names the client;
  -- a pooler that names itself; or many sessions from one address.  The
  -- application name is the client's to set: it is quoted as what it says.
  CROSS JOIN LATERAL (
		SELECT h.application_name ~ ' - (\[[0-9A-Fa-f:.]+\]|[0-9.]+):[0-9]+$' AS names_client,
			   h.application_name ~* '^(pgbouncer|pgpool|odyssey|pgcat|pgagroal|supavisor|pgdog)\M' AS names_pooler
	) AS an
  CROSS JOIN LATERAL (
		SELECT CASE WHEN h.kind <> 'backend' THEN NULL
					WHEN an.names_client
					THEN 'Its application name ends with its client''s address and port, '
						 || pg_catalog.substring(h.application_name, ' - ([^ ]+)$')
						 || ' (PgBouncer''s application_name_add_host), a pooler''s connection'
					WHEN an.names_pooler
					THEN 'Its application name, ' || h.application_name || ', is a pooler''s'
					WHEN ac.address_connections >= 3
					THEN ac.address_connections || ' sessions connect from ' || pg_catalog.host(h.client_addr)
						 || ', a pooler''s perhaps' END AS pooler,
			   an.names_client OR an.names_pooler AS certain
	) AS pl
  -- A relation of another database is named by its OID there: regclass
  -- would read this database's catalog.
  LEFT JOIN LATERAL (
		SELECT c.command,
			   -- A concurrent build's index is committed first, so it has a name.
			   CASE WHEN c.datname IS DISTINCT FROM pg_catalog.current_database()
					THEN 'table ' || c.relid || ' of database ' || pg_catalog.quote_ident(c.datname)
					WHEN c.command LIKE '%CONCURRENTLY' AND c.index_relid <> 0
					THEN 'index ' || c.index_relid::pg_catalog.regclass::pg_catalog.text
						 || ' on table ' || c.relid::pg_catalog.regclass::pg_catalog.text
					ELSE 'table ' || c.relid::pg_catalog.regclass::pg_catalog.text END AS object,
			   c.phase || CASE WHEN c.blocks_total > 0
							   THEN ', ' || pg_catalog.to_char(c.blocks_done, 'FM999,999,999,990') || ' of '
									|| pg_catalog.to_char(c.blocks_total, 'FM999,999,999,990') || ' blocks'
							   WHEN c.tuples_total > 0
							   THEN ', ' || pg_catalog.to_char(c.tuples_done, 'FM999,999,999,990') || ' of '
									|| pg_catalog.to_char(c.tuples_total, 'FM999,999,999,990') || ' tuples'
							   ELSE '' END AS progress
		  FROM pg_catalog.pg_stat_progress_create_index AS c
		 WHERE c.pid = h.pid AND c.command IS NOT NULL
		UNION ALL
		SELECT c.command,
			   CASE WHEN c.datname IS DISTINCT FROM pg_catalog.current_database()
					THEN 'table ' || c.relid || ' of database ' || pg_catalog.quote_ident(c.datname)
					ELSE 'table ' || c.relid::pg_catalog.regclass::pg_catalog.text END,
			   c.phase || CASE WHEN c.heap_blks_total > 0
							   THEN ', ' || pg_catalog.to_char(c.heap_blks_scanned, 'FM999,999,999,990') || ' of '
									|| pg_catalog.to_char(c.heap_blks_total, 'FM999,999,999,990') || ' blocks'
							   ELSE '' END
		  FROM pg_catalog.pg_stat_progress_cluster AS c
		 WHERE c.pid = h.pid AND c.command IS NOT NULL
		 LIMIT 1) AS p ON h.kind = 'backend'
 WHERE h.follows IS NULL;
END
$$;
