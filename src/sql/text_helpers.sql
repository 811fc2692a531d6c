-- Text helpers for the findings and the report.  PL/pgSQL, not SQL: a
-- SQL function whose body reads FROM a subquery is not inlined, so each
-- place a query calls it was parsed, planned and started again at every
-- execution of that query (and its statement counted as a nested one);
-- PL/pgSQL evaluates these expressions directly and keeps them for the
-- session.

-- A duration as a DBA reads it: "35 s", "14 min", "2 h 5 min".
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_duration(duration interval)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	s numeric := greatest(pg_catalog.date_part('epoch', duration), 0)::numeric;
BEGIN
	RETURN CASE
		WHEN s < 60 THEN round(s) || ' s'
		WHEN s < 600 THEN floor(s / 60) || ' min'
			|| CASE WHEN floor(s) % 60 > 0 THEN ' ' || floor(s) % 60 || ' s' ELSE '' END
		WHEN s < 3600 THEN round(s / 60) || ' min'
		WHEN s < 86400 THEN floor(s / 3600) || ' h ' || floor(s / 60) % 60 || ' min'
		ELSE floor(s / 86400) || ' d ' || floor(s / 3600) % 24 || ' h'
	END;
END
$$;

-- A statement's text on one line, cut to 60 characters.
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_shorten(query text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t text := pg_catalog.btrim(pg_catalog.regexp_replace(query, '\s+', ' ', 'g'));
BEGIN
	RETURN CASE WHEN pg_catalog.length(t) > 60 THEN pg_catalog.left(t, 57) || '...' ELSE t END;
END
$$;

-- A finding's text without the constants of its worst execution ("(the
-- worst execution ran with $1 = 7)", "; the worst execution ran with ..."):
-- the exact clause the rule wrote, from the literals in its details, so
-- that no constant of a statement is cut in two.  Reports show it so unless
-- asked for values (pg_contention_report(with_values), the client's
-- --with-values).  NULL details: the text as it is.
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_without_values(finding_text text, details jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	literals text := details #>> '{worst,literals}';
BEGIN
	IF literals IS NULL THEN
		RETURN finding_text;
	END IF;
	RETURN pg_catalog.replace(pg_catalog.replace(finding_text,
			   ' (the worst execution ran with ' || literals || ')', ''),
		   '; the worst execution ran with ' || literals, '');
END
$$;
