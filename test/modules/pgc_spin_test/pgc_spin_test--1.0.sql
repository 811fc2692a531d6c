/* pgc_spin_test--1.0.sql */

\echo Use "CREATE EXTENSION pgc_spin_test" to load this file. \quit

CREATE FUNCTION pgc_spin_test(seconds double precision)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgc_spin_test'
LANGUAGE C STRICT VOLATILE;
