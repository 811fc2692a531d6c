/*-------------------------------------------------------------------------
 *
 * conn.c
 *		The client's connection: open it with libpq, check that this
 *		database can answer (the extension created at 1.3 or later, the
 *		library preloaded), run a query and turn an error into one line.
 *
 * Used by main.c at start and by top.c to reconnect after a restart.
 *
 * Every round trip begins with the client's settings, local to the
 * transaction the round trip is (one simple Query, or one pipeline with
 * one Sync): search_path empty, so that the server resolves every name the
 * client's statements use in pg_catalog (and the extension's schema, which
 * they name) and never in a schema another role can write (the client
 * runs as a superuser: CVE-2018-1058); a statement timeout; no JIT.  Local,
 * not set once per session: behind a transaction pooler the next round
 * trip may run in another server session, and a session setting would
 * stay behind in this one for the pooler's next client.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <stdlib.h>
#include <string.h>

/*
 * The first line of a libpq or server message, without its trailing
 * newline, as a terminal may show it (a message can quote names and texts
 * from the server: text_shown()).
 */
static char *
first_line(const char *message)
{
	char	   *s = xstrdup(message ? message : "");
	char	   *nl = strchr(s, '\n');
	char	   *shown;

	if (nl)
		*nl = '\0';
	if (strncmp(s, "ERROR:  ", 8) == 0)
		memmove(s, s + 8, strlen(s + 8) + 1);
	if (strncmp(s, "FATAL:  ", 8) == 0)
		memmove(s, s + 8, strlen(s + 8) + 1);
	shown = text_shown(s);
	free(s);
	return shown;
}

/* A message built here, from names the user or the server gave. */
static char *
message_shown(Buf *m)
{
	char	   *shown = text_shown(m->data);

	buf_free(m);
	return shown;
}

/* The settings every round trip begins with (see the file's header). */
#define ROUND_TRIP_SETTINGS \
	"SELECT pg_catalog.set_config('search_path', '', true)," \
	" pg_catalog.set_config('statement_timeout', '30s', true)," \
	" pg_catalog.set_config('jit', 'off', true)"

/* One statement (the last one's result, as PQexec). */
PGresult *
conn_query(Conn *c, const char *sql, char **message)
{
	Buf			all;
	PGresult   *res;
	ExecStatusType st;

	buf_init(&all);
	buf_printf(&all, ROUND_TRIP_SETTINGS "; %s", sql);
	res = PQexec(c->conn, all.data);
	buf_free(&all);
	st = PQresultStatus(res);

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;
	if (message)
		*message = first_line(res ? PQresultErrorMessage(res) : PQerrorMessage(c->conn));
	PQclear(res);
	return NULL;
}

/*
 * The end of a look's results: got of n came.  Fewer, or an error: the
 * first error (or why fewer) into *message, the results kept are freed,
 * and false.
 */
static bool
results_done(Conn *c, char *error, int got, int n, PGresult **res, char **message)
{
	if (error == NULL && got < n)
		error = first_line(PQerrorMessage(c->conn)[0] ? PQerrorMessage(c->conn) :
						   "the server answered fewer statements than were sent");
	if (error != NULL)
	{
		for (int i = 0; i < got; i++)
			PQclear(res[i]);
		*message = error;
		return false;
	}
	return true;
}

/*
 * Several statements in one round trip (one simple Query message, which
 * the server answers statement by statement): their n results, in order,
 * into res.  On an error *message is the first one's (the server runs no
 * statement after a failed one), nothing is kept, and false is returned.
 */
bool
conn_query_many(Conn *c, const char *sql, int n, PGresult **res, char **message)
{
	PGresult   *r;
	int			got = 0;
	bool		settings_done = false;
	char	   *error = NULL;
	Buf			all;
	bool		sent;

	buf_init(&all);
	buf_printf(&all, ROUND_TRIP_SETTINGS "; %s", sql);
	sent = PQsendQuery(c->conn, all.data);
	buf_free(&all);
	if (!sent)
	{
		*message = first_line(PQerrorMessage(c->conn));
		return false;
	}
	while ((r = PQgetResult(c->conn)) != NULL)
	{
		ExecStatusType st = PQresultStatus(r);

		if (error == NULL && got < n &&
			(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK))
		{
			/* The settings' result is not the caller's. */
			if (!settings_done)
			{
				settings_done = true;
				PQclear(r);
				continue;
			}
			res[got++] = r;
			continue;
		}
		if (error == NULL)
			error = first_line(st == PGRES_FATAL_ERROR ? PQresultErrorMessage(r) :
							   "the server answered more statements than were sent");
		PQclear(r);
	}
	return results_done(c, error, got, n, res, message);
}

