--
-- Live subtransaction state of every backend with a transaction open.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_subxact(
	OUT pid integer,
	OUT datid oid,
	OUT usesysid oid,
	OUT application_name text,
	OUT backend_type text,
	OUT state text,
	OUT xact_start timestamp with time zone,
	OUT top_xid xid,
	OUT backend_xmin xid,
	OUT subxact_count integer,
	OUT subxact_overflowed boolean,
	OUT query_id bigint,
	OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_subxact'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE OR REPLACE VIEW @extschema@.pg_contention_subxact AS
	SELECT s.pid,
		   d.datname,
		   r.rolname AS usename,
		   s.application_name,
		   s.backend_type,
		   s.state,
		   s.xact_start,
		   s.top_xid,
		   s.backend_xmin,
		   s.subxact_count,
		   s.subxact_overflowed,
		   s.query_id,
		   s.query
	  FROM @extschema@.pg_contention_subxact() AS s
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.datid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.usesysid;

GRANT SELECT ON @extschema@.pg_contention_subxact TO PUBLIC;
