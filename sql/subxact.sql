--
-- pg_contention_subxact seen from the backend's own transaction: the count of
-- cached subtransaction XIDs in its PGPROC and the overflow flag.
-- (Savepoint scripts are generated with \gexec; their echo is turned off.)
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
CREATE TABLE subxact_rows (id integer);

CREATE VIEW my_subxact AS
	SELECT subxact_count, subxact_overflowed, top_xid IS NOT NULL AS has_xid,
		   backend_xmin IS NOT NULL AS has_xmin, state, xact_start IS NOT NULL AS has_xact_start,
		   (query_id IS NOT NULL) = (current_setting('server_version_num')::int >= 140000) AS query_id_ok,
		   query LIKE 'SELECT%' AS shows_query
	  FROM pg_contention_subxact
	 WHERE pid = pg_backend_pid();

-- A lone SELECT is a transaction too, with nothing cached.
SELECT * FROM my_subxact;

-- Ten savepoints that each write: ten cached XIDs, no overflow.
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('INSERT INTO subxact_rows VALUES (%s)', i)
  FROM generate_series(1, 10) AS i \gexec
\set ECHO all
SELECT * FROM my_subxact;
-- Rolling back to a savepoint drops the XIDs of the subtransactions it aborts.
ROLLBACK TO SAVEPOINT s6;
SELECT subxact_count, subxact_overflowed FROM my_subxact;
COMMIT;

-- A savepoint that does not write takes no XID.
BEGIN;
SAVEPOINT quiet;
SELECT count(*) > 0 AS has_rows FROM subxact_rows;
SELECT subxact_count, subxact_overflowed, has_xid FROM my_subxact;
COMMIT;

-- Seventy savepoints that each write: the cache holds 64 and overflows.
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('INSERT INTO subxact_rows VALUES (%s)', i)
  FROM generate_series(1, 70) AS i \gexec
\set ECHO all
SELECT * FROM my_subxact;
-- Once overflowed, a rollback does not clear the flag (the server cannot
-- know which XIDs were lost), but the count shrinks.
ROLLBACK TO SAVEPOINT s60;
SELECT subxact_count, subxact_overflowed FROM my_subxact;
COMMIT;

-- The next transaction starts clean.
SELECT subxact_count, subxact_overflowed, has_xid FROM my_subxact;

-- Sixty-four fill the cache exactly: no overflow yet.  The sixty-fifth does.
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT s%s', i), format('INSERT INTO subxact_rows VALUES (%s)', i)
  FROM generate_series(1, 64) AS i \gexec
\set ECHO all
SELECT subxact_count, subxact_overflowed FROM my_subxact;
SAVEPOINT s65;
INSERT INTO subxact_rows VALUES (65);
SELECT subxact_count, subxact_overflowed FROM my_subxact;
ROLLBACK;

-- Nested savepoints where only the innermost writes: every parent gets an
-- XID first, so 70 levels overflow as well.
BEGIN;
\set ECHO none
SELECT format('SAVEPOINT n%s', i) FROM generate_series(1, 20) AS i \gexec
\set ECHO all
INSERT INTO subxact_rows VALUES (0);
SELECT subxact_count, subxact_overflowed FROM my_subxact;
\set ECHO none
SELECT format('SAVEPOINT n%s', i) FROM generate_series(21, 70) AS i \gexec
\set ECHO all
INSERT INTO subxact_rows VALUES (0);
SELECT subxact_count, subxact_overflowed FROM my_subxact;
COMMIT;

-- A PL/pgSQL loop whose body is a BEGIN ... EXCEPTION block that writes:
-- every block entry is a subtransaction.
CREATE FUNCTION insert_in_exception_blocks(n integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		BEGIN
			INSERT INTO subxact_rows VALUES (i);
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
	END LOOP;
END
$$;

BEGIN;
SELECT insert_in_exception_blocks(30);
SELECT subxact_count, subxact_overflowed FROM my_subxact;
SELECT insert_in_exception_blocks(40);
SELECT subxact_count, subxact_overflowed FROM my_subxact;
COMMIT;

-- The view's columns, for the documentation.
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_contention_subxact'::regclass AND attnum > 0
 ORDER BY attnum;

DROP FUNCTION insert_in_exception_blocks(integer);
DROP VIEW my_subxact;
DROP TABLE subxact_rows;
