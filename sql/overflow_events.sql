--
-- Overflow events recorded by the overflowing backend itself: one per
-- top-level transaction, naming the statement that overflowed the cache,
-- for plain savepoints, PL/pgSQL EXCEPTION loops, nested savepoints and
-- prepared statements.
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
CREATE TABLE ev_rows (id integer);
SELECT pg_contention_reset();

CREATE VIEW my_events AS
	SELECT pid = pg_backend_pid() AS own_pid, usename = current_user AS usename_ok,
		   top_xid IS NOT NULL AS has_xid, nesting_depth,
		   query, query_id IS NOT NULL AS has_query_id,
		   nested_query_id IS NOT NULL AS has_nested_query_id,
		   nested_query_id IS DISTINCT FROM query_id AS nested_differs
	  FROM pg_contention_overflow_events;

-- 64 savepoints fill the cache without overflowing it: nothing recorded.
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('INSERT INTO ev_rows VALUES (%s)', i)
  FROM generate_series(1, 64) AS i \gexec
\set ECHO all
COMMIT;
SELECT count(*) AS events FROM pg_contention_overflow_events;

-- 70 savepoints: one event (not six), naming the 65th INSERT at depth 65.
SET application_name = 'pgc_regress_events';
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('INSERT INTO ev_rows VALUES (%s)', i)
  FROM generate_series(1, 70) AS i \gexec
\set ECHO all
COMMIT;
SELECT * FROM my_events;
SELECT application_name FROM pg_contention_overflow_events;
-- The statement that caused it is counted.
-- (One statement from PostgreSQL 14 on; one per constant on 13.)
SELECT sum(calls) >= 70 AS called, sum(overflow_events) AS overflow_events
  FROM pg_contention_statements WHERE query LIKE 'INSERT INTO ev_rows VALUES (%)';
RESET application_name;

-- A PL/pgSQL loop whose body is a BEGIN ... EXCEPTION block that writes:
-- the event names the top-level SELECT, and the INSERT inside the function
-- as the nested statement, at depth 1.
CREATE FUNCTION ev_exception_loop(n integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		BEGIN
			INSERT INTO ev_rows VALUES (i);
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
	END LOOP;
END
$$;
SELECT pg_contention_reset();
BEGIN;
SELECT ev_exception_loop(70);
COMMIT;
SELECT * FROM my_events;
SELECT overflow_events FROM pg_contention_statements WHERE query = 'SELECT ev_exception_loop($1)';

-- An INSERT that fails after its subtransaction took the 65th XID (the
-- heap tuple is written, then the unique index rejects it): no statement
-- end sees the overflow, the subtransaction's abort does, and the event
-- names the top-level statement with no nested statement.
CREATE TABLE ev_unique (id integer PRIMARY KEY);
INSERT INTO ev_unique VALUES (65);
CREATE FUNCTION ev_failing_loop(n integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		BEGIN
			INSERT INTO ev_unique VALUES (i);
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
	END LOOP;
END
$$;
SELECT pg_contention_reset();
BEGIN;
SELECT ev_failing_loop(65);
SELECT subxact_count, subxact_overflowed FROM pg_contention_subxact WHERE pid = pg_backend_pid();
COMMIT;
SELECT * FROM my_events;

-- Nested savepoints where only the innermost writes: every level takes an
-- XID, and the INSERT at depth 70 overflows the cache.
SELECT pg_contention_reset();
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT n%s', i) FROM generate_series(1, 70) AS i \gexec
\set ECHO all
INSERT INTO ev_rows VALUES (0);
COMMIT;
SELECT * FROM my_events;

-- A prepared statement: the event names the EXECUTE the client sent, and
-- the prepared INSERT as the nested statement.
SELECT pg_contention_reset();
PREPARE ev_ins(integer) AS INSERT INTO ev_rows VALUES ($1);
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('EXECUTE ev_ins(%s)', i)
  FROM generate_series(1, 70) AS i \gexec
\set ECHO all
COMMIT;
SELECT * FROM my_events;
DEALLOCATE ev_ins;

-- A second overflowing transaction records a second event.
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('INSERT INTO ev_rows VALUES (%s)', i)
  FROM generate_series(1, 66) AS i \gexec
\set ECHO all
ROLLBACK;
SELECT count(*) AS events FROM pg_contention_overflow_events;
SELECT statements_max, events_max, events_written, events_dropped FROM pg_contention_info;

-- Reset clears events and counters.
SELECT pg_contention_reset();
SELECT count(*) AS events FROM pg_contention_overflow_events;
SELECT events_written, events_dropped, statement_evictions FROM pg_contention_info;

DROP VIEW my_events;
DROP FUNCTION ev_exception_loop(integer);
DROP FUNCTION ev_failing_loop(integer);
DROP TABLE ev_rows;
DROP TABLE ev_unique;
