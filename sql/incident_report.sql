--
-- pg_contention_report(window_length, incident): the report of one incident
-- the server kept (incident => N), and its arguments at their edges.  The
-- report of a real incident is tested in t/031_incident_client.pl.
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- One function: window_length first, so that 1.3's positional calls keep
-- their meaning, then incident.
SELECT pg_catalog.pg_get_function_arguments(p.oid) AS arguments
  FROM pg_catalog.pg_proc AS p WHERE p.proname = 'pg_contention_report';
SELECT pg_contention_report() LIKE 'pg_contention report at %' AS live,
	   pg_contention_report('5 min') LIKE 'pg_contention report at %' AS positional,
	   pg_contention_report(NULL, NULL) LIKE 'pg_contention report at %' AS both_null,
	   pg_contention_report(window_length => '1 min') LIKE 'pg_contention report at %' AS named;

-- An incident that does not exist: 22023, with where to find the ids.
SELECT pg_contention_report(incident => 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_contention_report(incident => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_contention_report(incident => -9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_contention_report(NULL, -1);
\echo :LAST_ERROR_SQLSTATE
-- A window and an incident: one or the other.
SELECT pg_contention_report('5 min', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_contention_report(window_length => '1 s', incident => 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
-- The window is still checked as before.
SELECT pg_contention_report('1000 years');
\echo :LAST_ERROR_SQLSTATE
