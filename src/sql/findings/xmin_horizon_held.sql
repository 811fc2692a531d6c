--
-- Rule xmin_horizon_held: a root holder of the xmin horizon past the
-- thresholds (pg_contention.horizon_min_age / _min_xid_age), with the
-- dead_tuple_index_scan findings it causes.  Its severity is what the hold
-- costs, measured: dead tuples VACUUM would remove now (in tables past
-- their autovacuum threshold, in the databases it holds back), index
-- lookups reading dead entries, or an XID age past
-- pg_contention.horizon_critical_xid_age; age alone is info.
--
-- index_findings: the dead_tuple_index_scan findings of the same
-- evaluation, a JSON array of {severity, holder, indexrelid, database_oid,
-- indexes}, which pg_contention_findings gives it (this rule does not
-- evaluate that one again): one per cause, its costliest index and how
-- many indexes it touches (indexes; absent: one).  NULL: none.  horizon_roots: the root holders as
-- pg_contention_findings read them for every rule of the evaluation (the
-- holders those findings name); NULL: read now.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_xmin_horizon_held(
	window_length interval,
	index_findings jsonb,
	horizon_roots jsonb DEFAULT NULL,
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
root_holders AS MATERIALIZED (
	SELECT r.*, pg_catalog.current_setting('hot_standby_feedback')::boolean AS feedback,
		   (row_number() OVER ())::text AS culprit_key,
		   -- The databases whose cleanup it holds back, as the server computes
		   -- horizons: on 13 every database; from 14 a backend's or a prepared
		   -- transaction's own, and those whose sessions' snapshots follow its
		   -- XID now (follower_databases), while a slot's xmin and a standby's
		   -- feedback hold every database's.
		   (params.version_num < 140000 OR r.datname IS NULL
			OR r.kind IN ('standby feedback', 'replication slot')) AS all_databases
	  FROM @extschema@.pg_contention_horizon_roots(window_length, horizon_roots) AS r, params
),
-- Every table's dead tuples by database, read only when a holder blocks
-- cleanup: from PostgreSQL 15 it walks every table's statistics, which a
-- healthy server need not pay for.  A CTE of its own, so that the test is
-- a one-time filter above the read on every version (under an outer
-- join's nullable side, PostgreSQL 17 evaluates such a test per row).
dead_read AS MATERIALIZED (
	SELECT t.*
	  FROM @extschema@.pg_contention_database_dead_tuples() AS t
	 WHERE (SELECT coalesce(bool_or(h.blocks_cleanup), false) FROM root_holders AS h)
),
-- Each database's dead tuples, whichever database this runs in; NULL where
-- they cannot be read from here (another database, before PostgreSQL 15).
dead_by_db AS MATERIALIZED (
	SELECT d.datname, r.readable,
		   CASE WHEN r.readable THEN coalesce(x.dead_tuples, 0) END AS dead_tuples,
		   CASE WHEN r.readable THEN coalesce(x.due_dead_tuples, 0) END AS due_dead_tuples,
		   CASE WHEN r.readable THEN coalesce(x.due_tables, 0) END AS due_tables,
		   CASE WHEN r.readable THEN coalesce(x.catalog_dead_tuples, 0) END AS catalog_dead_tuples,
		   CASE WHEN r.readable THEN coalesce(x.catalog_due_dead_tuples, 0) END AS catalog_due_dead_tuples
	  FROM pg_catalog.pg_database AS d
	  CROSS JOIN params
	  CROSS JOIN LATERAL (SELECT params.version_num >= 150000
								 OR d.datname = pg_catalog.current_database() AS readable) AS r
	  LEFT JOIN dead_read AS x ON x.datid = d.oid
	 WHERE d.datallowconn AND NOT d.datistemplate
),
-- What those databases hold in dead tuples (a logical slot: in their
-- catalogs), how many VACUUM would remove now, and which could be read.
held_dead AS MATERIALIZED (
	SELECT h.culprit_key, h.all_databases,
		   sum(CASE WHEN h.catalog_only THEN b.catalog_dead_tuples ELSE b.dead_tuples END) AS dead_tuples,
		   sum(CASE WHEN h.catalog_only THEN b.catalog_due_dead_tuples ELSE b.due_dead_tuples END) AS due_dead_tuples,
		   sum(b.due_tables) FILTER (WHERE NOT h.catalog_only) AS due_tables,
		   count(b.dead_tuples) AS read,
		   count(*) AS databases,
		   pg_catalog.string_agg(b.datname::text, ', ' ORDER BY b.datname) FILTER (WHERE b.dead_tuples IS NOT NULL) AS read_names,
		   pg_catalog.string_agg(b.datname::text, ', ' ORDER BY b.datname) FILTER (WHERE b.dead_tuples IS NULL) AS unread_names,
		   jsonb_agg(b.datname ORDER BY b.datname) FILTER (WHERE b.dead_tuples IS NOT NULL) AS read_list
	  FROM root_holders AS h
	  JOIN dead_by_db AS b ON h.all_databases OR b.datname = h.datname OR b.datname = ANY (h.follower_databases)
	 GROUP BY h.culprit_key, h.all_databases, h.catalog_only
),
-- Who pays, for every holder that is a finding, in one call.
paid_by AS MATERIALIZED (
	SELECT t.culprit, t.sentence
	  FROM @extschema@.pg_contention_victims_texts(
			   window_length, 'dead_index_entries'::pg_catalog.text,
			   (SELECT coalesce(jsonb_agg(jsonb_build_object(
						   'culprit', h.culprit_key, 'pids', jsonb_build_array(h.pid))), '[]'::jsonb)
				  FROM root_holders AS h
				 WHERE h.blocks_cleanup)) AS t
),
index_found AS MATERIALIZED (
	SELECT f.value ->> 'severity' AS severity, f.value ->> 'holder' AS holder, f.value -> 'indexrelid' AS indexrelid,
		   (f.value ->> 'database_oid') || ' ' || (f.value ->> 'indexrelid') AS index_key,
		   CASE WHEN pg_catalog.jsonb_typeof(f.value -> 'indexes') = 'number'
				THEN greatest(pg_catalog.trunc((f.value ->> 'indexes')::numeric), 1) ELSE 1 END AS indexes
	  FROM pg_catalog.jsonb_array_elements(
			   CASE WHEN pg_catalog.jsonb_typeof(index_findings) = 'array' THEN index_findings ELSE '[]' END) AS f
),
-- Each holder with what its hold costs, as measured.
costed AS MATERIALIZED (
	SELECT h.*, d.dead_tuples, d.due_dead_tuples, d.due_tables, d.read, d.databases,
		   d.read_names, d.unread_names, d.read_list,
		   i.index_count, i.index_critical, w.retained_wal,
		   -- a standby's own counts say nothing of what it holds (its
		   -- primary's walsender is the holder there, and counts them)
		   (NOT params.standby AND coalesce(d.due_dead_tuples, 0) > 0
			OR i.index_count > 0
			OR h.xmin_age >= params.horizon_critical_xid_age) AS costs
	  FROM root_holders AS h
	  CROSS JOIN params
	  LEFT JOIN held_dead AS d ON d.culprit_key = h.culprit_key
	  -- (findings given with the same costliest index, as one per
	  -- statement and index would be, count it once)
	  CROSS JOIN LATERAL (SELECT coalesce(sum(f.indexes), 0) AS index_count,
								 coalesce(bool_or(f.critical), false) AS index_critical
							FROM (SELECT max(f.indexes) AS indexes, bool_or(f.severity = 'critical') AS critical
									FROM index_found AS f
								   WHERE f.holder = h.holder
								   GROUP BY f.index_key) AS f) AS i
	  -- The WAL a slot keeps, from its restart_lsn.
	  LEFT JOIN LATERAL (SELECT pg_catalog.pg_wal_lsn_diff(
									CASE WHEN params.standby THEN pg_catalog.pg_last_wal_replay_lsn()
										 ELSE pg_catalog.pg_current_wal_lsn() END, s.restart_lsn) AS retained_wal
						   FROM pg_catalog.pg_replication_slots AS s
						  WHERE h.kind = 'replication slot' AND s.slot_name = h.holder) AS w ON true
	 WHERE h.blocks_cleanup
),
horizon_findings AS (
	SELECT 'xmin_horizon_held'::text AS problem,
		   CASE WHEN h.xmin_age >= params.horizon_critical_xid_age OR h.index_critical
					 OR (h.level = 'critical' AND h.costs) THEN 'critical'
				WHEN h.costs THEN 'warning'
				ELSE 'info' END AS severity,
		   h.subject,
		   -- A logical slot holds by its catalog_xmin: call it that.
		   'Its ' || CASE WHEN h.catalog_only THEN 'catalog_xmin' ELSE 'xmin' END || ' is '
		   || pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990')
		   || CASE WHEN h.xmin_age = 1 THEN ' transaction old' ELSE ' transactions old' END
		   || coalesce(CASE WHEN h.kind = 'replication slot' THEN ', inactive for ' ELSE ', held for ' END
					   || @extschema@.pg_contention_duration(h.held_for), '')
		   -- a maintenance command: its phase's snapshot is the xmin
		   || coalesce(' by ' || h.command || coalesce(' of ' || h.object, '')
					   || coalesce(' (phase ' || h.progress || ')', ''), '')
		   || CASE -- A standby vacuums nothing and its n_dead_tup are its own
				   -- (near zero): what its horizon keeps is on the primary.
				   WHEN h.kind = 'primary transaction'
				   THEN '; it runs on the primary (this standby knows it from the WAL), the oldest running there: every'
						|| ' snapshot taken here has it for xmin, and it holds back the primary''s cleanup whatever this'
						|| ' standby does (pg_contention_findings on the primary says what that costs)'
				   WHEN params.standby AND h.feedback
				   THEN '; this is a standby with hot_standby_feedback on: the feedback carries this xmin to the primary,'
						|| ' which cannot remove the row versions deleted or updated by the '
						|| pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990') || ' transactions since'
						|| ' (on the primary: n_dead_tup in pg_stat_user_tables, and backend_xmin of this standby''s'
						|| ' walsender in pg_stat_replication; this standby''s own dead tuple counts do not show it)'
				   WHEN params.standby
				   THEN '; this is a standby with hot_standby_feedback off: it does not hold back the primary''s horizon,'
						|| ' replay of the primary''s cleanup waits for it or cancels it (max_standby_streaming_delay)'
				   ELSE CASE WHEN h.catalog_only THEN '; it holds back the removal of dead catalog rows only'
							 WHEN h.kind = 'standby feedback' OR (h.kind = 'replication slot' AND h.datname IS NULL)
							 THEN '; queries on that standby hold it through hot_standby_feedback'
								  || ' (pg_contention_horizon on the standby names them)'
							 ELSE '' END
						|| CASE WHEN h.read = 0
								THEN '; the dead tuples of database ' || h.unread_names
									 || ' cannot be read from database ' || pg_catalog.current_database()
									 || ' before PostgreSQL 15 (pg_contention_findings there counts them)'
								WHEN h.read > 0
								THEN '; the ' || CASE WHEN h.catalog_only THEN 'system catalogs' ELSE 'tables' END || ' of '
									 || CASE WHEN h.all_databases AND h.databases > 1 AND h.read = h.databases
											 THEN 'all ' || h.databases || ' databases'
											 WHEN h.read > 1 THEN 'databases ' || h.read_names
											 ELSE 'database ' || h.read_names END
									 || ' hold ' || pg_catalog.to_char(h.dead_tuples, 'FM999,999,999,990') || ' dead tuples'
									 || CASE WHEN h.due_dead_tuples > 0
											 THEN ', ' || pg_catalog.to_char(h.due_dead_tuples, 'FM999,999,999,990')
												  || ' of them in '
												  || CASE WHEN h.catalog_only THEN 'catalogs'
														  WHEN h.due_tables = 1 THEN '1 table'
														  ELSE h.due_tables || ' tables' END
												  || ' due for autovacuum'
											 ELSE ', none in a table due for autovacuum' END
									 || CASE WHEN h.read < h.databases
											 THEN ' (those of ' || h.unread_names || ' cannot be read from here before PostgreSQL 15)'
											 ELSE '' END
								ELSE '' END END
		   || coalesce('; it retains ' || pg_catalog.pg_size_pretty(h.retained_wal) || ' of WAL', '')
		   || CASE WHEN h.index_count > 0
				   THEN '; it keeps the dead entries that lookups visit in ' || h.index_count
						|| CASE WHEN h.index_count = 1 THEN ' index' ELSE ' indexes' END || ' (dead_tuple_index_scan)'
				   ELSE '' END || '.'
		   || CASE -- Its cost is the primary's, measured there.
				   WHEN NOT h.costs AND params.standby AND h.feedback AND h.kind = 'backend'
				   THEN ' What it costs is measured on the primary, not here: pg_contention_findings there names this'
						|| ' standby''s feedback (hot_standby_feedback of a standby) with the dead tuples and index lookups'
						|| ' it costs; here it stays at info.'
				   WHEN NOT h.costs AND h.kind = 'primary transaction'
				   THEN ' What it costs is measured on the primary; here it stays at info.'
				   WHEN NOT h.costs
				   THEN ' Nothing measured pays for it yet (no table of its databases is due for autovacuum, no index lookup'
						|| ' reads dead entries): it stays at info until something does.'
				   ELSE '' END
		   -- Who pays: the dead index entries' lookups, said only where an
		   -- index finding shows them to be this holder's.
		   || CASE WHEN h.index_count > 0
				   THEN coalesce(' ' || (SELECT pb.sentence FROM paid_by AS pb WHERE pb.culprit = h.culprit_key), '')
				   ELSE '' END AS evidence,
		   CASE h.kind
				WHEN 'backend' THEN
					-- A dump holds one snapshot to its end by design: a
					-- timeout would fail the backup.  A concurrent index
					-- build cancelled leaves an INVALID index; any other
					-- maintenance command loses its work.
					CASE WHEN h.command LIKE '%CONCURRENTLY'
						 THEN 'Let ' || h.command || ' finish: each of its phases takes a new snapshot, and this hold ends with'
							  || ' the phase. Cancelling it frees the horizon now but leaves an INVALID index behind'
							  || CASE WHEN h.command LIKE 'REINDEX%' THEN ' (the new copy, its name ending in _ccnew)' ELSE '' END
							  || ' that slows every write to the table until it is dropped (DROP INDEX CONCURRENTLY) and built'
							  || ' again: if it must go, SELECT pg_cancel_backend(' || h.pid || '), then find it with SELECT'
							  || ' indexrelid::regclass FROM pg_index WHERE NOT indisvalid. Build indexes when the cleanup they'
							  || ' hold costs least.'
						 WHEN h.command IN ('CREATE INDEX', 'REINDEX')
						 THEN 'Let ' || h.command || ' finish: cancelling it (SELECT pg_cancel_backend(' || h.pid || ')) rolls it'
							  || ' back cleanly but loses its work, and it holds the horizon again when it runs again; it blocks'
							  || ' writes to the table meanwhile (CONCURRENTLY would not, and holds the horizon one phase at a time).'
						 WHEN h.command IS NOT NULL
						 THEN 'Let ' || h.command || ' finish: cancelling it (SELECT pg_cancel_backend(' || h.pid || ')) rolls it'
							  || ' back cleanly but loses its work and leaves the table as it was; its ACCESS EXCLUSIVE lock blocks'
							  || ' every use of the table meanwhile.'
						 WHEN h.application_name IN ('pg_dump', 'pg_dumpall')
						 THEN 'A dump keeps one snapshot until it ends. Take it from a standby (with hot_standby_feedback off'
							  || ' and max_standby_streaming_delay long enough), or dump the large, busy tables apart in'
							  || ' shorter dumps; never under statement_timeout, which would fail the backup. SELECT pg_cancel_backend('
							  || h.pid || ') frees the horizon now, and loses this dump.'
						 WHEN h.state LIKE 'idle in transaction%'
						 THEN 'End the transaction: have the application commit, or SELECT pg_terminate_backend(' || h.pid
							  || '). To keep it from recurring: ALTER ROLE ' || coalesce(pg_catalog.quote_ident(h.usename), 'the_role')
							  || ' SET idle_in_transaction_session_timeout = ''5min'' (that role''s new sessions)'
							  -- A pooler's connection (horizon_roots says why): the
							  -- pooler knows the client and has a timeout of its own.
							  || CASE WHEN h.pooler IS NOT NULL
									  THEN '. ' || h.pooler || ': there, find the client'
										   || ' (PgBouncer: SHOW SERVERS, the row whose remote_pid is ' || h.pid
										   || ', then SHOW CLIENTS for its link) and set the pooler''s own timeout too'
										   || ' (PgBouncer: idle_transaction_timeout).'
									  ELSE '.' END
						 ELSE 'If the statement can go, SELECT pg_cancel_backend(' || h.pid
							  || ') (pg_terminate_backend ends the session); long reports belong '
							  || CASE WHEN params.standby THEN 'under statement_timeout' ELSE 'on a standby or under statement_timeout' END
							  || '.' END
				WHEN 'replication slot' THEN
					CASE WHEN h.datname IS NULL AND NOT h.catalog_only AND h.state = 'active'
						 THEN 'A query on the standby of slot ' || h.holder
							  || coalesce(' (application ' || nullif(h.application_name, '') || ')', '')
							  || ' holds it through hot_standby_feedback: find it in pg_contention_horizon on the standby and end it. '
						 ELSE '' END ||
					'If nothing consumes slot ' || h.holder || ' any more, drop it: SELECT pg_drop_replication_slot('
					|| pg_catalog.quote_literal(h.holder) || '); otherwise get its consumer running again'
					|| CASE WHEN h.catalog_only
							THEN ', or, if the changes it has not consumed are not needed, skip them: SELECT pg_replication_slot_advance('
								 || pg_catalog.quote_literal(h.holder) || ', pg_current_wal_lsn()).'
							ELSE '.' END
				WHEN 'prepared transaction' THEN
					'Finish it: COMMIT PREPARED ' || pg_catalog.quote_literal(h.holder) || ' or ROLLBACK PREPARED '
					|| pg_catalog.quote_literal(h.holder) || ' (whoever prepared it should decide which).'
				WHEN 'primary transaction' THEN
					'Find it on the primary: SELECT pid, usename, application_name, state, xact_start, query FROM'
					|| ' pg_stat_activity WHERE backend_xid = ' || pg_catalog.quote_literal(h.holder)
					|| ' (a prepared transaction: SELECT gid FROM pg_prepared_xacts WHERE transaction = '
					|| pg_catalog.quote_literal(h.holder) || '), and end it there. Cancelling queries on this standby frees nothing.'
				WHEN 'standby feedback' THEN
					'A query on the standby' || coalesce(' (application ' || nullif(h.application_name, '') || ')', '')
					|| ' holds it through hot_standby_feedback: find it in pg_contention_horizon on the standby and end it; with hot_standby_feedback = off such queries get cancelled instead.'
				ELSE 'End it.' END AS advice,
		   jsonb_build_object('kind', h.kind, 'holder', h.holder, 'pid', h.pid, 'database', h.datname,
							  'xmin', h.xmin::text, 'xmin_age', h.xmin_age,
							  'command', h.command,
							  'held_seconds', pg_catalog.round(pg_catalog.date_part('epoch', h.held_for)::numeric),
							  'catalog_only', h.catalog_only,
							  -- a standby's own counts say nothing of what it holds
							  'dead_tuples', CASE WHEN NOT params.standby THEN h.dead_tuples END,
							  'due_dead_tuples', CASE WHEN NOT params.standby THEN h.due_dead_tuples END,
							  'dead_tuples_databases', CASE WHEN NOT params.standby THEN h.read_list END,
							  'costs', h.costs,
							  'retained_wal_bytes', h.retained_wal,
							  'index_findings', (SELECT coalesce(jsonb_agg(f.indexrelid), '[]')
												   FROM index_found AS f
												  WHERE f.holder = h.holder)) AS details,
		   h.held_since AS since
	  FROM costed AS h, params
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM horizon_findings AS f;
END
$$;
