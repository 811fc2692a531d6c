--
-- What pg_contention_findings reads of the statement store: each
-- statement's (and each of its indexes') figures in the periods of
-- pg_contention.findings_window that reach into the last window_seconds;
-- with notable_only, only the rows a finding can use.  Per index also the
-- worst execution, the most recent one, and the bad ones (at least
-- pg_contention.dead_visits_warning dead entries); per statement the
-- constants its worst execution ran with, and (1.4) when that execution
-- was nested in a function, the query id of the client statement that
-- called it (worst_caller_query_id).  A statement run by several
-- applications is one row (application_name NULL), or with by_application
-- (1.4) one row per application.  statement_rows and index_rows (1.4)
-- say which rows to give: the statements' (indexrelid NULL), the
-- indexes', or both.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_recent(
	window_seconds integer,
	notable_only boolean DEFAULT false,
	by_application boolean DEFAULT false,
	statement_rows boolean DEFAULT true,
	index_rows boolean DEFAULT true,
	OUT userid oid,
	OUT dbid oid,
	OUT query_id bigint,
	OUT indexrelid oid,
	OUT period_start timestamp with time zone,
	OUT period_end timestamp with time zone,
	OUT calls bigint,
	OUT suboverflowed_calls bigint,
	OUT near_overflow_calls bigint,
	OUT overflow_events bigint,
	OUT max_subxacts integer,
	OUT top_level_calls bigint,
	OUT shared_blks bigint,
	OUT scans bigint,
	OUT entries_read bigint,
	OUT dead_visits bigint,
	OUT query text,
	OUT worst_dead_visits bigint,
	OUT worst_entries_read bigint,
	OUT worst_buffers bigint,
	OUT worst_rows bigint,
	OUT worst_at timestamp with time zone,
	OUT last_dead_visits bigint,
	OUT last_at timestamp with time zone,
	OUT bad_scans bigint,
	OUT bad_dead_visits bigint,
	OUT last_bad_at timestamp with time zone,
	OUT clean_since timestamp with time zone,
	OUT worst_literals text,
	OUT application_name text,
	OUT worst_caller_query_id bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_recent'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
