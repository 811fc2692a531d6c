--
-- Incidents (1.4): the subject key an incident is matched on, from a
-- finding's details (its subject text changes with its figures, the key
-- does not): one statement pattern, one index, one holder.  And the
-- culprit role the finding names, if any, whose members may read the
-- incident's texts.  Called by the incidents worker for each finding.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_incident_key(
	problem text,
	details jsonb,
	OUT key text,
	OUT culprit oid
)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT CASE problem
		   -- The culprit statement pattern: its database, user and query
		   -- ids (the smallest, stable while others join); a session
		   -- overflowed without an event in the window: its pid.  On a
		   -- standby: the primary's, one incident.
		   WHEN 'subxact_overflow' THEN
			   CASE WHEN details ? 'database_oid'
					THEN 'database ' || coalesce(details ->> 'database_oid', '?')
						 || ' user ' || coalesce(details ->> 'user_oid', '?')
						 || coalesce(' query id ' || (SELECT min(q.value::text::numeric)::text
														FROM pg_catalog.jsonb_array_elements(
																 CASE WHEN pg_catalog.jsonb_typeof(details -> 'query_ids') = 'array'
																	  THEN details -> 'query_ids' END) AS q
													   WHERE pg_catalog.jsonb_typeof(q.value) = 'number'),
									 ' query id ' || (details ->> 'query_id'),
									 ' pid ' || (details -> 'pids' ->> 0), '')
					ELSE 'the primary' END
		   WHEN 'subxact_near_overflow' THEN
			   'database ' || coalesce(details ->> 'database_oid', '?')
			   || ' user ' || coalesce(details ->> 'user_oid', '?')
		   -- One index.
		   WHEN 'dead_tuple_index_scan' THEN
			   'database ' || coalesce(details ->> 'database_oid', '?')
			   || ' index ' || coalesce(details ->> 'indexrelid', '?')
		   WHEN 'hot_chain_scan' THEN
			   'database ' || coalesce(details ->> 'database_oid', '?')
			   || ' index ' || coalesce(details ->> 'indexrelid', '?')
		   -- One holder: a backend's pid, a slot's name, a prepared
		   -- transaction's gid, a standby's walsender.
		   WHEN 'xmin_horizon_held' THEN
			   coalesce(details ->> 'kind', '?') || ' ' || coalesce(details ->> 'holder', '?')
		   -- Cluster-wide: one at a time.
		   ELSE 'cluster' END,
	   CASE WHEN problem IN ('subxact_overflow', 'subxact_near_overflow')
				 AND pg_catalog.jsonb_typeof(details -> 'user_oid') = 'number'
			THEN (details ->> 'user_oid')::oid
			WHEN problem = 'xmin_horizon_held' AND details ->> 'kind' = 'backend'
				 AND pg_catalog.jsonb_typeof(details -> 'pid') = 'number'
			THEN (SELECT a.usesysid FROM pg_catalog.pg_stat_activity AS a
				   WHERE a.pid = (details ->> 'pid')::integer)
			WHEN problem = 'xmin_horizon_held' AND details ->> 'kind' = 'prepared transaction'
			THEN (SELECT r.oid FROM pg_catalog.pg_prepared_xacts AS p
					JOIN pg_catalog.pg_roles AS r ON r.rolname = p.owner
				   WHERE p.gid = details ->> 'holder')
	   END
$$;
