--
-- Incidents (1.4): what ended an incident, as far as the server can tell
-- when it closes, from the details of the findings it was last seen with
-- (a JSON array, from the worker's memory) or of the finding at its peak,
-- and what is there now: the holder's session or transaction ended, the slot was
-- dropped, the prepared transaction finished, the overflowing sessions
-- ended, the index's dead entries are no longer visited,
-- old_snapshot_threshold was turned off.  NULL when it cannot tell (the
-- finding went below its threshold for another reason, or its window
-- passed): never a guess.  seen_at is when the details were seen (the
-- incident's opening for its peak's, its last seen for the memory's): a
-- session or transaction started after it is another, with a reused pid.
-- index_states: the state of each index of this evaluation's
-- dead_tuple_index_scan findings (a JSON array of {database_oid,
-- indexrelid, state}, from the worker's read of the findings): whether its
-- lookups still visit dead entries, were vacuumed or the index dropped,
-- without evaluating the rule again.
-- Called by the incidents worker, and by nobody else: not executable by
-- PUBLIC.  STRICT: without a problem, its details or their time there is
-- nothing to tell.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_incident_resolution(
	problem text,
	details jsonb,
	seen_at timestamp with time zone,
	index_states jsonb
)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	kind text := details ->> 'kind';
	holder text := details ->> 'holder';
	holder_pid integer;
	pids integer[];
	alive integer[];
	overflowed integer[];
	state text;
	-- ($1: problem; a column of that name is in the query)
	about_horizon boolean := EXISTS (SELECT 1 FROM @extschema@.pg_contention_problems() AS p
									  WHERE p.problem = $1 AND p.horizon);
BEGIN
	IF pg_catalog.jsonb_typeof(details) = 'array' THEN
		-- The details of every finding of its key it was last seen with
		-- (the worker's memory), the kept one's first: the overflowing
		-- sessions are all of theirs; for the other problems the kept
		-- one's tell.
		IF problem IN ('subxact_overflow', 'subtrans_slru_contention') THEN
			SELECT pg_catalog.jsonb_build_object(
					   'pids', coalesce(pg_catalog.jsonb_agg(DISTINCT p.pid) FILTER (WHERE NOT p.earlier), '[]'),
					   'earlier_run_pids', pg_catalog.jsonb_agg(DISTINCT p.pid) FILTER (WHERE p.earlier),
					   -- a standby's: the primary's oldest transaction then
					   'primary_xid', (SELECT d0.value ->> 'primary_xid' FROM pg_catalog.jsonb_array_elements(details) AS d0
										WHERE d0.value ->> 'primary_xid' IS NOT NULL LIMIT 1),
					   -- the culprit's (database, user): the cause, whatever its sessions
					   'database_oid', (SELECT d0.value -> 'database_oid' FROM pg_catalog.jsonb_array_elements(details) AS d0
										 WHERE pg_catalog.jsonb_typeof(d0.value -> 'database_oid') = 'number' LIMIT 1),
					   'user_oid', (SELECT d0.value -> 'user_oid' FROM pg_catalog.jsonb_array_elements(details) AS d0
									 WHERE pg_catalog.jsonb_typeof(d0.value -> 'user_oid') = 'number' LIMIT 1))
			  INTO details
			  FROM pg_catalog.jsonb_array_elements(details) AS d
			  CROSS JOIN LATERAL (
					SELECT e.value AS pid, false AS earlier
					  FROM pg_catalog.jsonb_array_elements(
							   -- Those alive then, if any were; else every one it names.
							   CASE WHEN pg_catalog.jsonb_typeof(d.value -> 'alive_pids') = 'array'
										 AND pg_catalog.jsonb_array_length(d.value -> 'alive_pids') > 0
									THEN d.value -> 'alive_pids'
									WHEN pg_catalog.jsonb_typeof(d.value -> 'pids') = 'array' THEN d.value -> 'pids'
									WHEN pg_catalog.jsonb_typeof(d.value -> 'culprit_pids') = 'array' THEN d.value -> 'culprit_pids'
									ELSE '[]' END) AS e
					UNION ALL
					SELECT e.value, true
					  FROM pg_catalog.jsonb_array_elements(
							   CASE WHEN pg_catalog.jsonb_typeof(d.value -> 'earlier_run_pids') = 'array'
									THEN d.value -> 'earlier_run_pids' ELSE '[]' END) AS e) AS p;
		ELSE
			details := coalesce(details -> 0, '{}');
		END IF;
		kind := details ->> 'kind';
		holder := details ->> 'holder';
	END IF;

	IF about_horizon AND pg_catalog.jsonb_typeof(details -> 'holder') = 'object' THEN
		-- The index rules name the holder behind them.
		kind := details -> 'holder' ->> 'kind';
		holder := details -> 'holder' ->> 'holder';
	END IF;

	IF problem = 'dead_tuple_index_scan' THEN
		-- The rule itself says when the index is clean or vacuumed.
		SELECT i.value ->> 'state' INTO state
		  FROM pg_catalog.jsonb_array_elements(
				   CASE WHEN pg_catalog.jsonb_typeof(index_states) = 'array' THEN index_states ELSE '[]' END) AS i
		 WHERE i.value ->> 'indexrelid' = pg_contention_incident_resolution.details ->> 'indexrelid'
		   AND i.value ->> 'database_oid' = pg_contention_incident_resolution.details ->> 'database_oid'
		 LIMIT 1;
		IF state = 'vacuumed' THEN
			RETURN 'vacuum removed the dead entries: the index''s lookups no longer visit them';
		ELSIF state = 'clean' THEN
			RETURN 'the index''s lookups no longer visit dead entries';
		ELSIF state = 'dropped' THEN
			RETURN 'the index was dropped';
		END IF;
	END IF;

	IF about_horizon THEN
		IF kind = 'backend' AND holder ~ '^[0-9]+$' THEN
			holder_pid := holder::integer;
			IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity AS a
							WHERE a.pid = holder_pid AND a.backend_start <= seen_at) THEN
				RETURN 'the holder of the xmin horizon, pid ' || holder_pid || ', ended';
			ELSIF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity AS a
							   WHERE a.pid = holder_pid
								 AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
								 AND a.xact_start <= seen_at) THEN
				RETURN 'the holder of the xmin horizon, pid ' || holder_pid || ', ended its transaction';
			END IF;
		ELSIF kind = 'prepared transaction' THEN
			IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_prepared_xacts AS p WHERE p.gid = holder) THEN
				RETURN 'the prepared transaction ''' || holder || ''' was committed or rolled back';
			END IF;
		ELSIF kind = 'replication slot' THEN
			IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots AS s WHERE s.slot_name = holder) THEN
				RETURN 'the replication slot ' || holder || ' was dropped';
			ELSIF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots AS s
							   WHERE s.slot_name = holder
								 AND (s.xmin::text = details ->> 'xmin' OR s.catalog_xmin::text = details ->> 'xmin')) THEN
				RETURN 'the replication slot ' || holder || ' moved its xmin on';
			END IF;
		ELSIF kind = 'standby feedback' AND pg_catalog.jsonb_typeof(details -> 'pid') = 'number' THEN
			IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity AS a
							WHERE a.pid = (details ->> 'pid')::integer) THEN
				RETURN 'the standby''s walsender, pid ' || (details ->> 'pid') || ', ended';
			ELSIF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_replication AS r
							   WHERE r.pid = (details ->> 'pid')::integer
								 AND r.backend_xmin::text = details ->> 'xmin') THEN
				-- Its xmin stood still while something on the standby held it.
				RETURN 'the standby''s feedback moved its xmin on: what held it there ended';
			END IF;
		ELSIF kind = 'primary transaction' THEN
			IF NOT EXISTS (SELECT 1 FROM @extschema@.pg_contention_horizon AS h
							WHERE h.kind = 'primary transaction' AND h.holder = (details ->> 'holder')) THEN
				RETURN 'the primary''s transaction ' || holder || ' ended';
			END IF;
		END IF;
		RETURN NULL;
	END IF;

	-- A standby's overflow: its snapshots stay suboverflowed while the
	-- primary's oldest transaction then runs.
	IF problem IN ('subxact_overflow', 'subtrans_slru_contention')
	   AND pg_catalog.jsonb_typeof(details -> 'primary_xid') = 'string' THEN
		IF NOT EXISTS (SELECT 1 FROM @extschema@.pg_contention_horizon AS h
						WHERE h.kind = 'primary transaction' AND h.holder = details ->> 'primary_xid') THEN
			RETURN 'the primary''s transaction ' || (details ->> 'primary_xid')
				   || ', the oldest running there when the cost was last seen and the xmin of every snapshot on this standby, ended';
		END IF;
		RETURN 'the readers on this standby stopped looking up pg_subtrans (the primary''s transaction '
			   || (details ->> 'primary_xid') || ' still runs)';
	END IF;

	IF problem IN ('subxact_overflow', 'subtrans_slru_contention') THEN
		SELECT pg_catalog.array_agg(DISTINCT e.value::text::integer) INTO pids
		  FROM pg_catalog.jsonb_array_elements(
				   CASE WHEN pg_catalog.jsonb_typeof(details -> 'pids') = 'array' THEN details -> 'pids'
						WHEN pg_catalog.jsonb_typeof(details -> 'culprit_pids') = 'array' THEN details -> 'culprit_pids'
						ELSE '[]' END) AS e
		 WHERE pg_catalog.jsonb_typeof(e.value) = 'number';
		IF pids IS NULL THEN
			-- Every culprit was a process of an earlier server run.
			IF pg_catalog.jsonb_typeof(details -> 'earlier_run_pids') = 'array' THEN
				RETURN 'the overflowing sessions, of the previous server run, ended with its restart';
			END IF;
			RETURN NULL;
		END IF;
		SELECT pg_catalog.array_agg(a.pid) INTO alive
		  FROM pg_catalog.pg_stat_activity AS a
		 WHERE a.pid = ANY (pids) AND a.backend_start <= seen_at;
		-- The cause is the (database, user)'s statement, not its sessions:
		-- others that overflow now, or have since, carry it on.
		IF pg_catalog.jsonb_typeof(details -> 'database_oid') = 'number'
		   AND pg_catalog.jsonb_typeof(details -> 'user_oid') = 'number' THEN
			SELECT pg_catalog.array_agg(DISTINCT o.pid ORDER BY o.pid) INTO overflowed
			  FROM (SELECT s.pid FROM @extschema@.pg_contention_subxact() AS s
					 WHERE s.subxact_overflowed
					   AND s.datid = (details ->> 'database_oid')::oid AND s.usesysid = (details ->> 'user_oid')::oid
					UNION ALL
					SELECT e.pid FROM @extschema@.pg_contention_overflow_events() AS e
					 WHERE e.event_time > seen_at
					   AND e.datid = (details ->> 'database_oid')::oid AND e.usesysid = (details ->> 'user_oid')::oid
					   -- alive now: a session that overflowed once more and ended is no successor
					   AND EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity AS a WHERE a.pid = e.pid)) AS o
			 -- not the sessions it was seen with: others, that carry it on
			 WHERE o.pid <> ALL (coalesce(pids, '{}'));
			IF overflowed IS NOT NULL THEN
				RETURN 'the cost fell below the warning bar; the same statements go on overflowing in other sessions (pid'
					   || CASE WHEN pg_catalog.cardinality(overflowed) > 1 THEN 's ' ELSE ' ' END
					   || pg_catalog.array_to_string(overflowed[1:5], ', ')
					   || CASE WHEN pg_catalog.cardinality(overflowed) > 5 THEN ', ...' ELSE '' END || ')';
			END IF;
			overflowed := NULL;
		END IF;
		IF alive IS NULL THEN
			RETURN 'the overflowing session' || CASE WHEN pg_catalog.cardinality(pids) > 1 THEN 's' ELSE '' END
				   || ' (pid' || CASE WHEN pg_catalog.cardinality(pids) > 1 THEN 's ' ELSE ' ' END
				   || pg_catalog.array_to_string(pids, ', ') || ') ended';
		END IF;
		SELECT pg_catalog.array_agg(s.pid) INTO overflowed
		  FROM @extschema@.pg_contention_subxact() AS s
		 WHERE s.pid = ANY (alive) AND s.subxact_overflowed;
		IF overflowed IS NULL THEN
			RETURN 'the overflowing transaction' || CASE WHEN pg_catalog.cardinality(alive) > 1 THEN 's' ELSE '' END
				   || ' (pid' || CASE WHEN pg_catalog.cardinality(alive) > 1 THEN 's ' ELSE ' ' END
				   || pg_catalog.array_to_string(alive, ', ') || ') ended';
		END IF;
		RETURN NULL;
	END IF;

	IF problem = 'old_snapshot_threshold_spinlock' THEN
		IF coalesce(pg_catalog.current_setting('old_snapshot_threshold', true), '-1') IN ('-1', '') THEN
			RETURN 'old_snapshot_threshold was turned off';
		END IF;
	END IF;
	RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_incident_resolution(text, jsonb, timestamp with time zone, jsonb) FROM PUBLIC;
