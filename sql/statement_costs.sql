--
-- What pg_contention_statements says about an execution's cost: rows and
-- buffers of top-level executions, how close its transactions came to a
-- subtransaction-cache overflow, savepoint statements as calls, and
-- cursors under their own query ids.
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
CREATE TABLE sc_rows (id integer PRIMARY KEY, v integer);
INSERT INTO sc_rows SELECT i, 0 FROM generate_series(1, 1000) i;
VACUUM ANALYZE sc_rows;
SELECT pg_contention_reset();

-- Rows and buffers: a lookup of 10 rows by the primary key.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM (SELECT * FROM sc_rows WHERE id <= 10) AS s;
SELECT * FROM sc_rows WHERE id <= 10 \g /dev/null
SELECT * FROM sc_rows WHERE id <= 10 \g /dev/null
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT calls, rows, shared_blks_hit + shared_blks_read > 0 AS used_buffers,
	   blks_per_row = (shared_blks_hit + shared_blks_read)::double precision / rows AS per_row_ok
  FROM pg_contention_statements WHERE query = 'SELECT * FROM sc_rows WHERE id <= $1';

-- Statements inside a function have calls, but rows and buffers only at
-- top level (the top-level statement's buffers include the function's).
CREATE FUNCTION sc_inner() RETURNS bigint LANGUAGE sql AS
	'SELECT sum(v) FROM sc_rows WHERE id > 990';
SELECT sc_inner();
SELECT calls, rows, shared_blks_hit + shared_blks_read AS buffers
  FROM pg_contention_statements WHERE query = 'SELECT sum(v) FROM sc_rows WHERE id > $1';
SELECT calls, rows, shared_blks_hit + shared_blks_read > 0 AS used_buffers
  FROM pg_contention_statements WHERE query LIKE 'SELECT sc_inner()%';

-- A batch of 50 savepoints, each with a write: 50 subtransaction XIDs
-- cached, more than the warning level (48), no overflow.
BEGIN;
\set ECHO none
\o /dev/null
SELECT 'SAVEPOINT s' || i || '; UPDATE sc_rows SET v = v + 1 WHERE id = ' || i || ';'
  FROM generate_series(1, 50) i \gexec
\o
\set ECHO all
SELECT max(id) FROM sc_rows WHERE v > 0;
COMMIT;
-- (PostgreSQL 13 keys statements by their text: one row per constant there.)
SELECT sum(calls) AS calls, max(max_subxacts) AS max_subxacts,
	   sum(near_overflow_calls) AS near_overflow_calls, sum(overflow_events) AS overflow_events
  FROM pg_contention_statements WHERE query = 'UPDATE sc_rows SET v = v + $1 WHERE id = $2';
SELECT calls, max_subxacts, near_overflow_calls
  FROM pg_contention_statements WHERE query = 'SELECT max(id) FROM sc_rows WHERE v > $1';
SELECT count(*) AS overflow_events FROM pg_contention_overflow_events;
SELECT sum(calls) AS savepoints
  FROM pg_contention_statements WHERE query LIKE 'SAVEPOINT s%';
-- Numbered names are one row, shown as their pattern: its count is the
-- pattern's, not one name's.
SELECT query, calls FROM pg_contention_statements WHERE query LIKE 'SAVEPOINT s%';

-- A driver that wraps every statement in a savepoint (PgJDBC's
-- autosave=always): the savepoint statements are counted as calls.
BEGIN;
\set ECHO none
\o /dev/null
SELECT 'SAVEPOINT PGJDBC_AUTOSAVE; SELECT v FROM sc_rows WHERE id = ' || i
	   || '; RELEASE SAVEPOINT PGJDBC_AUTOSAVE;'
  FROM generate_series(1, 20) i \gexec
\o
\set ECHO all
SAVEPOINT PGJDBC_AUTOSAVE;
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT PGJDBC_AUTOSAVE;
COMMIT;
SELECT query, calls, max_subxacts FROM pg_contention_statements
 WHERE query ~ '^(SAVEPOINT|RELEASE|ROLLBACK TO) ' AND query ~ 'PGJDBC_AUTOSAVE' ORDER BY query;

-- Cursors have identities: each DECLARE is its own statement.
CREATE TABLE sc_other (id integer PRIMARY KEY);
INSERT INTO sc_other SELECT generate_series(1, 100);
BEGIN;
DECLARE c1 CURSOR FOR SELECT * FROM sc_rows WHERE id < 50;
DECLARE c2 CURSOR FOR SELECT * FROM sc_other WHERE id < 50;
DECLARE c3 CURSOR FOR SELECT count(*) FROM sc_rows;
DECLARE c4 CURSOR FOR SELECT count(*) FROM sc_other;
FETCH 2 FROM c1;
FETCH 2 FROM c2;
FETCH 2 FROM c3;
FETCH 2 FROM c4;
COMMIT;
SELECT query, calls, query_id <> 0 AS has_id FROM pg_contention_statements
 WHERE query LIKE 'DECLARE%' ORDER BY query;

-- A cursor's rows are summed over its fetches, and the statements run
-- between them are not its buffers: a sequential count of a 200-page
-- table twice between three fetches of 10 rows by the primary key.
CREATE TABLE sc_wide (id integer, pad text);
INSERT INTO sc_wide SELECT i, repeat('x', 500) FROM generate_series(1, 3000) i;
VACUUM ANALYZE sc_wide;
BEGIN;
DECLARE c5 CURSOR FOR SELECT * FROM sc_rows WHERE id > 500 ORDER BY id;
FETCH 10 FROM c5 \g /dev/null
SELECT count(*) FROM sc_wide WHERE pad <> 'y';
FETCH 10 FROM c5 \g /dev/null
SELECT count(*) FROM sc_wide WHERE pad <> 'y';
FETCH 10 FROM c5 \g /dev/null
CLOSE c5;
COMMIT;
SELECT c.rows AS cursor_rows,
	   c.shared_blks_hit + c.shared_blks_read < 50 AS cursor_buffers_its_own,
	   w.calls AS scans, w.shared_blks_hit + w.shared_blks_read >= 2 * 200 AS scans_buffers_theirs
  FROM pg_contention_statements AS c, pg_contention_statements AS w
 WHERE c.query LIKE 'DECLARE c5%' AND w.query = 'SELECT count(*) FROM sc_wide WHERE pad <> $1';
SELECT count(*) AS zero_id_rows FROM pg_contention_statements WHERE query_id = 0;

DROP FUNCTION sc_inner();
DROP TABLE sc_rows, sc_other, sc_wide;