#ifdef LIBPQ_HAS_PIPELINING
/* FNV-1a: a statement's name is its text's hash, so a name means one text. */
static unsigned long long
text_hash(const char *s)
{
	unsigned long long h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 1099511628211ULL;
	return h;
}

static bool
is_prepared(Conn *c, unsigned long long h)
{
	for (int i = 0; i < c->nprepared; i++)
		if (c->prepared[i] == h)
			return true;
	return false;
}

/*
 * The n statements of one look in one round trip, each prepared once per
 * connection and executed by name (so the server parses and plans it once,
 * not at every refresh): libpq's pipeline mode, one Sync, so they run in
 * one implicit transaction as a simple Query of them all would.  The
 * protocol's named statements, not SQL PREPARE: a pooler that keeps them
 * per client maps them; one that does not loses them or meets another
 * client's, the server says so (26000, 42P05: t/035_pooler.pl), and this
 * connection goes back to conn_query_many for good.  A statement may
 * take one text parameter, $1 (params[i], NULL: none).
 * Results as conn_query_many's.
 */
static bool
query_pipelined(Conn *c, char *const *texts, const char *const *params, int n,
				PGresult **res, char **message, bool *lost)
{
	char		names[16][24];
	bool		parse[16];
	unsigned long long hashes[16];
	int			cmd = 0,		/* the command the next result is of */
				got = 0,
				nulls = 0;
	bool		synced = false;
	char	   *error = NULL;
	PGresult   *r;

	*lost = false;
	if (c->prepared_on != c->conn)
	{
		c->prepared_on = c->conn;
		c->nprepared = 0;
	}
	if (!PQenterPipelineMode(c->conn))
	{
		*lost = true;
		return false;
	}
	PQsendQueryParams(c->conn, ROUND_TRIP_SETTINGS, 0, NULL, NULL, NULL, NULL, 0);
	for (int i = 0; i < n; i++)
	{
		const char *const *param = params && params[i] ? &params[i] : NULL;
		int			nparams = param ? 1 : 0;

		hashes[i] = text_hash(texts[i]);
		snprintf(names[i], sizeof(names[i]), "pgc_%016llx", hashes[i]);
		parse[i] = !is_prepared(c, hashes[i]) &&
			c->nprepared + i < (int) (sizeof(c->prepared) / sizeof(c->prepared[0]));
		if (parse[i])
			PQsendPrepare(c->conn, names[i], texts[i], nparams, NULL);
		if (parse[i] || is_prepared(c, hashes[i]))
			PQsendQueryPrepared(c->conn, names[i], nparams, param, NULL, NULL, 0);
		else
			PQsendQueryParams(c->conn, texts[i], nparams, NULL, param, NULL, NULL, 0);
	}
	PQpipelineSync(c->conn);

	/* The settings' result, then the NULL that ends it. */
	while ((r = PQgetResult(c->conn)) != NULL)
	{
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && error == NULL)
			error = first_line(PQresultErrorMessage(r));
		PQclear(r);
	}

	/*
	 * The results in the order sent: a prepare's, then its execution's; a
	 * NULL ends each command's; the Sync's ends them all.
	 */
	for (int i = 0; i < n;)
	{
		bool		is_parse = parse[i] && cmd == 0;

		r = PQgetResult(c->conn);
		if (r == NULL)
		{
			if (is_parse)
				cmd = 1;
			else
			{
				cmd = 0;
				i++;
			}
			continue;
		}
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC)
		{
			PQclear(r);
			synced = true;
			break;				/* not reached unless the server stopped early */
		}
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && error == NULL)
		{
			const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

			/* 26000: not there, 42P05: there already: a pooler's work. */
			*lost = state && (strcmp(state, "26000") == 0 || strcmp(state, "42P05") == 0);
			error = first_line(PQresultErrorMessage(r));
		}
		else if (is_parse && PQresultStatus(r) == PGRES_COMMAND_OK)
			c->prepared[c->nprepared++] = hashes[i];
		else if (!is_parse && error == NULL &&
				 (PQresultStatus(r) == PGRES_TUPLES_OK ||
				  PQresultStatus(r) == PGRES_COMMAND_OK) && got < n)
		{
			res[got++] = r;
			continue;
		}
		PQclear(r);
	}
	/*
	 * Up to the Sync (after an error the rest come aborted, a NULL after
	 * each); a broken connection gives NULLs only.
	 */
	while (!synced && PQstatus(c->conn) == CONNECTION_OK && nulls <= 2 * n + 2)
	{
		if ((r = PQgetResult(c->conn)) == NULL)
		{
			nulls++;
			continue;
		}
		synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
		PQclear(r);
	}
	if (!PQexitPipelineMode(c->conn) && error == NULL)
		error = first_line(PQerrorMessage(c->conn));
	return results_done(c, error, got, n, res, message);
}
#endif

