--
-- Forget all statements, events, the wait profile and the history
-- (superuser, or an explicit GRANT).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_contention_reset'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

REVOKE ALL ON FUNCTION @extschema@.pg_contention_reset() FROM PUBLIC;
