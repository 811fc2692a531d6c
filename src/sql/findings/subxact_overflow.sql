--
-- Rule subxact_overflow: a statement (or a backend overflowed now) took a
-- 65th subtransaction XID, so every snapshot in the cluster is
-- suboverflowed; its severity is what that costs (pg_contention_subtrans_cost).
-- On a standby: the primary's overflow seen through this standby's snapshots.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_subxact_overflow(
	window_length interval DEFAULT NULL,
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
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
-- This server run's start (as pg_contention_before_restart tells it): an
-- event before it is a process of an earlier run, whose pid may be
-- another process now.
run AS MATERIALIZED (
	SELECT greatest(pg_catalog.pg_postmaster_start_time(), i.last_loaded) AS started
	  FROM @extschema@.pg_contention_info() AS i
),
-- The window's overflow events per statement, backend (of this server run
-- or an earlier one) and application: a few rows where the ring holds a
-- thousand events, so the culprits are told from these (each with its
-- latest event's text) and the events are sorted once, not once per
-- question asked of them.
event_groups AS MATERIALIZED (
	SELECT e.datid, e.usesysid, e.query_id, e.pid, e.application_name,
		   e.event_time < run.started AS earlier_run,
		   count(*) AS ring_events, min(e.event_time) AS first_event,
		   max(e.event_time) AS last_event,
		   (pg_catalog.array_agg(e.query ORDER BY e.event_time DESC))[1] AS last_text,
		   max(e.nested_query_id) AS nested_query_id,
		   max(e.nesting_depth) AS nesting_depth,
		   -- The most subtransactions one execution opened, and its rows.
		   max(e.statement_subxacts) AS statement_subxacts,
		   (pg_catalog.array_agg(e.statement_rows ORDER BY e.statement_subxacts DESC NULLS LAST))[1] AS statement_rows
	  FROM @extschema@.pg_contention_overflow_events() AS e, params, run
	 WHERE e.event_time >= params.cutoff
	 GROUP BY e.datid, e.usesysid, e.query_id, e.pid, e.application_name, e.event_time < run.started
),
live AS MATERIALIZED (
	SELECT s.* FROM @extschema@.pg_contention_subxact() AS s
),
activity AS MATERIALIZED (
	SELECT a.pid, a.usename, a.state, a.state_change FROM pg_catalog.pg_stat_activity AS a
),
recent AS MATERIALIZED (
	-- Texts are shortened only where a finding shows them: 5,000 texts
	-- through a regular expression would cost more than everything else.
	SELECT r.*, d.datname, u.rolname AS usename
	  FROM params, @extschema@.pg_contention_recent(params.w_s, true, false, true, false) AS r
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = r.dbid
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = r.userid
	 -- the statements' rows (not thousands of indexes' with dead entries)
	 WHERE r.indexrelid IS NULL
),
subtrans AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_subtrans_cost(window_length)
),
cost_text AS (
	SELECT s.level, s.cost_text AS text, s.lookups, s.lookup_rate, s.wait_samples,
		   s.wait_pct, s.active_samples, s.busy_seconds, s.first_overflow_second,
		   s.slru_accesses, s.xids_assigned, s.overflow_ended_at AS ended_at,
		   -- said first when it has ended: the figures are of the window
		   coalesce(CASE WHEN params.standby THEN 'Stopped at ' ELSE 'Ended at ' END
					|| pg_catalog.to_char(s.overflow_ended_at, 'HH24:MI:SS') || ', '
					|| @extschema@.pg_contention_duration(pg_catalog.now() - s.overflow_ended_at)
					|| CASE WHEN params.standby
							THEN CASE WHEN s.primary_idle
									  THEN ' ago: no transaction runs on the primary now, so new snapshots here are not suboverflowed. '
									  ELSE ' ago: no reader on this standby has looked up pg_subtrans or waited on it since. ' END
							ELSE ' ago: no transaction is overflowed now, so new snapshots are not suboverflowed. ' END,
					'') AS ended_text
	  FROM subtrans AS s, params
),
-- On a standby: the primary's oldest running transaction, every
-- snapshot's xmin here.  The standby takes a snapshot as suboverflowed
-- when its xmin is at or before the last XID an overflowed transaction
-- of the primary was assigned (KnownAssignedXids, lastOverflowedXid):
-- while a transaction older than that runs, every snapshot is, even
-- after the overflowing transactions have ended.
primary_xact AS MATERIALIZED (
	SELECT h.holder AS xid, h.held_for
	  FROM params, @extschema@.pg_contention_horizon AS h
	 WHERE params.standby AND h.kind = 'primary transaction'
	 LIMIT 1
),
-- The hot standbys streaming from this primary, by application_name.
standbys AS MATERIALIZED (
	SELECT pg_catalog.string_agg(DISTINCT coalesce(nullif(r.application_name, ''), pg_catalog.host(r.client_addr), 'unnamed'), ', ') AS names
	  FROM params, pg_catalog.pg_stat_replication AS r
	 WHERE NOT params.standby AND r.state = 'streaming'
),
-- Who pays on a standby: every execution on a suboverflowed snapshot
-- (the culprit has no session here).
standby_paid_by AS MATERIALIZED (
	SELECT t.sentence
	  FROM params, @extschema@.pg_contention_victims_texts(
			   window_length, 'suboverflowed_snapshots'::pg_catalog.text,
			   jsonb_build_array(jsonb_build_object('culprit', 'primary', 'pids', '[]'::jsonb))) AS t
	 WHERE params.standby
),
victims AS (
	SELECT s.victim_calls AS calls, s.victim_first_seen AS first_seen,
		   s.victim_query_ids AS query_ids, s.victims_text AS text
	  FROM subtrans AS s
),
-- The savepoint statement each (database, user) runs most: a driver's
-- autosave or an ORM's nested transactions show here.  Numbered names are
-- one statement, shown with their last number as <n> (SAVEPOINT
-- "_pg3_<n>"): its calls are the pattern's.
savepoints AS (
	SELECT DISTINCT ON (r.dbid, r.userid) r.dbid, r.userid,
		   @extschema@.pg_contention_shorten(r.query) AS text, r.calls,
		   CASE WHEN r.query ILIKE '%pgjdbc_autosave%' THEN 'PgJDBC autosave'
				WHEN r.query ILIKE '%sa\_savepoint\_%' THEN 'SQLAlchemy nested transactions'
				WHEN r.query ILIKE '%active\_record\_%' THEN 'Rails nested transactions'
				WHEN r.query ~* '^\s*savepoint\s+"?s[0-9a-f]+_x' THEN 'Django atomic blocks'
				WHEN r.query ~* '^\s*savepoint\s+"?_pg3_' THEN 'psycopg 3 nested transactions'
		   END AS driver
	  FROM recent AS r
	 WHERE r.indexrelid IS NULL AND r.query ~* '^\s*savepoint\s'
	 ORDER BY r.dbid, r.userid, r.calls DESC
),
-- Who overflowed: per statement that took a 65th subtransaction XID in
-- the window, and per backend overflowed now that no event of the
-- window names.  One statement is one normalised text in one database:
-- the query ids a driver makes of it by binding a parameter as int2 here
-- and int4 there are summed into one culprit, all of them in query_ids.
overflow_query_ids AS (
	SELECT g.datid, g.usesysid, g.query_id,
		   sum(g.ring_events)::bigint AS ring_events, min(g.first_event) AS first_event,
		   (pg_catalog.array_agg(g.last_text ORDER BY g.last_event DESC))[1] AS last_text
	  FROM event_groups AS g
	 GROUP BY g.datid, g.usesysid, g.query_id
),
-- The statement store's text is normalised; an event's is what ran, so it
-- is normalised here too (a subject goes to the server log, check and
-- tickets; and the same statement with other constants is one).  A text
-- masked from this role groups nothing beyond its user.
overflow_keyed AS (
	SELECT o.datid, o.usesysid, o.query_id,
		   coalesce(t.query, @extschema@.pg_contention_normalize(o.last_text), '') AS stmt_text,
		   CASE WHEN coalesce(t.query, o.last_text) = '<insufficient privilege>'
				THEN o.usesysid END AS masked_user,
		   -- The statement store counts every event; the ring keeps the last.
		   greatest(o.ring_events, coalesce(rs.overflow_events, 0)) AS events,
		   least(o.first_event, rs.period_start) AS since
	  FROM overflow_query_ids AS o
	  LEFT JOIN LATERAL (SELECT r.query FROM recent AS r
						  WHERE r.indexrelid IS NULL AND r.dbid = o.datid
							AND r.userid = o.usesysid AND r.query_id = o.query_id
						  LIMIT 1) AS t ON true
	  LEFT JOIN recent AS rs
		ON rs.indexrelid IS NULL AND rs.dbid = o.datid AND rs.userid = o.usesysid
		   AND rs.query_id = o.query_id AND rs.overflow_events > 0
),
overflow_sums AS (
	SELECT k.datid, k.stmt_text, k.masked_user,
		   sum(k.events) AS events, min(k.since) AS since,
		   (pg_catalog.array_agg(k.query_id ORDER BY k.events DESC))[1] AS query_id,
		   (pg_catalog.array_agg(k.usesysid ORDER BY k.events DESC))[1] AS usesysid,
		   jsonb_agg(DISTINCT k.query_id) FILTER (WHERE k.query_id IS NOT NULL) AS query_ids,
		   pg_catalog.string_agg(DISTINCT k.query_id::text, ', ') AS query_ids_text,
		   count(DISTINCT k.query_id) AS n_query_ids
	  FROM overflow_keyed AS k
	 GROUP BY k.datid, k.stmt_text, k.masked_user
),
overflow_who AS (
	SELECT k.datid, k.stmt_text, k.masked_user,
		   min(g.first_event) AS first_event, max(g.last_event) AS last_event,
		   count(DISTINCT ROW(g.pid, g.earlier_run)) AS backends,
		   (pg_catalog.array_agg(g.pid ORDER BY g.last_event DESC))[1] AS last_pid,
		   -- Pids to act on are this run's; an earlier run's are kept apart.
		   coalesce(jsonb_agg(DISTINCT g.pid) FILTER (WHERE NOT g.earlier_run), '[]') AS pids,
		   jsonb_agg(DISTINCT g.pid) FILTER (WHERE g.earlier_run) AS earlier_run_pids,
		   (pg_catalog.array_agg(g.application_name ORDER BY g.last_event DESC))[1] AS application_name,
		   max(g.nested_query_id) AS nested_query_id,
		   max(g.nesting_depth) AS nesting_depth,
		   max(g.statement_subxacts) AS statement_subxacts,
		   (pg_catalog.array_agg(g.statement_rows ORDER BY g.statement_subxacts DESC NULLS LAST))[1] AS statement_rows
	  FROM overflow_keyed AS k
	  JOIN event_groups AS g
		ON g.datid = k.datid AND g.usesysid = k.usesysid
		   AND g.query_id IS NOT DISTINCT FROM k.query_id
	 GROUP BY k.datid, k.stmt_text, k.masked_user
),
overflow_statements AS (
	SELECT s.datid, s.stmt_text AS query, s.events, s.since, s.query_id, s.usesysid,
		   s.query_ids, s.query_ids_text, s.n_query_ids,
		   w.first_event, w.last_event,
		   w.backends, w.last_pid, w.pids, w.earlier_run_pids, w.application_name,
		   w.nested_query_id, w.nesting_depth, w.statement_subxacts, w.statement_rows
	  FROM overflow_sums AS s
	  JOIN overflow_who AS w
		ON w.datid = s.datid AND w.stmt_text = s.stmt_text
		   AND w.masked_user IS NOT DISTINCT FROM s.masked_user
),
-- The statements inside functions that overflowed: their texts (read
-- only when there are such statements) and the function and trigger
-- their backend noted when it overflowed (pg_contention_nested_contexts).
nested_texts AS MATERIALIZED (
	SELECT s.dbid, s.query_id, s.query
	  FROM @extschema@.pg_contention_statements(false) AS s
	 WHERE EXISTS (SELECT 1 FROM overflow_statements AS o WHERE o.nested_query_id IS NOT NULL)
	   AND s.query_id IN (SELECT o.nested_query_id FROM overflow_statements AS o)
),
nested_places AS MATERIALIZED (
	SELECT c.dbid, c.query_id, c.context, c.trigger
	  FROM @extschema@.pg_contention_nested_contexts() AS c
	 WHERE EXISTS (SELECT 1 FROM overflow_statements AS o WHERE o.nested_query_id IS NOT NULL)
),
overflow_culprits AS (
	SELECT o.datid, o.usesysid, o.query_id, o.query_ids,
		   o.events, o.backends, o.since, o.last_event,
		   o.pids, o.earlier_run_pids, o.nested_query_id, o.nesting_depth,
		   np.context AS nested_context, np.trigger AS nested_trigger,
		   o.statement_subxacts, o.statement_rows,
		   'statement ' || @extschema@.pg_contention_shorten(o.query)
		   || coalesce(' (query id' || CASE WHEN o.n_query_ids > 1 THEN 's ' ELSE ' ' END
					   || o.query_ids_text || ')', '')
		   || CASE WHEN o.backends = 1
				   THEN ' in pid ' || o.last_pid || ' ('
						|| concat_ws(', ',
							  'application ' || nullif(o.application_name, ''),
							  'user ' || u.rolname,
							  -- state is NULL for another role's session; a pid of
							  -- a previous server run may be another process now
							  coalesce(@extschema@.pg_contention_before_restart(o.first_event, o.last_event),
									   CASE WHEN a.pid IS NULL THEN 'session ended'
											ELSE a.state || ' for '
												 || @extschema@.pg_contention_duration(params.now - a.state_change) END))
						|| ')'
				   ELSE ' in ' || o.backends || ' backends ('
						|| concat_ws(', ', 'application ' || nullif(o.application_name, ''),
									 'user ' || u.rolname,
									 @extschema@.pg_contention_before_restart(o.first_event, o.last_event)) || ')'
			  END
		   || coalesce(', savepoints by ' || sp.driver || ' (' || sp.text || ')',
					   ', savepoints ' || sp.text
					   || ' run ' || pg_catalog.to_char(sp.calls, 'FM999,999,999,990') || ' times', '')
		   -- The source inside: the function (and the trigger that fires
		   -- it) and its statement that overflowed.
		   || CASE WHEN o.nested_query_id IS NOT NULL
				   THEN ', inside ' || coalesce(np.context, 'a function')
						|| coalesce(', fired by trigger ' || np.trigger, '')
						|| ': ' || coalesce(@extschema@.pg_contention_shorten(nt.query)
											|| ' (query id ' || o.nested_query_id || ')',
											'nested statement ' || o.nested_query_id)
						-- How many it opens: per row, or per call of the statement.
						|| coalesce(', ' || pg_catalog.to_char(o.statement_subxacts, 'FM999,999,999,990')
									|| ' subtransactions with an XID in one execution'
									|| CASE WHEN o.statement_rows > 1
											THEN ' of ' || pg_catalog.to_char(o.statement_rows, 'FM999,999,999,990')
												 || ' rows (' || pg_catalog.to_char(
													 o.statement_subxacts::numeric / o.statement_rows,
													 CASE WHEN o.statement_subxacts % o.statement_rows = 0
														  THEN 'FM999,999,990' ELSE 'FM999,999,990.0' END)
												 || ' per row)'
											ELSE '' END, '')
				   ELSE '' END AS subject,
		   pg_catalog.to_char(o.events, 'FM999,999,999,990')
		   || ' overflow event'
		   || CASE WHEN o.events = 1 THEN '' ELSE 's' END AS what
	  FROM overflow_statements AS o
	  CROSS JOIN params
	  LEFT JOIN pg_catalog.pg_roles AS u ON u.oid = o.usesysid
	  LEFT JOIN activity AS a ON a.pid = o.last_pid
	  LEFT JOIN savepoints AS sp ON sp.dbid = o.datid AND sp.userid = o.usesysid
	  LEFT JOIN LATERAL (SELECT p.context, p.trigger FROM nested_places AS p
						  WHERE p.dbid = o.datid AND p.query_id = o.nested_query_id LIMIT 1) AS np ON true
	  LEFT JOIN LATERAL (SELECT t.query FROM nested_texts AS t
						  WHERE t.dbid = o.datid AND t.query_id = o.nested_query_id LIMIT 1) AS nt ON true
	UNION ALL
	SELECT l.datid, l.usesysid, l.query_id,
		   CASE WHEN l.query_id IS NOT NULL THEN jsonb_build_array(l.query_id) END,
		   0, 1, l.xact_start, NULL::timestamptz,
		   jsonb_build_array(l.pid), NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		   'pid ' || l.pid || ' ('
		   || concat_ws(', ', 'application ' || nullif(l.application_name, ''),
						'user ' || a.usename,
						a.state || ' for '
						|| @extschema@.pg_contention_duration(params.now - a.state_change),
						'transaction open for '
						|| @extschema@.pg_contention_duration(params.now - l.xact_start))
		   || ')' || coalesce(', last statement '
							  || @extschema@.pg_contention_shorten(@extschema@.pg_contention_normalize(l.query)), ''),
		   'overflowed now, its transaction older than the window'
	  FROM live AS l
	  CROSS JOIN params
	  LEFT JOIN activity AS a ON a.pid = l.pid
	 WHERE l.subxact_overflowed
	   AND NOT EXISTS (SELECT 1 FROM event_groups AS e WHERE e.pid = l.pid)
),
-- Who pays, for every culprit in one call: each is left out of its own
-- victims with every query id it has and the statement inside it.
culprits_keyed AS MATERIALIZED (
	SELECT (row_number() OVER ())::text AS culprit_key, o.*,
		   -- Its own overflow over (another culprit's may go on): none of
		   -- its sessions overflowed now, and its last event overflow_ended_after old.
		   CASE WHEN NOT params.standby AND o.last_event <= params.now - params.overflow_ended_after
					 AND NOT EXISTS (SELECT 1 FROM live AS l
									  WHERE l.subxact_overflowed AND o.pids @> pg_catalog.to_jsonb(l.pid))
				THEN o.last_event END AS culprit_ended_at
	  FROM overflow_culprits AS o, params
),
paid_by AS MATERIALIZED (
	SELECT t.culprit, t.sentence
	  FROM @extschema@.pg_contention_victims_texts(
			   window_length, 'suboverflowed_snapshots'::pg_catalog.text,
			   (SELECT coalesce(jsonb_agg(jsonb_build_object(
						   'culprit', o.culprit_key, 'pids', o.pids || coalesce(o.earlier_run_pids, '[]'),
						   'query_ids', coalesce(o.query_ids, '[]'::jsonb)
										|| jsonb_build_array(o.query_id, o.nested_query_id))), '[]'::jsonb)
				  FROM culprits_keyed AS o)) AS t
),
overflow_findings AS (
	SELECT 'subxact_overflow'::text AS problem,
		   CASE WHEN o.culprit_ended_at IS NOT NULL THEN 'info' ELSE c.level END AS severity,
		   o.subject,
		   CASE WHEN c.ended_at IS NOT NULL THEN c.ended_text
				WHEN o.culprit_ended_at IS NOT NULL
				THEN 'Its overflow has ended: none of its sessions is overflowed now (its last overflow event at '
					 || pg_catalog.to_char(o.culprit_ended_at, 'HH24:MI:SS') || '); another transaction''s goes on. '
				ELSE '' END
		   -- The counts come from the statement store's periods (up to two
		   -- windows back) and the event ring; the cost from the window's
		   -- seconds: the span starts with the problem, its first overflow event.
		   || 'From ' || pg_catalog.to_char(coalesce(o.since, v.first_seen, params.cutoff), 'HH24:MI:SS')
		   || ' to ' || pg_catalog.to_char(params.now, 'HH24:MI:SS') || ': ' || o.what || '; ' || v.text
		   || '; cost in the last ' || params.w_text || ': ' || c.text || '.'
		   || coalesce(' ' || pb.sentence, '')
		   -- What it costs the standbys is measured there, not here.
		   || coalesce(' Its hot standbys (' || st.names || ') take their snapshots from its WAL: what it costs their'
					   || ' readers is not measured here (pg_contention_findings on each standby says), and a long'
					   || ' transaction here keeps their snapshots suboverflowed after the overflow ends.', '') AS evidence,
		   CASE WHEN c.ended_at IS NOT NULL OR o.culprit_ended_at IS NOT NULL
				THEN 'Nothing to do now; to keep it from recurring, k'
				WHEN c.level = 'info'
				THEN CASE WHEN coalesce(c.lookups, 0) > 0 OR coalesce(c.wait_samples, 0) > 0
						  THEN 'Its cost is below the warning bars ('
							   || pg_catalog.to_char(coalesce(c.lookup_rate, 0), 'FM999,999,999,990')
							   || ' pg_subtrans lookups/s by readers, the bar is '
							   || pg_catalog.to_char(params.lookups_warning, 'FM999,999,999,990') || '/s)'
						  ELSE 'It costs nothing measurable here yet' END
					 || ', but every snapshot taken meanwhile is suboverflowed'
					 || CASE WHEN st.names IS NOT NULL THEN ', on its standbys too' ELSE '' END || '; k'
				ELSE 'K' END
		   -- A function the backend noted: the advice for that source.
		   || CASE WHEN o.nested_trigger IS NOT NULL OR o.nested_context IS NOT NULL
				   THEN 'eep transactions under 64 subtransactions: here they come from '
						|| coalesce(o.nested_context, 'a function')
						|| coalesce(', which trigger ' || o.nested_trigger || ' fires for each row', '')
						|| ', which opens one each time it enters an EXCEPTION block (or a savepoint);'
						|| ' catch nothing per row: INSERT ... ON CONFLICT, or a check before the statement,'
						|| ' or one block per batch, or commit the batch in smaller pieces'
				   ELSE 'eep transactions under 64 subtransactions: commit batches in smaller pieces, '
						|| 'avoid an EXCEPTION block (a subtransaction) per row in PL/pgSQL, '
						|| 'turn off driver autosave (PgJDBC autosave=never) or savepoints per statement' END
		   || CASE WHEN params.version_num >= 170000
				   THEN '; on PostgreSQL 17 and later a larger subtransaction_buffers shortens the pg_subtrans waits, not the lookups.'
				   ELSE '.' END AS advice,
		   jsonb_build_object(
			   'pids', o.pids, 'earlier_run_pids', o.earlier_run_pids,
			   -- Of those, the sessions alive now (overflowed, or between
			   -- the transactions that overflow): what an incident is
			   -- last seen with, whose end resolves it.
			   'alive_pids', (SELECT coalesce(pg_catalog.jsonb_agg(a.pid ORDER BY a.pid), '[]')
								FROM activity AS a
							   WHERE o.pids @> pg_catalog.to_jsonb(a.pid)),
			   'query_id', o.query_id, 'query_ids', o.query_ids,
			   'database_oid', o.datid::bigint,
			   'user_oid', o.usesysid::bigint, 'overflow_events', o.events,
			   'nested_query_id', o.nested_query_id, 'nesting_depth', o.nesting_depth,
			   'statement_subxacts', o.statement_subxacts, 'statement_rows', o.statement_rows,
			   'suboverflowed_calls', v.calls, 'victim_query_ids', v.query_ids,
			   'subtrans_lookups', c.lookups, 'subtrans_lookups_per_second', pg_catalog.round(c.lookup_rate::numeric),
			   'subtrans_slru_accesses', c.slru_accesses, 'xids_assigned', c.xids_assigned,
			   'subtrans_wait_samples', c.wait_samples, 'subtrans_wait_pct', pg_catalog.round(c.wait_pct::numeric, 2),
			   'active_samples', c.active_samples, 'window_seconds', params.w_s,
			   'ended_at', coalesce(c.ended_at, o.culprit_ended_at)) AS details,
		   o.since
	  FROM culprits_keyed AS o
	  LEFT JOIN paid_by AS pb ON pb.culprit = o.culprit_key
	  CROSS JOIN victims AS v CROSS JOIN cost_text AS c CROSS JOIN params
	  CROSS JOIN standbys AS st
	UNION ALL
	-- A standby has no overflowed backend of its own: the primary's
	-- overflow reaches it through the snapshots built from its WAL.
	SELECT 'subxact_overflow', c.level,
		   'a transaction on the primary (its overflow reaches this standby''s snapshots)',
		   c.ended_text
		   || 'From ' || pg_catalog.to_char(coalesce(v.first_seen, params.cutoff), 'HH24:MI:SS')
		   || ' to ' || pg_catalog.to_char(params.now, 'HH24:MI:SS') || ' on this standby: ' || v.text
		   || '; cost in the last ' || params.w_text || ': ' || c.text || '.'
		   || coalesce(' Every snapshot here has for xmin the primary''s transaction ' || px.xid
					   || coalesce(' (seen here for ' || @extschema@.pg_contention_duration(px.held_for) || ')', '')
					   || ', the oldest running there: while it runs, an overflow of any transaction since,'
					   || ' even one that has ended, leaves every snapshot on this standby suboverflowed.', '')
		   || coalesce(' ' || (SELECT pb.sentence FROM standby_paid_by AS pb LIMIT 1), ''),
		   'On the primary: '
		   || coalesce('end its oldest transaction, ' || px.xid || ' (SELECT pid, usename, application_name, state, xact_start, query'
					   || ' FROM pg_stat_activity WHERE backend_xid = ' || pg_catalog.quote_literal(px.xid)
					   || '), which keeps this standby''s snapshots suboverflowed after every overflow since it began; ', '')
		   || 'pg_contention_findings there names the backend and statement that overflow: keep their transactions under'
		   || ' 64 subtransactions.',
		   jsonb_build_object('pids', '[]'::jsonb, 'primary_xid', px.xid,
							  'suboverflowed_calls', v.calls, 'victim_query_ids', v.query_ids,
							  'subtrans_lookups', c.lookups, 'subtrans_slru_accesses', c.slru_accesses,
							  'xids_assigned', c.xids_assigned, 'subtrans_wait_samples', c.wait_samples,
							  'subtrans_wait_pct', pg_catalog.round(c.wait_pct::numeric, 2),
							  'window_seconds', params.w_s),
		   v.first_seen
	  FROM victims AS v CROSS JOIN cost_text AS c CROSS JOIN params
	  LEFT JOIN primary_xact AS px ON true
	 WHERE params.standby AND v.calls > 0
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM overflow_findings AS f;
END
$$;
