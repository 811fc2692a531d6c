--
-- Statement texts are normalised as pg_stat_statements shows them: each
-- constant replaced by $n, numbered after the $n already in the text.
-- (PostgreSQL 13 keys statements by their text: the rows are summed by text.)
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
CREATE TABLE nz_t (a integer, b text, c numeric);
SELECT pg_contention_reset();

-- Numbers, negative numbers, a binary minus, strings of every kind, casts.
SELECT 42 AS nz_int, -7 AS nz_neg, - 7.5 AS nz_neg_space, 3 - 2 AS nz_minus, 1.5e3, .5;
SELECT 'abc' AS nz_str, E'it\'s' AS nz_escape, $$dollar 'quoted'$$ AS nz_dollar,
	   $tag$with $$ inside$tag$ AS nz_tag, x'1f' AS nz_hex, b'101' AS nz_bit, U&'d\0061t' AS nz_uni,
	   N'national' AS nz_national, U&'d!0061t' UESCAPE '!' AS nz_uescape;
SELECT a FROM nz_t WHERE a = -1 AND b = 'x'::text AND c > 2.5::numeric(10, 2) AND b <> '-1';
-- IN lists, BETWEEN, LIMIT and OFFSET; ORDER BY and GROUP BY positions and
-- type modifiers are not constants (pg_stat_statements keeps them too).
SELECT a, count(*) FROM nz_t WHERE a IN (1, 2, 3) AND c BETWEEN -5 AND 5
 GROUP BY 1 ORDER BY 1 DESC, 2 LIMIT 10 OFFSET 20;
SELECT CAST(b AS varchar(20)) AS nz_cast, a + 1 AS nz_plus FROM nz_t ORDER BY a + 1;
-- Comments and identifiers stay as they are.
SELECT /* 123 'not a constant' */ a AS "nz_quoted 6" FROM nz_t WHERE a = 5;

-- Existing parameters: constants are numbered after the highest one.
PREPARE nz_prep(text, integer) AS SELECT a FROM nz_t WHERE a = $2::integer + 1 AND b = $1::text AND c = 9;
EXECUTE nz_prep('one', 1);
DEALLOCATE nz_prep;

-- A query string of several statements: each its own slice.  (Their
-- results are not shown: psql shows all of them from 15 on, the last one
-- before.)
\o /dev/null
SELECT count(*) AS nz_multi_first FROM nz_t WHERE a = 1 \; SELECT b AS nz_multi_second FROM nz_t WHERE b = 'two' \; SELECT max(c) AS nz_multi_third FROM nz_t WHERE c > -3;
\o

-- Utility statements.
BEGIN;
SAVEPOINT nz_savepoint_1;
SET LOCAL work_mem = '2MB';
RELEASE SAVEPOINT nz_savepoint_1;
COMMIT;

-- A DO block's code is its text (here counted for the overflow it
-- causes); the statements inside it are normalised.
DO $nz$ BEGIN FOR i IN 1 .. 70 LOOP BEGIN INSERT INTO nz_t VALUES (i, 'nz_do', -1); EXCEPTION WHEN others THEN NULL; END; END LOOP; END $nz$;

SELECT query, sum(calls) AS calls FROM pg_contention_statements
 WHERE query ~ '(nz_|NZ_)' AND query !~ 'pg_contention_statements'
 GROUP BY query ORDER BY query COLLATE "C";

-- A long statement is cut at max_query_length (1024 bytes with its
-- terminator) after its constants are replaced: 300 constants of 3 digits.
\set ECHO none
\o /dev/null
SELECT 'SELECT ' || string_agg((100 + i)::text || ' AS nz_long_' || i, ', ') FROM generate_series(1, 300) i \gexec
\o
\set ECHO all
SELECT octet_length(query) AS bytes, left(query, 60) AS starts, right(query, 20) AS ends
  FROM pg_contention_statements WHERE query LIKE 'SELECT $1 AS nz_long_1,%';

-- A constant longer than the limit: the text after it is kept.
SELECT repeat('x', 5000) AS nz_huge_constant, 'after' AS nz_after \g /dev/null
SELECT query FROM pg_contention_statements WHERE query LIKE '%nz_huge_constant%';

-- Multibyte texts are cut at a character boundary (a UTF8 database).
SELECT current_database() AS regress_db \gset
CREATE DATABASE regress_pgc_utf8 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c regress_pgc_utf8
SET client_encoding = 'UTF8';
SET client_min_messages = warning;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION pg_contention;
RESET client_min_messages;
SELECT 'café' AS "nz_été", 1 AS nz_one;
-- "SELECT $1 /*  " is 14 bytes, each é 2: the cut at 1023 bytes falls in
-- the middle of the 505th, which is left out.
\set ECHO none
\o /dev/null
SELECT 'SELECT 12345 /*  ' || repeat('é', 600) || ' */' \gexec
\o
\set ECHO all
SELECT query FROM pg_contention_statements WHERE query LIKE '%nz_été%';
SELECT octet_length(query) AS bytes, length(query) AS characters, right(query, 2) AS ends
  FROM pg_contention_statements WHERE query LIKE 'SELECT $1 /*  é%';
\c :regress_db
DROP DATABASE regress_pgc_utf8;
DROP TABLE nz_t;

-- A text that does not scan (an unterminated literal, as a text cut at
-- max_query_length can be): the scanner's syntax error is caught, what
-- came before it is normalised and the rest shown as it is.
SELECT pg_contention_normalize($q$SELECT 1, 'abc$q$) AS cut;