/*
 * The statements of one look (top, report): prepared and pipelined where
 * libpq can (14 and later), else joined into one simple Query.  A
 * statement's parameter (params[i], NULL: none; params may be NULL) goes
 * with its execution; in the simple Query it replaces the text's first $1,
 * so it must be a literal the client made itself (a number), never a value
 * the server or a user gave.  The one name in the texts, the extension's
 * schema, holds no "$": CREATE EXTENSION refuses one (and a schema renamed
 * later breaks the extension's own functions first).
 */
bool
conn_query_prepared(Conn *c, char *const *texts, const char *const *params, int n,
					PGresult **res, char **message)
{
	Buf			sql;
	bool		ok;

#ifdef LIBPQ_HAS_PIPELINING
	if (!c->no_prepare && n <= 16)
	{
		bool		lost;

		if (query_pipelined(c, texts, params, n, res, message, &lost))
			return true;
		if (!lost)
			return false;
		/* A pooler lost a statement: this connection prepares no more. */
		free(*message);
		*message = NULL;
		c->no_prepare = true;
		c->nprepared = 0;
	}
#endif
	buf_init(&sql);
	for (int i = 0; i < n; i++)
	{
		const char *at = params && params[i] ? strstr(texts[i], "$1") : NULL;

		if (at)
		{
			buf_printf(&sql, "%.*s", (int) (at - texts[i]), texts[i]);
			buf_append(&sql, params[i]);
			buf_append(&sql, at + 2);
		}
		else
			buf_append(&sql, texts[i]);
		buf_append(&sql, "; ");
	}
	ok = conn_query_many(c, sql.data, n, res, message);
	buf_free(&sql);
	return ok;
}

static bool
has_sqlstate(PGresult *res, const char *state)
{
	const char *s = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return s && strcmp(s, state) == 0;
}

/*
 * Connect and check that this database can answer: the extension created
 * at 1.3 or later, the library preloaded.  On a problem, *message is one
 * line for the user.
 */
