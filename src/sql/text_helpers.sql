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
