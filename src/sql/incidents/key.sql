--
-- Incidents (1.4): the subject key an incident is matched on, from a
-- finding's details (its subject text changes with its figures, the key
-- does not): one transaction pattern (database and user), one index,
-- one holder.  And the culprit role the finding names, if any (kept with
-- the incident; it grants no reading); and the details as an incident
-- keeps them (finding): whole up to 3,800 bytes, else with each array but
-- the pids cut to its first 10 elements and "truncated": true (lists of
-- query ids grow with the workload, and on PostgreSQL 13 hold one id per
-- text).  Called by the incidents worker for each finding, and by nobody
-- else: not executable by PUBLIC.
--
-- cause_gone: the finding is about overflows whose sessions have all
-- ended (no pid it names is in pg_stat_activity): it stays in the findings
-- while their window covers it, but what it describes is over, so the
-- worker closes its incident (incident_close_after later) rather than
-- keeping it open for the window.  False whenever it cannot tell (no
-- pids: a standby, a damaged file); a reused pid keeps it false too.
--
-- touched: what the finding is about within its key, when several
-- findings share one (the indexes of one holder's dead entries).
--
-- One row, declared as a set of rows.  PL/pgSQL, not SQL: its search_path
-- is pinned, as every function of the extension's is, so a SQL function
-- would not be inlined and would be parsed and planned again at every
-- evaluation; PL/pgSQL plans it once for the worker's session.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_incident_key(
	problem text,
	details jsonb,
	OUT key text,
	OUT culprit oid,
	OUT finding jsonb,
	OUT cause_gone boolean,
	OUT touched text
)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
ROWS 1
AS $$
BEGIN
RETURN QUERY
SELECT CASE problem
		   -- The culprit's transaction pattern, as subxact_near_overflow
		   -- groups it: its database and user.  Not its query ids: their
		   -- set changes as its statements come and go (and on
		   -- PostgreSQL 13 one statement has an id per text).  On a
		   -- standby: the primary's, one incident.
		   WHEN 'subxact_overflow' THEN
			   CASE WHEN details ? 'database_oid'
					THEN 'database ' || coalesce(details ->> 'database_oid', '?')
						 || ' user ' || coalesce(details ->> 'user_oid', '?')
					ELSE 'the primary' END
		   WHEN 'subxact_near_overflow' THEN
			   'database ' || coalesce(details ->> 'database_oid', '?')
			   || ' user ' || coalesce(details ->> 'user_oid', '?')
		   -- The cause the rule names (details.cause), which
		   -- pg_contention_findings groups the indexes by: the holder
		   -- behind the dead entries while one holds them (one incident,
		   -- whatever the number of indexes it touches); one role's
		   -- temporary indexes in one database; else one index.
		   WHEN 'dead_tuple_index_scan' THEN
			   coalesce(details ->> 'cause', 'database ' || coalesce(details ->> 'database_oid', '?')
											 || ' index ' || coalesce(details ->> 'indexrelid', '?'))
		   WHEN 'hot_chain_scan' THEN
			   coalesce(details ->> 'cause', 'database ' || coalesce(details ->> 'database_oid', '?')
											 || ' index ' || coalesce(details ->> 'indexrelid', '?'))
		   -- One holder: a backend's pid, a slot's name, a prepared
		   -- transaction's gid, a standby's walsender.
		   WHEN 'xmin_horizon_held' THEN
			   coalesce(details ->> 'kind', '?') || ' ' || coalesce(details ->> 'holder', '?')
		   -- Cluster-wide: one at a time.
		   ELSE 'cluster' END,
	   -- The role the finding names: the overflowing user; the holder's
	   -- (its session's user, or its prepared transaction's owner), for
	   -- the horizon and for the dead entries it keeps; the owner of the
	   -- index whose dead entries no holder explains, so that one role's
	   -- tables cannot take every slot from another's (a full store
	   -- shares its slots by role).
	   CASE WHEN problem IN ('subxact_overflow', 'subxact_near_overflow')
				 AND pg_catalog.jsonb_typeof(details -> 'user_oid') = 'number'
			THEN (details ->> 'user_oid')::oid
			WHEN problem IN ('dead_tuple_index_scan', 'hot_chain_scan')
				 AND pg_catalog.jsonb_typeof(details -> 'holder') IS DISTINCT FROM 'object'
				 AND pg_catalog.jsonb_typeof(details -> 'owner_oid') = 'number'
			THEN (details ->> 'owner_oid')::oid
			ELSE (SELECT CASE WHEN h.h ->> 'kind' = 'backend'
								   AND pg_catalog.jsonb_typeof(h.h -> 'pid') = 'number'
							  THEN (SELECT a.usesysid FROM pg_catalog.pg_stat_activity AS a
									 WHERE a.pid = (h.h ->> 'pid')::integer)
							  WHEN h.h ->> 'kind' = 'prepared transaction'
							  THEN (SELECT r.oid FROM pg_catalog.pg_prepared_xacts AS p
									  JOIN pg_catalog.pg_roles AS r ON r.rolname = p.owner
									 WHERE p.gid = h.h ->> 'holder') END
					FROM (SELECT CASE WHEN problem = 'xmin_horizon_held' THEN details
									  WHEN problem IN ('dead_tuple_index_scan', 'hot_chain_scan')
										   AND pg_catalog.jsonb_typeof(details -> 'holder') = 'object'
									  THEN details -> 'holder' END AS h) AS h)
	   END,
	   CASE WHEN pg_catalog.octet_length(details::text) <= 3800 THEN details
			ELSE (SELECT pg_catalog.jsonb_object_agg(
							 k.key,
							 -- the pids are kept whole: the resolution asks
							 -- whether every one of them ended
							 CASE WHEN pg_catalog.jsonb_typeof(k.value) = 'array'
									   AND k.key NOT IN ('pids', 'culprit_pids', 'alive_pids', 'earlier_run_pids')
									   AND pg_catalog.jsonb_array_length(k.value) > 10
								  THEN (SELECT pg_catalog.jsonb_agg(e.value ORDER BY e.i)
										  FROM pg_catalog.jsonb_array_elements(k.value)
											   WITH ORDINALITY AS e(value, i)
										 WHERE e.i <= 10)
								  ELSE k.value END)
					FROM pg_catalog.jsonb_each(details) AS k)
				 || '{"truncated": true}'::jsonb
	   END,
	   problem IN ('subxact_overflow', 'subtrans_slru_contention')
	   AND coalesce((SELECT count(*) > 0
							AND bool_and(a.pid IS NULL AND pg_catalog.jsonb_typeof(e.value) = 'number')
					   FROM pg_catalog.jsonb_array_elements(
								CASE WHEN pg_catalog.jsonb_typeof(details -> 'pids') = 'array'
									 THEN details -> 'pids'
									 WHEN pg_catalog.jsonb_typeof(details -> 'culprit_pids') = 'array'
									 THEN details -> 'culprit_pids'
									 ELSE '[]' END) AS e
							LEFT JOIN pg_catalog.pg_stat_activity AS a
								   ON pg_catalog.jsonb_typeof(e.value) = 'number'
								  AND a.pid = (e.value #>> '{}')::integer), false),
	   -- What this finding touched, for an incident that several share
	   -- (one holder's dead entries in many indexes): its index.
	   CASE WHEN problem IN ('dead_tuple_index_scan', 'hot_chain_scan')
			THEN 'database ' || coalesce(details ->> 'database_oid', '?')
				 || ' index ' || coalesce(details ->> 'indexrelid', '?') END;
END
$$;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_incident_key(text, jsonb) FROM PUBLIC;