ConnProblem
conn_open(Conn *c, char **message)
{
	PGresult   *res;
	PGresult   *setup[2];
	bool		ok;
	Buf			sql;
	const char *version;
	int			major = 0,
				minor = 0;
	const char *host;
	const char *server_encoding;

	*message = NULL;
	/* A new server session has no prepared statement of ours. */
	c->nprepared = 0;
	c->conn = PQconnectdbParams(c->keywords, c->values, 1);
	c->prepared_on = c->conn;
	if (c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK)
	{
		*message = first_line(c->conn ? PQerrorMessage(c->conn) : "out of memory");
		if (c->conn)
			PQfinish(c->conn);
		c->conn = NULL;
		return CONN_FAILED;
	}

	host = PQhost(c->conn);
	free(c->target);
	buf_init(&sql);
	buf_printf(&sql, "%s:%s/%s", host ? host : "", PQport(c->conn), PQdb(c->conn));
	c->target = xstrdup(sql.data);
	buf_reset(&sql);

	/*
	 * One round trip for the client encoding and the extension's row.
	 *
	 * Every text in UTF-8, whatever the database's encoding: the client
	 * escapes what it shows, and JSON is UTF-8.  From a SQL_ASCII database,
	 * which cannot convert, the bytes as they are: the server would refuse
	 * a result with a byte that is not UTF-8 (an error for the whole
	 * query), and the client escapes such bytes itself.  libpq learns the
	 * new encoding from the server's ParameterStatus, as after
	 * PQsetClientEncoding, and the statements after the SET are sent in it.
	 * (A pooler keeps a client's encoding across server sessions; the other
	 * settings are each round trip's: see the file's header.)
	 *
	 * The extension's schema and version, and whether it keeps incidents
	 * (the view comes with 1.4: against an older version the client does
	 * without them).  One catalog read and no join: a new session (each
	 * check) plans this cold.  The server's version came with the
	 * connection.
	 */
	server_encoding = PQparameterStatus(c->conn, "server_encoding");
	buf_printf(&sql,
			   "SET client_encoding = '%s';"
			   " SELECT e.extnamespace::pg_catalog.regnamespace::pg_catalog.text,"
			   " e.extversion, pg_catalog.pg_is_in_recovery(),"
			   " pg_catalog.date_part('epoch', pg_catalog.pg_postmaster_start_time()),"
			   " coalesce(pg_catalog.current_setting('pg_contention.subxact_warn_level', true), '48'),"
			   " pg_catalog.to_regclass(e.extnamespace::pg_catalog.regnamespace"
			   " || '.pg_contention_incidents') IS NOT NULL"
			   " FROM pg_catalog.pg_extension e"
			   " WHERE e.extname = 'pg_contention'",
			   server_encoding && strcmp(server_encoding, "SQL_ASCII") == 0 ?
			   "SQL_ASCII" : "UTF8");
	ok = conn_query_many(c, sql.data, 2, setup, message);
	buf_free(&sql);
	if (!ok)
		return CONN_QUERY_FAILED;
	PQclear(setup[0]);
	res = setup[1];
	if (PQntuples(res) == 0)
	{
		Buf			m;

		buf_init(&m);
		buf_printf(&m, "extension \"pg_contention\" is not created in database \"%s\": "
				   "run CREATE EXTENSION pg_contention there, or connect to the database "
				   "where it is (-d)", PQdb(c->conn));
		*message = message_shown(&m);
		PQclear(res);
		return CONN_NO_EXTENSION;
	}
	free(c->schema);
	free(c->server_version);
	c->schema = xstrdup(PQgetvalue(res, 0, 0));
	version = PQgetvalue(res, 0, 1);
	c->in_recovery = PQgetvalue(res, 0, 2)[0] == 't';
	c->server_started = strtod(PQgetvalue(res, 0, 3), NULL);
	c->server_version = xstrdup(PQparameterStatus(c->conn, "server_version") ?
								PQparameterStatus(c->conn, "server_version") : "");
	/* "15.20 (Debian 15.20-0+deb12u1)": the number is enough. */
	c->server_version[strcspn(c->server_version, " ")] = '\0';
	c->near_level = atoi(PQgetvalue(res, 0, 4));
	c->has_incidents = PQgetvalue(res, 0, 5)[0] == 't';
	if (sscanf(version, "%d.%d", &major, &minor) != 2 ||
		major < PGC_NEEDS_MAJOR || (major == PGC_NEEDS_MAJOR && minor < PGC_NEEDS_MINOR))
	{
		Buf			m;

		buf_init(&m);
		buf_printf(&m, "extension pg_contention is version %s in database \"%s\", this client "
				   "needs %s or later: run ALTER EXTENSION pg_contention UPDATE",
				   version, PQdb(c->conn), PGC_NEEDS_VERSION);
		*message = message_shown(&m);
		PQclear(res);
		return CONN_OLD_EXTENSION;
	}
	c->ext_version = major * 100 + minor;
	PQclear(res);

	/* The views raise 55000 when the library was not preloaded. */
	buf_init(&sql);
	buf_printf(&sql, ROUND_TRIP_SETTINGS "; SELECT stats_reset FROM %s.pg_contention_info()",
			   c->schema);
	res = PQexec(c->conn, sql.data);
	buf_free(&sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		bool		not_loaded = has_sqlstate(res, "55000");

		*message = not_loaded ?
			xstrdup("the pg_contention library is not loaded: add pg_contention to "
					"shared_preload_libraries and restart the server") :
			first_line(PQresultErrorMessage(res));
		PQclear(res);
		return not_loaded ? CONN_NOT_PRELOADED : CONN_QUERY_FAILED;
	}
	PQclear(res);
	return CONN_OK;
}

/*
 * After a look failed on a working connection: is the extension still the
 * one conn_open found?  A catalog read that raises no error whatever
 * happened to it (top polls with it while the extension is gone, without
 * an ERROR in the server's log at each refresh).
 */
ExtensionState
conn_extension_state(Conn *c)
{
	PGresult   *res;
	ExtensionState state;
	int			major,
				minor;

	res = conn_query(c, "SELECT e.extnamespace::pg_catalog.regnamespace::pg_catalog.text, e.extversion"
					 " FROM pg_catalog.pg_extension e WHERE e.extname = 'pg_contention'", NULL);
	if (res == NULL)
		return EXT_UNKNOWN;
	if (PQntuples(res) == 0)
		state = EXT_GONE;
	else if (strcmp(PQgetvalue(res, 0, 0), c->schema ? c->schema : "") != 0 ||
			 sscanf(PQgetvalue(res, 0, 1), "%d.%d", &major, &minor) != 2 ||
			 major * 100 + minor != c->ext_version)
		state = EXT_CHANGED;
	else
		state = EXT_SAME;
	PQclear(res);
	return state;
}

void
conn_close(Conn *c)
{
	if (c->conn)
		PQfinish(c->conn);
	c->conn = NULL;
}

