--
-- pg_contention_statements, pg_contention_info and pg_contention_reset:
-- what a statement entry holds, who may reset, what others see.
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
CREATE TABLE st_rows (id integer);
SELECT pg_contention_reset();

-- Every execution counts, with its own query id; constants do not split a
-- statement (PostgreSQL 14 and later; on 13 the id is a hash of the text).
SELECT count(*) FROM st_rows WHERE id = 1;
SELECT count(*) FROM st_rows WHERE id = 1;
SELECT count(*) FROM st_rows WHERE id = 1;
SELECT calls, suboverflowed_calls, standby_calls, overflow_events,
	   usename = current_user AS usename_ok, datname = current_database() AS datname_ok,
	   first_seen <= last_seen AS times_ok, query_id IS NOT NULL AS has_query_id
  FROM pg_contention_statements
 WHERE query = 'SELECT count(*) FROM st_rows WHERE id = $1';

-- Statements inside functions count with their own query id.
CREATE FUNCTION st_inner() RETURNS bigint LANGUAGE sql AS
	'SELECT count(*) FROM st_rows WHERE id > 100';
SELECT st_inner() FROM generate_series(1, 3);
SELECT calls > 0 AS inner_counted FROM pg_contention_statements
 WHERE query = 'SELECT count(*) FROM st_rows WHERE id > $1';

-- Turning tracking off stops counting.
SET pg_contention.track_statements = off;
SELECT count(*) FROM st_rows WHERE id = 1;
RESET pg_contention.track_statements;
SELECT calls FROM pg_contention_statements
 WHERE query = 'SELECT count(*) FROM st_rows WHERE id = $1';

-- Only superusers may change it.
CREATE ROLE regress_pgc_user;
SET ROLE regress_pgc_user;
SET pg_contention.track_statements = off;
RESET ROLE;

-- Reset is not for PUBLIC.
SET ROLE regress_pgc_user;
\set VERBOSITY sqlstate
SELECT pg_contention_reset();
\set VERBOSITY default
-- Others' statements: counters visible, query id and text masked.
SELECT count(*) > 0 AS sees_rows, bool_and(query = '<insufficient privilege>') AS text_masked,
	   bool_and(query_id IS NULL) AS id_masked
  FROM pg_contention_statements WHERE usename <> 'regress_pgc_user';
-- Its own statements are visible to it.
SELECT count(*) FROM pg_class WHERE relname = 'st_rows';
SELECT query FROM pg_contention_statements
 WHERE usename = 'regress_pgc_user' AND query LIKE '%relname%';
RESET ROLE;

-- An explicit grant allows reset.
GRANT EXECUTE ON FUNCTION pg_contention_reset() TO regress_pgc_user;
SET ROLE regress_pgc_user;
SELECT pg_contention_reset();
RESET ROLE;
SELECT count(*) <= 2 AS nearly_empty FROM pg_contention_statements;

-- The view's columns.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'pg_contention_statements'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'pg_contention_overflow_events'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'pg_contention_info'::regclass AND attnum > 0 ORDER BY attnum;


-- pg_contention_recent keeps one copy of the store for the rest of the
-- client's statement (the findings' rules each read it), never longer:
-- the next statement of the same transaction sees what ran in between.
BEGIN;
SELECT count(*) AS before FROM pg_contention_recent(300) WHERE query = 'SELECT $1 AS between_reads';
SELECT 4242 AS between_reads;
SELECT count(*) AS after FROM pg_contention_recent(300) WHERE query = 'SELECT $1 AS between_reads';
COMMIT;

DROP FUNCTION st_inner();
DROP TABLE st_rows;
REVOKE EXECUTE ON FUNCTION pg_contention_reset() FROM regress_pgc_user;
DROP ROLE regress_pgc_user;
