--
-- The findings as the incidents worker last evaluated them, when that is
-- the caller's own answer, else evaluated now (1.4): what
-- pg_contention check reads.  A new session plans every rule before it
-- evaluates them; the worker has already done both.  The worker's rows are
-- used when they are at most two pg_contention.incident_interval old, come
-- from this database, the caller has pg_read_all_stats (it sees every
-- text the worker saw) and every setting a finding depends on (the
-- thresholds, the window, search_path, the time zone and styles) has the
-- same value for the caller as for the worker.  evaluated_at says when
-- the rows were evaluated, by either.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_findings_kept(
	OUT evaluated_at timestamp with time zone,
	OUT problem text,
	OUT severity text,
	OUT subject text,
	OUT evidence text,
	OUT advice text,
	OUT details jsonb,
	OUT since timestamp with time zone
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_findings_kept'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE OR REPLACE FUNCTION @extschema@.pg_contention_findings_latest(
	OUT evaluated_at timestamp with time zone,
	OUT problem text,
	OUT severity text,
	OUT subject text,
	OUT evidence text,
	OUT advice text,
	OUT details jsonb,
	OUT since timestamp with time zone
)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
	kept record;
	any_kept boolean := false;
BEGIN
	-- No row: the worker's evaluation is not this caller's answer.  One
	-- row of NULLs: it found nothing.
	FOR kept IN SELECT * FROM @extschema@.pg_contention_findings_kept() LOOP
		any_kept := true;
		IF kept.problem IS NOT NULL THEN
			evaluated_at := kept.evaluated_at;
			problem := kept.problem;
			severity := kept.severity;
			subject := kept.subject;
			evidence := kept.evidence;
			advice := kept.advice;
			details := kept.details;
			since := kept.since;
			RETURN NEXT;
		END IF;
	END LOOP;
	IF NOT any_kept THEN
		RETURN QUERY
			SELECT pg_catalog.clock_timestamp(), f.problem, f.severity, f.subject,
				   f.evidence, f.advice, f.details, f.since
			  FROM @extschema@.pg_contention_findings(NULL::pg_catalog.interval) AS f;
	END IF;
END
$$;
