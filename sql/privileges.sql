--
-- Other users' statements are masked exactly as pg_stat_activity masks them.
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
CREATE ROLE regress_pgc_reader;
CREATE TABLE priv_rows (id integer);

-- Masked: state, transaction start, query id and query text.  Visible to
-- all: the pid, role, XIDs and the subtransaction cache.
BEGIN;
SAVEPOINT a;
INSERT INTO priv_rows VALUES (1);
SET LOCAL ROLE regress_pgc_reader;
SELECT usename = session_user AS usename_ok, state, xact_start, query_id, query,
	   top_xid IS NOT NULL AS has_xid, subxact_count, subxact_overflowed
  FROM pg_contention_subxact WHERE pid = pg_backend_pid();
-- pg_stat_activity agrees on what is hidden.
SELECT state, xact_start, query FROM pg_stat_activity WHERE pid = pg_backend_pid();
ROLLBACK;

-- pg_read_all_stats sees everything.
GRANT pg_read_all_stats TO regress_pgc_reader;
BEGIN;
SAVEPOINT a;
INSERT INTO priv_rows VALUES (1);
SET LOCAL ROLE regress_pgc_reader;
SELECT state, xact_start IS NOT NULL AS has_xact_start, query LIKE 'SELECT%' AS shows_query,
	   subxact_count
  FROM pg_contention_subxact WHERE pid = pg_backend_pid();
ROLLBACK;

DROP TABLE priv_rows;
DROP ROLE regress_pgc_reader;
