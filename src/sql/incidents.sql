--
-- Incidents (1.4): what the incidents worker opened, escalated and closed,
-- with the evidence frozen at the peak (see doc/incidents.md).  Texts are
-- masked for roles without pg_read_all_stats, each frozen statement and
-- holder by the role it came from.  details is the costly column (a
-- full incident's is about 40 kB of JSON to parse): without with_details
-- it is NULL, and incident (an id, else 0 for all) reads one.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_incidents(
	with_details boolean DEFAULT true,
	incident bigint DEFAULT 0,
	OUT id bigint,
	OUT problem text,
	OUT peak_severity text,
	OUT subject text,
	OUT opened timestamp with time zone,
	OUT peak timestamp with time zone,
	OUT closed timestamp with time zone,
	OUT evidence text,
	OUT resolution text,
	OUT details jsonb,
	OUT severity text,
	OUT advice text,
	OUT last_seen timestamp with time zone
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_incidents'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE OR REPLACE VIEW @extschema@.pg_contention_incidents AS
	SELECT * FROM @extschema@.pg_contention_incidents(true, 0::pg_catalog.int8);

GRANT SELECT ON @extschema@.pg_contention_incidents TO PUBLIC;
