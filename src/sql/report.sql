--
-- A plain-text report for pasting into a ticket: the findings, then the
-- top statements and indexes by cost, the horizon holders, and the last
-- minutes of history second by second.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_report(window_length interval DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET jit = off
AS $$
DECLARE
	report text;
	section text;
	n integer;
	w_s integer;
BEGIN
	-- The window, checked as the findings check it, before anything is read.
	SELECT p.w_s INTO w_s FROM @extschema@.pg_contention_findings_params(window_length) AS p;
	report := pg_catalog.format(E'pg_contention report at %s\nPostgreSQL %s, %s, findings window %s\n',
		pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ'),
		pg_catalog.current_setting('server_version'),
		CASE WHEN pg_catalog.pg_is_in_recovery() THEN 'hot standby' ELSE 'primary' END,
		@extschema@.pg_contention_duration(pg_catalog.make_interval(secs => w_s)));

	SELECT count(*),
		   pg_catalog.string_agg(pg_catalog.format(E'%s. [%s] %s: %s\n   %s\n   Advice: %s\n   Since: %s',
				f.n, f.severity, f.problem, f.subject, f.evidence, f.advice,
				coalesce(pg_catalog.to_char(f.since, 'YYYY-MM-DD HH24:MI:SS'), 'unknown')), E'\n' ORDER BY f.n)
	  INTO n, section
	  FROM (SELECT pg_catalog.row_number() OVER () AS n, x.*
			  FROM @extschema@.pg_contention_findings(window_length) AS x) AS f;
	report := report || pg_catalog.format(E'\n== Findings (%s)\n%s\n', n,
		coalesce(section, 'None: nothing pg_contention checks for is wrong now.'));

	SELECT pg_catalog.string_agg(pg_catalog.format('%10s %12s %10s %12s %8s  %s',
				s.calls, s.rows, coalesce(pg_catalog.round(s.blks_per_row::numeric, 1)::text, '-'),
				s.suboverflowed_calls, s.subtrans_wait_samples,
				@extschema@.pg_contention_shorten(s.query)), E'\n')
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_statements
			 -- numeric: counters loaded from a damaged file may be near 2^63.
			 ORDER BY shared_blks_hit::numeric + shared_blks_read DESC, suboverflowed_calls DESC
			 LIMIT 10) AS s;
	report := report || E'\n== Top statements by buffers used, since the last reset\n'
		|| pg_catalog.format('%10s %12s %10s %12s %8s  %s', 'calls', 'rows', 'blks/row',
							 'suboverflow', 'subtrans', 'statement')
		|| E'\n' || coalesce(section, '(none)') || E'\n';

	SELECT pg_catalog.string_agg(pg_catalog.format('%-30s %10s %14s %14s %7s  %s',
				coalesce(i.schemaname || '.' || i.indexrelname, 'oid ' || i.indexrelid),
				i.scans, i.dead_visits, i.max_dead_visits_per_scan,
				coalesce(pg_catalog.to_char(100 * i.dead_ratio, 'FM990.0') || '%', '-'),
				@extschema@.pg_contention_shorten(i.query)), E'\n')
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_index_scans
			 WHERE dead_visits > 0
			 ORDER BY dead_visits DESC LIMIT 10) AS i;
	report := report || E'\n== Top indexes by dead entries visited, since the last reset\n'
		|| pg_catalog.format('%-30s %10s %14s %14s %7s  %s', 'index', 'scans', 'dead visits',
							 'max per scan', 'dead', 'statement')
		|| E'\n' || coalesce(section, '(none)') || E'\n';

	SELECT pg_catalog.string_agg(pg_catalog.format('%-20s %-16s %8s %12s %14s %-7s %s',
				h.kind, h.holder, coalesce(h.pid::text, '-'), h.xmin_age,
				coalesce(@extschema@.pg_contention_duration(h.held_for), '-'),
				CASE WHEN h.blocks_cleanup THEN 'yes' ELSE 'no' END,
				concat_ws(', ', h.state, nullif(h.application_name, ''),
						  @extschema@.pg_contention_shorten(h.query))), E'\n')
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_horizon LIMIT 10) AS h;
	report := report || E'\n== Holders of the xmin horizon\n'
		|| pg_catalog.format('%-20s %-16s %8s %12s %14s %-7s %s', 'kind', 'holder', 'pid',
							 'xmin age', 'held for', 'blocks', 'state')
		|| E'\n' || coalesce(section, '(none)') || E'\n';

	SELECT pg_catalog.string_agg(pg_catalog.format('%8s %6s %6s %6s %6s %6s %6s %8s %6s %12s %10s %10s',
				pg_catalog.to_char(h.bucket_start, 'HH24:MI:SS'),
				pg_catalog.round(h.avg_active_backends::numeric, 1), h.cpu_samples, h.lwlock_samples,
				h.lock_samples, h.io_samples, h.ipc_samples,
				h.subtrans_slru_samples::numeric + h.subtrans_buffer_samples,
				h.max_overflowed_backends, coalesce(h.subtrans_reader_lookups::text, '-'),
				coalesce(h.xids_assigned::text, '-'),
				coalesce(h.horizon_xid_age::text, '-')),
				E'\n' ORDER BY h.bucket_start)
	  INTO section
	  FROM (SELECT * FROM @extschema@.pg_contention_history
			 ORDER BY bucket_start DESC LIMIT 60) AS h;
	report := report || E'\n== The last 60 seconds (samples per second)\n'
		|| pg_catalog.format('%8s %6s %6s %6s %6s %6s %6s %8s %6s %12s %10s %10s', 'second', 'active',
							 'cpu', 'lwlock', 'lock', 'io', 'ipc', 'subtrans', 'ovfl', 'lookups',
							 'xids', 'xmin age')
		|| E'\n' || coalesce(section, '(no history: is the sampler running?)') || E'\n';
	RETURN report;
END
$$;
