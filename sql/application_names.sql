--
-- A statement is counted under the application_name it ran with, however
-- the name changed since the last counted statement: a longer or shorter
-- name with the same beginning, the empty name, and a pool's checkout
-- (RESET ALL and a new name in one query string, two assignments between
-- two counted statements).
--
SET client_min_messages = warning;
-- pg_contention warns when other roles may create objects in its schema
-- (PUBLIC in public on PostgreSQL 13 and 14): none may here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS pg_contention;
RESET client_min_messages;
SELECT pg_contention_reset();
SET application_name = 'pgc_app_checkout_name_1';
SELECT 1 AS app_probe;
SELECT 1 AS app_probe;
RESET ALL \; SET application_name = 'pgc_app_checkout_name_2';
SELECT 1 AS app_probe;
SET application_name = 'pgc_app_checkout_name_2_and_longer_than_sixteen_bytes';
SELECT 1 AS app_probe;
SET application_name = 'pgc_app_checkout_name_';
SELECT 1 AS app_probe;
SET application_name = '';
SELECT 1 AS app_probe;
-- Past NAMEDATALEN - 1 bytes a name is cut, as pg_stat_activity shows it.
SET application_name = 'pgc_app_0123456789012345678901234567890123456789012345678901234567890123456789';
SELECT 1 AS app_probe;
SELECT 1 AS app_probe;
RESET application_name;
SELECT application_name, calls
  FROM pg_contention_statements
 WHERE query = 'SELECT $1 AS app_probe'
 ORDER BY application_name COLLATE "C";
