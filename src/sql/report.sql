--
-- A plain-text report for pasting into a ticket: the findings, then the
-- top statements and indexes by cost, the horizon holders, and the last
-- minutes of history second by second.
--
-- With incident => N, the report of that one incident instead, built only
-- from what pg_contention_incidents froze (its evidence at open, at the
-- peak and at close, the statements, holders and history seconds before
-- the peak): it reads as it did then, whatever the stores hold now.  1.4
-- adds the arguments (src/sql/updates/1.3--1.4.sql drops the 1.3
-- signature); pg_contention_report('5 min') still means the window.
--
-- A report is attached to a ticket: by default every statement in it is
-- normalized (constants as $1, $2, ...), the holders' too, and the
-- findings leave out the constants of their worst execution.  with_values
-- => true shows the texts as the views give them to this reader (masked
-- where the reader may not see them, whichever way).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_report(window_length interval DEFAULT NULL,
															 incident bigint DEFAULT NULL,
															 with_values boolean DEFAULT false)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	report text;
	section text;
	n integer;
	w_s integer;
	inc record;
	doc jsonb;
BEGIN
	IF incident IS NOT NULL THEN
		IF window_length IS NOT NULL THEN
			RAISE EXCEPTION 'window_length and incident cannot be given together'
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'An incident''s report covers the incident: give one of them.';
		END IF;
		-- (Its argument 0 would be every incident: no id is 0 or below.)
		SELECT * INTO inc
		  FROM @extschema@.pg_contention_incidents(true, (CASE WHEN incident > 0 THEN incident ELSE -1 END)::pg_catalog.int8) AS x
		 WHERE x.id = incident;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'no incident %', incident
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'SELECT id FROM pg_contention_incidents lists them.';
		END IF;
		-- The frozen document, as this reader may see it ("masked": true
		-- without pg_read_all_stats).
		doc := coalesce(inc.details, '{}');

		report := pg_catalog.format(E'pg_contention incident %s, reported at %s\nPostgreSQL %s, %s\n',
			inc.id, pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ'),
			pg_catalog.current_setting('server_version'),
			CASE WHEN pg_catalog.pg_is_in_recovery() THEN 'hot standby' ELSE 'primary' END);
		IF coalesce(doc->>'masked', '') = 'true' THEN
			report := report || E'\nThe texts are masked: reading them takes pg_read_all_stats; of the '
				|| E'frozen statements and holders, those of your own role are shown.\n';
		END IF;
		report := report || pg_catalog.format(E'\n[%s] %s: %s\n',
			inc.peak_severity, inc.problem, inc.subject);
		-- The peak is the evaluation that first saw the top severity, whose
		-- figures it froze: not the largest figures, which can come later.
		report := report || pg_catalog.format(E'Opened:     %s (%s)\nPeak:       %s (%s, first reached then; its figures are frozen as of then)\n',
			coalesce(pg_catalog.to_char(inc.opened, 'YYYY-MM-DD HH24:MI:SS TZ'), 'unknown'),
			coalesce(doc #>> '{opened,severity}', 'warning'),
			coalesce(pg_catalog.to_char(inc.peak, 'YYYY-MM-DD HH24:MI:SS TZ'), 'unknown'),
			inc.peak_severity);
		IF inc.closed IS NOT NULL THEN
			report := report || pg_catalog.format(E'Closed:     %s\nDuration:   %s\nResolution: %s\n',
				pg_catalog.to_char(inc.closed, 'YYYY-MM-DD HH24:MI:SS TZ'),
				coalesce(@extschema@.pg_contention_duration(inc.closed - inc.opened), 'unknown'),
				coalesce(inc.resolution, 'not known: the server could not tell what ended it'));
		ELSE
			report := report || pg_catalog.format(E'Closed:     no, still open (severity now %s, last seen %s)\nDuration:   %s so far\n',
				coalesce(inc.severity, 'unknown'),
				coalesce(pg_catalog.to_char(inc.last_seen, 'YYYY-MM-DD HH24:MI:SS TZ'), 'unknown'),
				coalesce(@extschema@.pg_contention_duration(pg_catalog.clock_timestamp() - inc.opened), 'unknown'));
		END IF;
		-- The server's starts while it was open (the latest few kept).
		IF coalesce((doc ->> 'restart_count')::integer, 0) > 0 THEN
			report := report || pg_catalog.format(E'Restarts:   %s while it was open: %s%s\n',
				doc ->> 'restart_count',
				(SELECT pg_catalog.string_agg(pg_catalog.to_char((r.value #>> '{}')::pg_catalog.timestamptz,
												'YYYY-MM-DD HH24:MI:SS TZ'), ', ' ORDER BY r.n)
				   FROM pg_catalog.jsonb_array_elements(doc -> 'restarts') WITH ORDINALITY AS r(value, n)),
				CASE WHEN (doc ->> 'restart_count')::integer > pg_catalog.jsonb_array_length(doc -> 'restarts')
					 THEN ' (the latest; the earlier ones'' times are not kept)' ELSE '' END);
		END IF;

		report := report || pg_catalog.format(E'\n== At open (%s, %s)\n%s\n%s\n',
			coalesce(doc #>> '{opened,severity}', 'warning'),
			coalesce(pg_catalog.to_char(inc.opened, 'YYYY-MM-DD HH24:MI:SS'), 'unknown'),
			coalesce(doc #>> '{opened,subject}', inc.subject),
			coalesce(CASE WHEN with_values THEN doc #>> '{opened,evidence}'
						  ELSE @extschema@.pg_contention_without_values(doc #>> '{opened,evidence}', doc -> 'finding') END,
					 '(not kept)'));
		report := report || pg_catalog.format(E'\n== At the peak (%s, first reached at %s; the figures as of then)\n%s\n%s\nAdvice: %s\n',
			inc.peak_severity,
			coalesce(pg_catalog.to_char(inc.peak, 'YYYY-MM-DD HH24:MI:SS'), 'unknown'),
			inc.subject,
			CASE WHEN with_values THEN inc.evidence
				 ELSE @extschema@.pg_contention_without_values(inc.evidence, doc -> 'finding') END,
			inc.advice);
		report := report || E'\n== At close\n' || CASE
			WHEN inc.closed IS NULL THEN E'(still open)\n'
			ELSE pg_catalog.format(E'%s\nLast evidence seen: %s\n',
				pg_catalog.to_char(inc.closed, 'YYYY-MM-DD HH24:MI:SS'),
				coalesce(CASE WHEN with_values THEN doc #>> '{closed,evidence}'
							  ELSE @extschema@.pg_contention_without_values(doc #>> '{closed,evidence}', doc -> 'finding') END,
						 '(not kept)'))
		END;

		-- The frozen rows, printed as the live report prints the views.
		SELECT pg_catalog.string_agg(pg_catalog.format('%10s %12s %10s %12s %8s  %s',
					coalesce(e->>'calls', '-'), coalesce(e->>'rows', '-'),
					coalesce(pg_catalog.round((e->>'blks_per_row')::numeric, 1)::text, '-'),
					coalesce(e->>'suboverflowed_calls', '-'), coalesce(e->>'subtrans_wait_samples', '-'),
					coalesce(@extschema@.pg_contention_shorten(e->>'query'), '-')), E'\n' ORDER BY o)
		  INTO section
		  FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(doc->'statements') = 'array'
						THEN doc->'statements' ELSE '[]' END) WITH ORDINALITY AS x(e, o);
		report := report || E'\n== Top statements at the peak\n'
			|| pg_catalog.format('%10s %12s %10s %12s %8s  %s', 'calls', 'rows', 'blks/row',
								 'suboverflow', 'subtrans', 'statement')
			|| E'\n' || coalesce(section, '(none)') || E'\n';

		SELECT pg_catalog.string_agg(pg_catalog.format('%-20s %-16s %8s %12s %14s %-7s %s',
					coalesce(e->>'kind', '-'), coalesce(e->>'holder', '-'), coalesce(e->>'pid', '-'),
					coalesce(e->>'xmin_age', '-'),
					coalesce(@extschema@.pg_contention_duration(pg_catalog.make_interval(
						secs => (e->>'held_for')::double precision)), '-'),
					CASE (e->>'blocks_cleanup')::boolean WHEN true THEN 'yes' WHEN false THEN 'no' ELSE '-' END,
					concat_ws(', ', e->>'state', nullif(e->>'application_name', ''),
							  @extschema@.pg_contention_shorten(CASE WHEN with_values THEN e->>'query'
								  ELSE @extschema@.pg_contention_normalize(e->>'query') END))), E'\n' ORDER BY o)
		  INTO section
		  FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(doc->'holders') = 'array'
						THEN doc->'holders' ELSE '[]' END) WITH ORDINALITY AS x(e, o);
		report := report || E'\n== Holders of the xmin horizon at the peak\n'
			|| pg_catalog.format('%-20s %-16s %8s %12s %14s %-7s %s', 'kind', 'holder', 'pid',
								 'xmin age', 'held for', 'blocks', 'state')
			|| E'\n' || coalesce(section, '(none)') || E'\n';

		SELECT count(*), pg_catalog.string_agg(pg_catalog.format('%8s %6s %6s %6s %6s %6s %6s %8s %6s %12s %10s %10s',
					coalesce(pg_catalog.to_char((e->>'bucket_start')::timestamptz, 'HH24:MI:SS'), '-'),
					coalesce(pg_catalog.round((e->>'avg_active_backends')::numeric, 1)::text, '-'),
					coalesce(e->>'cpu_samples', '-'), coalesce(e->>'lwlock_samples', '-'),
					coalesce(e->>'lock_samples', '-'), coalesce(e->>'io_samples', '-'),
					coalesce(e->>'ipc_samples', '-'),
					coalesce((e->>'subtrans_slru_samples')::numeric, 0)
						+ coalesce((e->>'subtrans_buffer_samples')::numeric, 0),
					coalesce(e->>'max_overflowed_backends', '-'),
					coalesce(e->>'subtrans_reader_lookups', '-'),
					coalesce(e->>'xids_assigned', '-'), coalesce(e->>'horizon_xid_age', '-')),
					E'\n' ORDER BY (e->>'bucket_start')::timestamptz, o)
		  INTO n, section
		  FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(doc->'history') = 'array'
						THEN doc->'history' ELSE '[]' END) WITH ORDINALITY AS x(e, o);
		report := report || pg_catalog.format(E'\n== The %s seconds before the peak (samples per second)\n', n)
			|| pg_catalog.format('%8s %6s %6s %6s %6s %6s %6s %8s %6s %12s %10s %10s', 'second', 'active',
								 'cpu', 'lwlock', 'lock', 'io', 'ipc', 'subtrans', 'ovfl', 'lookups',
								 'xids', 'xmin age')
			|| E'\n' || coalesce(section, '(none kept)') || E'\n';
		IF (doc->>'truncated')::boolean THEN
			report := report || E'\n(Truncated: the frozen evidence was larger than an incident may keep; '
				|| E'the oldest history seconds, then the statements and holders after the first, were left out.)\n';
		END IF;
		IF (doc->>'unavailable')::boolean THEN
			report := report || E'\n(Unavailable: the statements, holders and history could not be frozen '
				|| E'when the incident opened; the server log says why.)\n';
		END IF;
		RETURN report;
	END IF;

	-- The window, checked as the findings check it, before anything is read.
	SELECT p.w_s INTO w_s FROM @extschema@.pg_contention_findings_params(window_length) AS p;
	report := pg_catalog.format(E'pg_contention report at %s\nPostgreSQL %s, %s, findings window %s\n',
		pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ'),
		pg_catalog.current_setting('server_version'),
		CASE WHEN pg_catalog.pg_is_in_recovery() THEN 'hot standby' ELSE 'primary' END,
		@extschema@.pg_contention_duration(pg_catalog.make_interval(secs => w_s)));

	SELECT count(*),
		   pg_catalog.string_agg(pg_catalog.format(E'%s. [%s] %s: %s\n   %s\n   Advice: %s\n   Since: %s',
				f.n, f.severity, f.problem, f.subject,
				CASE WHEN with_values THEN f.evidence
					 ELSE @extschema@.pg_contention_without_values(f.evidence, f.details) END,
				f.advice,
				coalesce(pg_catalog.to_char(f.since, 'YYYY-MM-DD HH24:MI:SS'), 'unknown')), E'\n' ORDER BY f.n)
	  INTO n, section
	  FROM (SELECT pg_catalog.row_number() OVER () AS n, x.*
			  FROM @extschema@.pg_contention_findings(window_length) AS x) AS f;
	report := report || pg_catalog.format(E'\n== Findings (%s)\n%s\n', n,
		coalesce(section, 'None: nothing pg_contention checks for is wrong now.'));

	-- What the server itself opened an incident for, each with the
	-- command for its frozen report (texts masked as the view masks them).
	SELECT count(*),
		   pg_catalog.string_agg(pg_catalog.format(E'%s. [%s] %s: %s\n   Opened %s, last seen at warning or above %s; its report: pg_contention report --incident=%s',
				i.id, i.severity, i.problem, i.subject,
				pg_catalog.to_char(i.opened, 'YYYY-MM-DD HH24:MI:SS'),
				pg_catalog.to_char(i.last_seen, 'YYYY-MM-DD HH24:MI:SS'), i.id), E'\n' ORDER BY i.opened, i.id)
	  INTO n, section
	  FROM @extschema@.pg_contention_incidents(false, 0::pg_catalog.int8) AS i
	 WHERE i.closed IS NULL;
	report := report || pg_catalog.format(E'\n== Open incidents (%s)\n%s\n', n,
		coalesce(section, 'None: the server has no incident open.'));

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
	  FROM (SELECT * FROM @extschema@.pg_contention_index_scans_view(true)
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
						  @extschema@.pg_contention_shorten(CASE WHEN with_values THEN h.query
							  ELSE @extschema@.pg_contention_normalize(h.query) END))), E'\n')
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
