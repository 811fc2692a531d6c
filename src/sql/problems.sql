--
-- The problems pg_contention finds (1.4), from the library's one list
-- (src/problem_list.h): their order in the findings within a severity
-- (rank), whether incidents follow them, and whether they are about a
-- held xmin horizon.  The findings' order, the metrics' series and the
-- incidents' rules read it; nothing else names the problems.
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_problems(
	OUT problem text,
	OUT rank integer,
	OUT incidents boolean,
	OUT horizon boolean
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_problems'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE
ROWS 8;
