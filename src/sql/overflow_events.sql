--
-- Subtransaction-cache overflow events: one per top-level transaction whose
-- cache overflowed, naming the statement that was running, and, once that
-- statement ended, how many subtransactions with an XID it opened and how
-- many rows it processed (a function's EXCEPTION block per row shows as
-- one per row).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_overflow_events(
	OUT event_time timestamp with time zone,
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT application_name text,
	OUT top_xid xid,
	OUT query_id bigint,
	OUT nested_query_id bigint,
	OUT nesting_depth integer,
	OUT query text,
	OUT statement_subxacts bigint,
	OUT statement_rows bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_overflow_events'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW @extschema@.pg_contention_overflow_events AS
	SELECT e.event_time,
		   e.pid,
		   d.datname,
		   r.rolname AS usename,
		   e.application_name,
		   e.top_xid,
		   e.query_id,
		   e.nested_query_id,
		   e.nesting_depth,
		   e.query,
		   e.statement_subxacts,
		   e.statement_rows
	  FROM @extschema@.pg_contention_overflow_events() AS e
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = e.datid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = e.usesysid;

GRANT SELECT ON @extschema@.pg_contention_overflow_events TO PUBLIC;
