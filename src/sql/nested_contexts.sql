--
-- The function each statement that met dead entries inside a function ran
-- in (1.4), as the backend that ran it noted it in its own database: the
-- innermost line of the server's error context stack that names a
-- PL/pgSQL or SQL function ("PL/pgSQL function orders_of(integer) line 3
-- at RETURN QUERY"), keyed by the nested statement's query id.  several:
-- the statement was also noted in another place.  Another database's only
-- for roles with pg_read_all_stats; and, as pg_stat_statements, another
-- role's query id (NULL) and function (<insufficient privilege>) only for
-- pg_read_all_stats and that role's members (userid: the role that ran
-- it).  trigger: for a trigger function, the trigger that fired it
-- ("items_audit on public.items"), NULL for a plain function.  Noted too
-- for a statement whose transaction overflowed its subtransaction cache
-- inside a function.  Kept with the index names, at most
-- index_names_max in all (pg_contention_info counts the evictions).
--
CREATE OR REPLACE FUNCTION @extschema@.pg_contention_nested_contexts(
	OUT dbid oid,
	OUT query_id bigint,
	OUT context text,
	OUT several boolean,
	OUT noted_at timestamp with time zone,
	OUT userid oid,
	OUT trigger text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_contention_nested_contexts'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
