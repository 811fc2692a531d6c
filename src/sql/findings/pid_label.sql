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
-- PL/pgSQL: a SQL function reading FROM a subquery is planned again at
-- each execution of every query that calls it (see text_helpers.sql).
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	started timestamp with time zone;
	started_text text;
BEGIN
	SELECT greatest(pg_catalog.pg_postmaster_start_time(), i.last_loaded)
	  INTO started
	  FROM @extschema@.pg_contention_info() AS i;
	started_text := pg_catalog.to_char(started,
						CASE WHEN started > pg_catalog.now() - interval '1 day'
							 THEN 'HH24:MI:SS' ELSE 'YYYY-MM-DD HH24:MI:SS' END);
	RETURN CASE WHEN coalesce(last_seen, first_seen) < started THEN 'before the restart at ' || started_text
				WHEN first_seen < started THEN 'partly before the restart at ' || started_text
		   END;
END
$$;
