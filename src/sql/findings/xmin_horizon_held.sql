--
-- Rule xmin_horizon_held: a root holder of the xmin horizon past the
-- thresholds (pg_contention.horizon_min_age / _min_xid_age), with the
-- dead_tuple_index_scan findings it causes.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_rule_xmin_horizon_held(
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
-- Each database's dead tuples, whichever database this runs in; NULL where
-- they cannot be read from here (another database, before PostgreSQL 15).
dead_by_db AS MATERIALIZED (
	SELECT d.datname,
		   CASE WHEN x.datid IS NOT NULL THEN x.dead_tuples
				WHEN params.version_num >= 150000 OR d.datname = pg_catalog.current_database() THEN 0
		   END AS dead_tuples
	  FROM pg_catalog.pg_database AS d
	  CROSS JOIN params
	  LEFT JOIN @extschema@.pg_contention_database_dead_tuples() AS x ON x.datid = d.oid
	 WHERE d.datallowconn AND NOT d.datistemplate
),
root_holders AS MATERIALIZED (
	SELECT r.*, pg_catalog.current_setting('hot_standby_feedback')::boolean AS feedback,
		   (row_number() OVER ())::text AS culprit_key,
		   -- The databases whose cleanup it holds back, as the server computes
		   -- horizons: on 13 every database; from 14 a backend's or a prepared
		   -- transaction's own only, while a slot's xmin and a standby's
		   -- feedback hold every database's.
		   (params.version_num < 140000 OR r.datname IS NULL
			OR r.kind IN ('standby feedback', 'replication slot')) AS all_databases
	  FROM @extschema@.pg_contention_horizon_roots(window_length) AS r, params
),
-- What those databases hold in dead tuples, and which could be read.
held_dead AS MATERIALIZED (
	SELECT h.culprit_key, h.all_databases,
		   sum(b.dead_tuples) AS dead_tuples,
		   count(b.dead_tuples) AS read,
		   count(*) AS databases,
		   pg_catalog.string_agg(b.datname::text, ', ' ORDER BY b.datname) FILTER (WHERE b.dead_tuples IS NOT NULL) AS read_names,
		   pg_catalog.string_agg(b.datname::text, ', ' ORDER BY b.datname) FILTER (WHERE b.dead_tuples IS NULL) AS unread_names,
		   jsonb_agg(b.datname ORDER BY b.datname) FILTER (WHERE b.dead_tuples IS NOT NULL) AS read_list
	  FROM root_holders AS h
	  JOIN dead_by_db AS b ON h.all_databases OR b.datname = h.datname
	 GROUP BY h.culprit_key, h.all_databases
),
-- Who pays, for every holder that is a finding, in one call.
paid_by AS MATERIALIZED (
	SELECT t.culprit, t.sentence
	  FROM @extschema@.pg_contention_victims_texts(
			   window_length, 'dead_index_entries',
			   (SELECT coalesce(jsonb_agg(jsonb_build_object(
						   'culprit', h.culprit_key, 'pids', jsonb_build_array(h.pid))), '[]'::jsonb)
				  FROM root_holders AS h
				 WHERE h.blocks_cleanup)) AS t
),
index_findings AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_rule_dead_tuple_index_scan(window_length)
),
horizon_findings AS (
	SELECT 'xmin_horizon_held'::text AS problem,
		   CASE WHEN h.level = 'critical'
					 OR EXISTS (SELECT 1 FROM index_findings AS f
								 WHERE f.severity = 'critical' AND f.details -> 'holder' ->> 'holder' = h.holder)
				THEN 'critical' ELSE 'warning' END AS severity,
		   h.subject,
		   -- A logical slot holds by its catalog_xmin: call it that.
		   'Its ' || CASE WHEN h.catalog_only THEN 'catalog_xmin' ELSE 'xmin' END || ' is '
		   || pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990')
		   || CASE WHEN h.xmin_age = 1 THEN ' transaction old' ELSE ' transactions old' END
		   || coalesce(CASE WHEN h.kind = 'replication slot' THEN ', inactive for ' ELSE ', held for ' END
					   || @extschema@.pg_contention_duration(h.held_for), '')
		   || CASE WHEN h.catalog_only THEN '; it holds back the removal of dead catalog rows only'
				   -- A standby vacuums nothing and its n_dead_tup are its own
				   -- (near zero): what its horizon keeps is on the primary.
				   WHEN params.standby AND h.feedback
				   THEN '; this is a standby with hot_standby_feedback on: the feedback carries this xmin to the primary,'
						|| ' which cannot remove the row versions deleted or updated by the '
						|| pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990') || ' transactions since'
						|| ' (on the primary: n_dead_tup in pg_stat_user_tables, and backend_xmin of this standby''s'
						|| ' walsender in pg_stat_replication; this standby''s own dead tuple counts do not show it)'
				   WHEN params.standby
				   THEN '; this is a standby with hot_standby_feedback off: it does not hold back the primary''s horizon,'
						|| ' replay of the primary''s cleanup waits for it or cancels it (max_standby_streaming_delay)'
				   ELSE CASE WHEN h.kind = 'standby feedback' OR (h.kind = 'replication slot' AND h.datname IS NULL)
							 THEN '; queries on that standby hold it through hot_standby_feedback'
								  || ' (pg_contention_horizon on the standby names them)'
							 ELSE '' END
						|| coalesce((SELECT CASE WHEN d.read = 0
												 THEN '; the dead tuples of database ' || d.unread_names
													  || ' cannot be read from database ' || pg_catalog.current_database()
													  || ' before PostgreSQL 15 (pg_contention_findings there counts them)'
												 ELSE '; the tables of '
													  || CASE WHEN d.all_databases AND d.databases > 1 AND d.read = d.databases
															  THEN 'all ' || d.databases || ' databases'
															  WHEN d.read > 1 THEN 'databases ' || d.read_names
															  ELSE 'database ' || d.read_names END
													  || ' hold ' || pg_catalog.to_char(d.dead_tuples, 'FM999,999,999,990') || ' dead tuples'
													  || CASE WHEN d.read < d.databases
															  THEN ' (those of ' || d.unread_names || ' cannot be read from here before PostgreSQL 15)'
															  ELSE '' END END
									   FROM held_dead AS d WHERE d.culprit_key = h.culprit_key), '') END
		   || CASE WHEN (SELECT count(*) FROM index_findings AS f WHERE f.details -> 'holder' ->> 'holder' = h.holder) > 0
				   THEN '; it keeps the dead index entries of '
						|| (SELECT count(*) FROM index_findings AS f WHERE f.details -> 'holder' ->> 'holder' = h.holder)
						|| ' dead_tuple_index_scan finding(s)'
				   ELSE '' END || '.'
		   || coalesce(' ' || (SELECT pb.sentence FROM paid_by AS pb WHERE pb.culprit = h.culprit_key), '') AS evidence,
		   CASE h.kind
				WHEN 'backend' THEN
					CASE WHEN h.state LIKE 'idle in transaction%'
						 THEN 'End the transaction: have the application commit, or SELECT pg_terminate_backend(' || h.pid
							  || '); idle_in_transaction_session_timeout keeps it from recurring.'
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
					|| pg_catalog.quote_literal(h.holder) || '); otherwise get its consumer running again.'
				WHEN 'prepared transaction' THEN
					'Finish it: COMMIT PREPARED ' || pg_catalog.quote_literal(h.holder) || ' or ROLLBACK PREPARED '
					|| pg_catalog.quote_literal(h.holder) || ' (whoever prepared it should decide which).'
				WHEN 'standby feedback' THEN
					'A query on the standby' || coalesce(' (application ' || nullif(h.application_name, '') || ')', '')
					|| ' holds it through hot_standby_feedback: find it in pg_contention_horizon on the standby and end it; with hot_standby_feedback = off such queries get cancelled instead.'
				ELSE 'End it.' END AS advice,
		   jsonb_build_object('kind', h.kind, 'holder', h.holder, 'pid', h.pid, 'database', h.datname,
							  'xmin', h.xmin::text, 'xmin_age', h.xmin_age,
							  'held_seconds', pg_catalog.round(pg_catalog.date_part('epoch', h.held_for)::numeric),
							  'catalog_only', h.catalog_only,
							  -- a standby's own counts say nothing of what it holds
							  'dead_tuples', CASE WHEN NOT params.standby
												  THEN (SELECT d.dead_tuples FROM held_dead AS d WHERE d.culprit_key = h.culprit_key) END,
							  'dead_tuples_databases', CASE WHEN NOT params.standby
															THEN (SELECT d.read_list FROM held_dead AS d WHERE d.culprit_key = h.culprit_key) END,
							  'index_findings', (SELECT coalesce(jsonb_agg(f.details -> 'indexrelid'), '[]')
												   FROM index_findings AS f
												  WHERE f.details -> 'holder' ->> 'holder' = h.holder)) AS details,
		   params.now - h.held_for AS since
	  FROM root_holders AS h, params
	 WHERE h.blocks_cleanup
)
SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, f.details, f.since
  FROM horizon_findings AS f;
END
$$;
