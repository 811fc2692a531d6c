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
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH params AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_findings_params(window_length)
),
dead_here AS MATERIALIZED (
	SELECT t.relid, t.schemaname, t.relname, t.n_dead_tup, t.n_live_tup,
		   greatest(t.last_vacuum, t.last_autovacuum) AS last_vacuum
	  FROM pg_catalog.pg_stat_user_tables AS t
),
root_holders AS MATERIALIZED (
	SELECT * FROM @extschema@.pg_contention_horizon_roots(window_length)
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
		   'Its xmin is ' || pg_catalog.to_char(h.xmin_age, 'FM999,999,999,990') || ' transactions old'
		   || coalesce(', held for ' || @extschema@.pg_contention_duration(h.held_for), '')
		   || CASE WHEN h.catalog_only THEN '; it holds back the removal of dead catalog rows only'
				   ELSE '; the tables of database ' || pg_catalog.current_database() || ' hold '
						|| pg_catalog.to_char((SELECT coalesce(sum(t.n_dead_tup), 0) FROM dead_here AS t), 'FM999,999,999,990')
						|| ' dead tuples' END
		   || CASE WHEN (SELECT count(*) FROM index_findings AS f WHERE f.details -> 'holder' ->> 'holder' = h.holder) > 0
				   THEN '; it keeps the dead index entries of '
						|| (SELECT count(*) FROM index_findings AS f WHERE f.details -> 'holder' ->> 'holder' = h.holder)
						|| ' dead_tuple_index_scan finding(s)'
				   ELSE '' END || '.'
		   || coalesce(' ' || @extschema@.pg_contention_victims_text(window_length, 'dead_index_entries',
																	  jsonb_build_array(h.pid)), '') AS evidence,
		   CASE h.kind
				WHEN 'backend' THEN
					CASE WHEN h.state LIKE 'idle in transaction%'
						 THEN 'End the transaction: have the application commit, or SELECT pg_terminate_backend(' || h.pid
							  || '); idle_in_transaction_session_timeout keeps it from recurring.'
						 ELSE 'If the statement can go, SELECT pg_cancel_backend(' || h.pid
							  || ') (pg_terminate_backend ends the session); long reports belong on a standby or under statement_timeout.' END
				WHEN 'replication slot' THEN
					'If nothing consumes slot ' || h.holder || ' any more, drop it: SELECT pg_drop_replication_slot('
					|| pg_catalog.quote_literal(h.holder) || '); otherwise get its consumer running again.'
				WHEN 'prepared transaction' THEN
					'Finish it: COMMIT PREPARED ' || pg_catalog.quote_literal(h.holder) || ' or ROLLBACK PREPARED '
					|| pg_catalog.quote_literal(h.holder) || ' (whoever prepared it should decide which).'
				WHEN 'standby feedback' THEN
					'A query on the standby holds it through hot_standby_feedback: find it in pg_contention_horizon on the standby and end it; with hot_standby_feedback = off such queries get cancelled instead.'
				ELSE 'End it.' END AS advice,
		   jsonb_build_object('kind', h.kind, 'holder', h.holder, 'pid', h.pid, 'database', h.datname,
							  'xmin', h.xmin::text, 'xmin_age', h.xmin_age,
							  'held_seconds', pg_catalog.round(pg_catalog.date_part('epoch', h.held_for)::numeric),
							  'catalog_only', h.catalog_only,
							  'dead_tuples', (SELECT coalesce(sum(t.n_dead_tup), 0) FROM dead_here AS t),
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
