--
-- Pids recorded before the server's last start belong to a previous server
-- run: the same number may now be another process.  The stores outlive
-- restarts (pg_stat_tmp/pg_contention.stat), so a rule that names a pid from
-- them says so: "before the restart at 14:02:11" when everything it saw
-- (first_seen to last_seen) predates the start, "partly before the restart
-- at ..." when some of it does, NULL otherwise.  The start is the later of
-- the postmaster's and the stores' load (a crash restart keeps the
-- postmaster and loads the stores again; with nothing loaded, nothing in
-- the stores is older than this run).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_before_restart(
	first_seen timestamp with time zone,
	last_seen timestamp with time zone DEFAULT NULL
)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
	SELECT CASE WHEN coalesce(last_seen, first_seen) < s.started THEN 'before the restart at ' || s.at
				WHEN first_seen < s.started THEN 'partly before the restart at ' || s.at
		   END
	  FROM (SELECT r.started,
				   pg_catalog.to_char(r.started,
									  CASE WHEN r.started > pg_catalog.now() - interval '1 day'
										   THEN 'HH24:MI:SS' ELSE 'YYYY-MM-DD HH24:MI:SS' END) AS at
			  FROM (SELECT greatest(pg_catalog.pg_postmaster_start_time(), i.last_loaded) AS started
					  FROM @extschema@.pg_contention_info() AS i) AS r) AS s
$$;
