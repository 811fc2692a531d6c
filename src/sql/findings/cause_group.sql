--
-- One finding per cause: an index rule's costliest row of a cause
-- (details.cause, the incidents' key) made into the cause's finding.  One
-- holder's dead entries in a thousand indexes are one line to read: the
-- subject says how many more indexes ("and 999 more indexes", as the
-- incident does) or statements on the one index; the evidence names the
-- next costliest indexes and where every row is listed; the details count
-- the indexes and list them (touched_count, touched: the first ten,
-- costliest first, as the worker keeps them) and the statements.
--
-- The rules call it for a cause of more than one row only; with one row,
-- or NULL counts, the row is returned as it is.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_cause_group(
	row_subject text,
	row_evidence text,
	row_details jsonb,
	indexes bigint,
	statements bigint,
	databases bigint,
	touched text[],
	next_worst text[],
	OUT subject text,
	OUT evidence text,
	OUT details jsonb
)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT $1 || CASE WHEN $4 > 1
				  THEN ' (and ' || ($4 - 1) || ' more ' || CASE WHEN $4 = 2 THEN 'index' ELSE 'indexes' END || ')'
				  WHEN $5 > 1
				  THEN ' (and ' || ($5 - 1) || ' more ' || CASE WHEN $5 = 2 THEN 'statement' ELSE 'statements' END || ' on it)'
				  ELSE '' END,
	   $2 || CASE WHEN $4 > 1
				  THEN ' The same cause touches ' || pg_catalog.to_char($4, 'FM999,999,999,990') || ' indexes'
					   || CASE WHEN $6 > 1 THEN ' in ' || $6 || ' databases' ELSE '' END
					   || coalesce('; the next costliest: ' || pg_catalog.array_to_string($8, ', '), '')
					   || '; every one in pg_contention_index_findings.'
				  WHEN $5 > 1
				  THEN ' ' || ($5 - 1) || ' other ' || CASE WHEN $5 = 2 THEN 'statement visits' ELSE 'statements visit' END
					   || ' the same index: every one in pg_contention_index_findings.'
				  ELSE '' END,
	   CASE WHEN $5 > 1
			THEN $3 || pg_catalog.jsonb_build_object('touched_count', $4, 'touched', pg_catalog.to_jsonb($7), 'statements', $5)
			ELSE $3 END
$$;
