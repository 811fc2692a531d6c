--
-- Not an object: the warning every install and update script ends with
-- (1.4; tools/sql-changed.pl carries this file into every update, its
-- statement being in no release's install script) when a role that is no
-- superuser may create objects in the extension's schema: PUBLIC in
-- schema public on PostgreSQL 13 and 14 and on databases upgraded from
-- them, the database's owner in public from 15 on when it is no
-- superuser, a role that owns the schema or was granted CREATE there.  The extension's
-- own calls bind only to its objects wherever it is (every argument of
-- its parameter's type, none left to a default), but such a role can
-- make them ambiguous (a function of the same name with one more
-- argument that has a default), which stops the findings and the
-- incidents, and can capture what a user types by hand.  A warning, not
-- an error: refusing would break pg_dump's restore and the update of
-- every installation in such a schema (doc/security.md).  Reads the
-- catalog only, so that nothing planted can fail or capture it.
--
DO $$
DECLARE
	writers text;
	schema_name text;
BEGIN
	-- PUBLIC, or else every role that may log in and is no superuser but
	-- may create there, itself or through a role it is a member of (the
	-- schema's owner too: public belongs to pg_database_owner from
	-- PostgreSQL 15 on, whose member the database's owner is).
	SELECT pg_catalog.quote_ident(n.nspname),
		   CASE WHEN EXISTS (SELECT FROM pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) AS a
							  WHERE a.grantee OPERATOR(pg_catalog.=) 0
								AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE')
				THEN 'PUBLIC'
				-- The roles that are no superuser and may create there
				-- first (a few), then who may log in as one of them: one
				-- pass over the roles each, not one per pair.
				ELSE (WITH creators AS MATERIALIZED (
						  SELECT g.oid FROM pg_catalog.pg_roles AS g
						   WHERE NOT g.rolsuper AND pg_catalog.has_schema_privilege(g.oid, n.oid, 'CREATE'))
					  SELECT pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ', ' ORDER BY r.rolname)
						FROM pg_catalog.pg_roles AS r
					   WHERE r.rolcanlogin AND NOT r.rolsuper
						 AND EXISTS (SELECT FROM creators AS g WHERE pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER'))) END
	  INTO schema_name, writers
	  FROM pg_catalog.pg_extension AS e
	  JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
	 WHERE e.extname OPERATOR(pg_catalog.=) 'pg_contention';
	IF writers IS NOT NULL THEN
		RAISE WARNING 'pg_contention is installed in schema %, where other roles may create objects: %',
			schema_name, writers
			USING DETAIL = 'A function such a role creates there beside the extension''s can stop the findings and the incidents, and capture what a user types by hand.',
				  HINT = pg_catalog.format('Revoke CREATE on schema %s from them, or install pg_contention in a schema of its own: DROP EXTENSION pg_contention; CREATE SCHEMA contention; CREATE EXTENSION pg_contention SCHEMA contention;', schema_name);
	END IF;
END
$$;
