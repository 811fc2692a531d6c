--
-- Incidents (1.4): what an incident freezes at its open and at its peak
-- besides the finding itself: the statements it names, its culprits'
-- first, then those that paid (else the busiest, not pg_contention's own), the oldest horizon holders (not the client's
-- own snapshot; each with its role, by which pg_contention_incidents masks
-- it for a reader), and the history of the 60 seconds before, oldest
-- first; at most max_bytes of JSON text: history rows are dropped
-- oldest first, then statements and holders beyond the first, and
-- "truncated" says so.  Called by the incidents worker, and by nobody
-- else: not executable by PUBLIC (it reads every role's statements
-- unmasked, as the superuser the worker is).  STRICT: without a problem,
-- details or a bound there is nothing to freeze (and no bound to stop at).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_incident_evidence(
	problem text,
	details jsonb,
	max_bytes integer
)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	ids numeric[];
	culprit_ids numeric[];
	statements jsonb;
	holders jsonb;
	history jsonb;
	doc jsonb;
	truncated boolean := false;
	n integer;
BEGIN
	-- The query ids the finding names, wherever its rule put them; of
	-- those, the culprits' (a statement that overflowed, not one that paid
	-- for it), which come first whatever the payers' buffers.
	SELECT pg_catalog.array_agg(DISTINCT v.value::text::numeric),
		   pg_catalog.array_agg(DISTINCT v.value::text::numeric) FILTER (WHERE v.culprit)
	  INTO ids, culprit_ids
	  FROM (SELECT details -> 'query_id' AS value, true AS culprit
			UNION ALL
			SELECT e.value, k.key <> 'victim_query_ids'
			  FROM pg_catalog.jsonb_each(details) AS k,
				   pg_catalog.jsonb_array_elements(
					   CASE WHEN pg_catalog.jsonb_typeof(k.value) = 'array'
								 AND k.key IN ('query_ids', 'victim_query_ids', 'culprit_query_ids')
							THEN k.value ELSE '[]' END) AS e) AS v
	 WHERE pg_catalog.jsonb_typeof(v.value) = 'number';

	SELECT coalesce(jsonb_agg(pg_catalog.jsonb_build_object(
			   'query_id', s.query_id, 'query', s.query, 'calls', s.calls, 'rows', s.rows,
			   'shared_blks_hit', s.shared_blks_hit, 'shared_blks_read', s.shared_blks_read,
			   'blks_per_row', s.blks_per_row, 'suboverflowed_calls', s.suboverflowed_calls,
			   'subtrans_wait_samples', s.subtrans_wait_samples, 'userid', s.userid)
			   ORDER BY s.culprit DESC, s.named DESC, s.weight DESC), '[]')
	  INTO statements
	  FROM (SELECT st.*, st.query_id::numeric = ANY (coalesce(ids, '{}')) AS named,
				   st.query_id::numeric = ANY (coalesce(culprit_ids, '{}')) AS culprit,
				   st.shared_blks_hit + st.shared_blks_read + st.suboverflowed_calls AS weight
			  FROM @extschema@.pg_contention_statements AS st
			 -- Not pg_contention's own (the client's, the workers', its
			 -- functions'), which are busy while the findings are read,
			 -- unless the finding names them.
			 WHERE st.query_id::numeric = ANY (coalesce(ids, '{}'))
				OR (st.application_name IS DISTINCT FROM 'pg_contention'
					AND coalesce(st.application_name, '') NOT LIKE 'pg\_contention %'
					AND pg_catalog.strpos(st.query, 'pg_contention') = 0)
			 ORDER BY st.query_id::numeric = ANY (coalesce(culprit_ids, '{}')) DESC,
					  st.query_id::numeric = ANY (coalesce(ids, '{}')) DESC,
					  st.shared_blks_hit + st.shared_blks_read + st.suboverflowed_calls DESC
			 LIMIT 5) AS s;

	-- The holder the finding names (an index finding's, or the holder's
	-- own) holds the cleanup of what the finding is about, whatever its
	-- age against horizon_min_age: marked so, as the advice says.
	SELECT coalesce(jsonb_agg(pg_catalog.jsonb_build_object(
			   'kind', h.kind, 'holder', h.holder, 'pid', h.pid, 'xmin_age', h.xmin_age,
			   'held_for', pg_catalog.round(pg_catalog.date_part('epoch', h.held_for)::numeric, 1),
			   'blocks_cleanup', h.blocks_cleanup OR h.named,
			   'named_by_finding', h.named,
			   'state', h.state,
			   'application_name', h.application_name, 'query', h.query,
			   -- whose it is: the view masks its query and state by it
			   'userid', (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = h.usename))
			   ORDER BY h.xmin_age DESC NULLS LAST), '[]')
	  INTO holders
	  FROM (SELECT x.*,
				   (x.kind, x.holder) IS NOT DISTINCT FROM
				   (coalesce(details #>> '{holder,kind}', details ->> 'kind'),
					coalesce(details #>> '{holder,holder}', details ->> 'holder')) AS named
			  FROM @extschema@.pg_contention_horizon AS x
			 -- Not the client's own short snapshot (check, top, report):
			 -- a session of that name that holds cleanup back stays.
			 WHERE x.application_name IS DISTINCT FROM 'pg_contention' OR x.blocks_cleanup
			 ORDER BY x.xmin_age DESC NULLS LAST LIMIT 5) AS h;

	SELECT coalesce(jsonb_agg(pg_catalog.to_jsonb(b) ORDER BY b.bucket_start), '[]')
	  INTO history
	  FROM @extschema@.pg_contention_history AS b
	 WHERE b.bucket_start >= pg_catalog.now() - interval '60 s';

	LOOP
		doc := pg_catalog.jsonb_build_object('statements', statements, 'holders', holders,
											 'history', history, 'truncated', truncated);
		EXIT WHEN pg_catalog.octet_length(doc::text) <= max_bytes;
		truncated := true;
		n := pg_catalog.jsonb_array_length(history);
		IF n > 0 THEN
			-- The oldest rows first, in steps of a sixth of what is left.
			history := (SELECT coalesce(jsonb_agg(e.value ORDER BY e.i), '[]')
						  FROM pg_catalog.jsonb_array_elements(history) WITH ORDINALITY AS e(value, i)
						 WHERE e.i > greatest(n / 6, 1));
		ELSIF pg_catalog.jsonb_array_length(statements) > 1 OR pg_catalog.jsonb_array_length(holders) > 1 THEN
			statements := coalesce(statements -> 0, 'null') || '[]'::jsonb;
			holders := coalesce(holders -> 0, 'null') || '[]'::jsonb;
			statements := (SELECT coalesce(jsonb_agg(e), '[]') FROM pg_catalog.jsonb_array_elements(statements) AS e WHERE e <> 'null');
			holders := (SELECT coalesce(jsonb_agg(e), '[]') FROM pg_catalog.jsonb_array_elements(holders) AS e WHERE e <> 'null');
		ELSE
			statements := '[]';
			holders := '[]';
			IF pg_catalog.octet_length(pg_catalog.jsonb_build_object('statements', statements, 'holders', holders,
											 'history', history, 'truncated', true)::text) > max_bytes THEN
				RETURN NULL;
			END IF;
		END IF;
	END LOOP;
	RETURN doc;
END
$$;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_incident_evidence(text, jsonb, integer) FROM PUBLIC;
