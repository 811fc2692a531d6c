--
-- The findings' inputs that are not evidence: the window (checked: 1 s to
-- 7 days), the clock, the server's role and version, and every threshold,
-- read once per rule from the pg_contention.* settings (a session can SET
-- one to ask "what if").
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_findings_params(
	window_length interval DEFAULT NULL,
	OUT now timestamp with time zone,
	OUT w_s integer,
	OUT cutoff timestamp with time zone,
	OUT w_text text,
	OUT standby boolean,
	OUT version_num integer,
	OUT warn_level integer,
	OUT lookups_warning double precision,
	OUT wait_warning double precision,
	OUT wait_critical double precision,
	OUT dead_warning double precision,
	OUT dead_critical double precision,
	OUT dead_ratio double precision,
	OUT horizon_critical_age interval,
	OUT horizon_critical_xid_age integer,
	OUT probe_warning double precision,
	OUT probe_critical double precision,
	OUT held_warning double precision,
	OUT held_critical double precision,
	OUT hot_chain_buffers double precision,
	OUT overflow_ended_after interval
)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
-- PL/pgSQL, not SQL: each rule calls it, and a SQL function returning a
-- record is planned again at every call.
AS $$
DECLARE
	seconds double precision;
BEGIN
	now := pg_catalog.clock_timestamp();
	-- Every rule, the findings, who pays and the report check the window
	-- here.  Longer than 7 days adds nothing: the history keeps at most a
	-- day, the statements two periods of at most a day.  Infinite
	-- intervals (PostgreSQL 17 and later) have an infinite epoch.
	seconds := pg_catalog.date_part('epoch', coalesce(window_length,
				pg_catalog.current_setting('pg_contention.findings_window', true)::interval));
	IF NOT (seconds >= 1 AND seconds <= 7 * 86400) THEN
		RAISE EXCEPTION 'window_length must be between 1 second and 7 days, not %', window_length
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass NULL for pg_contention.findings_window (' ||
						 pg_catalog.current_setting('pg_contention.findings_window', true) || ').';
	END IF;
	w_s := pg_catalog.round(seconds)::integer;
	cutoff := now - pg_catalog.make_interval(secs => w_s);
	w_text := @extschema@.pg_contention_duration(pg_catalog.make_interval(secs => w_s));
	standby := pg_catalog.pg_is_in_recovery();
	version_num := pg_catalog.current_setting('server_version_num')::integer;
	warn_level := pg_catalog.current_setting('pg_contention.subxact_warn_level', true)::integer;
	lookups_warning := pg_catalog.current_setting('pg_contention.subtrans_lookups_warning', true)::float8;
	wait_warning := pg_catalog.current_setting('pg_contention.subtrans_wait_warning', true)::float8;
	wait_critical := pg_catalog.current_setting('pg_contention.subtrans_wait_critical', true)::float8;
	dead_warning := pg_catalog.current_setting('pg_contention.dead_visits_warning', true)::float8;
	dead_critical := pg_catalog.current_setting('pg_contention.dead_visits_critical', true)::float8;
	dead_ratio := pg_catalog.current_setting('pg_contention.dead_ratio_warning', true)::float8;
	horizon_critical_age := pg_catalog.current_setting('pg_contention.horizon_critical_age', true)::interval;
	horizon_critical_xid_age := pg_catalog.current_setting('pg_contention.horizon_critical_xid_age', true)::integer;
	probe_warning := pg_catalog.current_setting('pg_contention.old_snapshot_probe_warning', true)::float8;
	probe_critical := pg_catalog.current_setting('pg_contention.old_snapshot_probe_critical', true)::float8;
	held_warning := pg_catalog.current_setting('pg_contention.old_snapshot_held_warning', true)::float8;
	held_critical := pg_catalog.current_setting('pg_contention.old_snapshot_held_critical', true)::float8;
	hot_chain_buffers := pg_catalog.current_setting('pg_contention.hot_chain_buffers_warning', true)::float8;
	overflow_ended_after := pg_catalog.current_setting('pg_contention.overflow_ended_after', true)::interval;
END
$$;
