--
-- Per-statement counters: calls, rows and buffers, calls on suboverflowed
-- snapshots and the pg_subtrans waits sampled for them, the subtransaction
-- cache's high-water mark, calls on a hot standby, overflow events caused;
-- one row per user, database, query id and application (1.4).  With
-- subtrans_only (1.4), only the statements that ran on suboverflowed
-- snapshots or waited on pg_subtrans (what top's statement table shows),
-- without copying every statement of the store.
-- (After the sampler's functions: the view reads the wait profile.)
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_statements(
	subtrans_only boolean DEFAULT false,
	OUT userid oid,
	OUT dbid oid,
	OUT query_id bigint,
	OUT calls bigint,
	OUT suboverflowed_calls bigint,
	OUT standby_calls bigint,
	OUT overflow_events bigint,
	OUT first_seen timestamp with time zone,
	OUT last_seen timestamp with time zone,
	OUT query text,
	OUT rows bigint,
	OUT shared_blks_hit bigint,
	OUT shared_blks_read bigint,
	OUT max_subxacts integer,
	OUT near_overflow_calls bigint,
	OUT application_name text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_statements'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

--
-- The view's rows: the store's statements with their role's and database's
-- names and their pg_subtrans waits.  With subtrans_only, only the
-- statements that ran on suboverflowed snapshots or waited on pg_subtrans
-- (what top's statement table shows): the client reads this, not a copy of
-- its SQL.  PL/pgSQL, so that a session plans the query once (an SQL
-- function with a pinned search_path is planned again at every call).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_statements_view(
	subtrans_only boolean DEFAULT false)
RETURNS TABLE (
	userid oid,
	usename name,
	dbid oid,
	datname name,
	query_id bigint,
	calls bigint,
	"rows" bigint,
	shared_blks_hit bigint,
	shared_blks_read bigint,
	blks_per_row double precision,
	suboverflowed_calls bigint,
	subtrans_wait_samples bigint,
	max_subxacts integer,
	near_overflow_calls bigint,
	overflow_events bigint,
	standby_calls bigint,
	first_seen timestamp with time zone,
	last_seen timestamp with time zone,
	query text,
	application_name text
)
LANGUAGE plpgsql STRICT VOLATILE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
		SELECT s.userid,
			   r.rolname AS usename,
			   s.dbid,
			   d.datname,
			   s.query_id,
			   s.calls,
			   s.rows,
			   s.shared_blks_hit,
			   s.shared_blks_read,
			   -- Operands of one type each: an operator is bound when the
			   -- view is created, and one that needs a cast could be bound to
			   -- an exact match planted in the extension's schema beforehand.
			   ((s.shared_blks_hit::double precision + s.shared_blks_read::double precision)
				/ nullif(s.rows, 0)::double precision) AS blks_per_row,
			   s.suboverflowed_calls,
			   coalesce(w.subtrans_wait_samples, 0) AS subtrans_wait_samples,
			   s.max_subxacts,
			   s.near_overflow_calls,
			   s.overflow_events,
			   s.standby_calls,
			   s.first_seen,
			   s.last_seen,
			   s.query,
			   s.application_name
		  FROM @extschema@.pg_contention_statements(subtrans_only) AS s
		  LEFT JOIN (SELECT p.dbid, p.roleid, p.query_id,
							sum(p.samples)::bigint AS subtrans_wait_samples
					   FROM @extschema@.pg_contention_waits() AS p
					  WHERE p.wait_event_type = 'LWLock'
						AND p.wait_event IN ('SubtransSLRU', 'SubtransBuffer')
					  GROUP BY p.dbid, p.roleid, p.query_id) AS w
			ON w.dbid = s.dbid AND w.roleid = s.userid AND w.query_id = s.query_id
		  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.dbid
		  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.userid;
END
$$;

CREATE OR REPLACE VIEW @extschema@.pg_contention_statements AS
	SELECT s.userid, s.usename, s.dbid, s.datname, s.query_id, s.calls, s."rows",
		   s.shared_blks_hit, s.shared_blks_read, s.blks_per_row, s.suboverflowed_calls,
		   s.subtrans_wait_samples, s.max_subxacts, s.near_overflow_calls,
		   s.overflow_events, s.standby_calls, s.first_seen, s.last_seen, s.query,
		   s.application_name
	  FROM @extschema@.pg_contention_statements_view(false) AS s;

GRANT SELECT ON @extschema@.pg_contention_statements TO PUBLIC;
