--
-- Whether the incidents are being kept (1.4): state 'kept', 'off'
-- (pg_contention.incident_interval is 0), 'not running', 'waiting' (the
-- worker waits for the extension in its database) or 'stalled' (no
-- evaluation for three intervals and its 30-second limit), and, when they
-- are not kept, why and what to do.  pg_contention check and incidents
-- read it, so that the worker's silence is never taken for a calm server.
-- Holds no text of any role's.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_incidents_status(
	OUT state text,
	OUT problem text,
	OUT worker_pid integer,
	OUT last_evaluation timestamp with time zone,
	OUT waiting_since timestamp with time zone
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_contention_incidents_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
