--
-- The sampler's wait profile: samples per database, user, statement and wait event.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_waits(
	OUT dbid oid,
	OUT query_id bigint,
	OUT wait_event_type text,
	OUT wait_event text,
	OUT samples bigint,
	OUT share double precision,
	OUT roleid oid
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_waits'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW @extschema@.pg_contention_waits AS
	SELECT d.datname,
		   r.rolname AS usename,
		   w.dbid,
		   w.query_id,
		   w.wait_event_type,
		   w.wait_event,
		   w.samples,
		   w.share
	  FROM @extschema@.pg_contention_waits() AS w
	  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = w.dbid
	  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = w.roleid;

GRANT SELECT ON @extschema@.pg_contention_waits TO PUBLIC;
