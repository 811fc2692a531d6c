/*-------------------------------------------------------------------------
 *
 * incidents.c
 *		The incidents the server kept (the view pg_contention_incidents,
 *		extension 1.4): reading them for top, the report and the command
 *		pg_contention incidents, which lists them one line each as check
 *		lists the findings: the open ones first, newest first, then the
 *		closed ones, last closed first; exit 0.  --json prints one JSON
 *		document instead.
 *
 * The server masks what this role may not read; the client shows what it
 * is given, escaped (util.c).  Against an extension without the view
 * (1.3) the command says so and exits 3; top and the report do without.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *
line_or_empty(PGresult *res, int row, int col)
{
	char	   *s = xstrdup(PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));

	one_line(s);
	return s;
}

static double
number_or_nan(PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return NAN;
	return strtod(PQgetvalue(res, row, col), NULL);
}

/*
 * The query of incidents_read into *sql: the open incidents and the last
 * closed_limit closed ones (all with -1); false (nothing added) when the
 * server keeps none (extension older than 1.4).
 */
bool
incidents_query(Conn *c, int closed_limit, bool details, Buf *sql)
{
	if (!c->has_incidents)
		return false;
	buf_printf(sql,
			   "SELECT id, problem, peak_severity, severity, subject, evidence, advice, resolution,"
			   " pg_catalog.to_char(opened, 'YYYY-MM-DD HH24:MI:SS'),"
			   " pg_catalog.to_char(peak, 'YYYY-MM-DD HH24:MI:SS'),"
			   " pg_catalog.to_char(closed, 'YYYY-MM-DD HH24:MI:SS'),"
			   " pg_catalog.to_char(last_seen, 'YYYY-MM-DD HH24:MI:SS'),"
			   " pg_catalog.date_part('epoch', opened), pg_catalog.date_part('epoch', closed),"
			   " pg_catalog.date_part('epoch', last_seen), %s, n_open, n_all"
			   " FROM (SELECT i.*,"
			   " pg_catalog.row_number() OVER (PARTITION BY closed IS NULL"
			   " ORDER BY closed DESC, id DESC) AS r,"
			   " count(*) FILTER (WHERE closed IS NULL) OVER () AS n_open,"
			   " count(*) OVER () AS n_all"
			   " FROM %s.pg_contention_incidents(%s, 0::pg_catalog.int8) AS i) AS i"
			   " WHERE closed IS NULL OR %d < 0 OR r <= %d"
			   " ORDER BY closed IS NOT NULL, closed DESC, opened DESC, id DESC",
			   details ? "details::text" : "NULL::text", c->schema,
			   details ? "true" : "false", closed_limit, closed_limit);
	return true;
}

/* The rows of incidents_query's result into *list (res is freed). */
void
incidents_parse(PGresult *res, IncidentList *list)
{
	memset(list, 0, sizeof(*list));
	list->n = PQntuples(res);
	list->rows = xmalloc(sizeof(Incident) * (size_t) (list->n > 0 ? list->n : 1));
	for (int i = 0; i < list->n; i++)
	{
		Incident   *r = &list->rows[i];

		r->id = line_or_empty(res, i, 0);
		r->problem = line_or_empty(res, i, 1);
		r->peak_severity = line_or_empty(res, i, 2);
		r->severity = line_or_empty(res, i, 3);
		r->subject = line_or_empty(res, i, 4);
		r->evidence = line_or_empty(res, i, 5);
		r->advice = line_or_empty(res, i, 6);
		r->resolution = line_or_empty(res, i, 7);
		r->opened = line_or_empty(res, i, 8);
		r->peak = line_or_empty(res, i, 9);
		r->closed = line_or_empty(res, i, 10);
		r->last_seen = line_or_empty(res, i, 11);
		r->opened_epoch = number_or_nan(res, i, 12);
		r->closed_epoch = number_or_nan(res, i, 13);
		r->last_seen_epoch = number_or_nan(res, i, 14);
		r->open = PQgetisnull(res, i, 13);
		r->details = PQgetisnull(res, i, 15) ? NULL : xstrdup(PQgetvalue(res, i, 15));
		list->total_open = atoi(PQgetvalue(res, i, 16));
		list->total = atoi(PQgetvalue(res, i, 17));
	}
	PQclear(res);
}

bool
incidents_read(Conn *c, int closed_limit, bool details, IncidentList *list, char **message)
{
	Buf			sql;
	PGresult   *res;

	memset(list, 0, sizeof(*list));
	buf_init(&sql);
	if (!incidents_query(c, closed_limit, details, &sql))
	{
		buf_free(&sql);
		return true;
	}
	res = conn_query(c, sql.data, message);
	buf_free(&sql);
	if (res == NULL)
		return false;
	incidents_parse(res, list);
	return true;
}

void
incidents_free(IncidentList *list)
{
	for (int i = 0; i < list->n; i++)
	{
		Incident   *r = &list->rows[i];

		free(r->id);
		free(r->problem);
		free(r->peak_severity);
		free(r->severity);
		free(r->subject);
		free(r->evidence);
		free(r->advice);
		free(r->resolution);
		free(r->opened);
		free(r->peak);
		free(r->closed);
		free(r->last_seen);
		free(r->details);
	}
	free(list->rows);
	memset(list, 0, sizeof(*list));
}

/* What the server says of its incident_interval setting, for "none". */
static char *
incident_interval(Conn *c)
{
	PGresult   *res = conn_query(c, "SELECT pg_catalog.current_setting("
								 "'pg_contention.incident_interval', true)", NULL);
	char	   *v = NULL;

	if (res && !PQgetisnull(res, 0, 0))
		v = xstrdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

/*
 * Why the server is not keeping incidents now, with the remedy (malloc'd),
 * or NULL when it is, or when they are off by pg_contention.incident_interval
 * (the header says so): the worker's silence is never taken for calm.
 */
char *
incidents_not_kept(Conn *c)
{
	Buf			sql;
	PGresult   *res;
	char	   *why = NULL;

	if (!c->has_incidents)
		return NULL;
	buf_init(&sql);
	buf_printf(&sql, "SELECT s.state, s.problem FROM %s.pg_contention_incidents_status() AS s", c->schema);
	res = conn_query(c, sql.data, NULL);
	buf_free(&sql);
	if (res == NULL || PQntuples(res) != 1)
		why = xstrdup("the incidents' state cannot be read (pg_contention_incidents_status() failed)");
	else if (strcmp(PQgetvalue(res, 0, 0), "kept") != 0 && strcmp(PQgetvalue(res, 0, 0), "off") != 0)
		why = xstrdup(PQgetvalue(res, 0, 1));
	PQclear(res);
	return why;
}

static void
json_field(Buf *out, const char *name, const char *value, bool null_if_empty)
{
	buf_printf(out, ", \"%s\": ", name);
	if (null_if_empty && (value == NULL || value[0] == '\0'))
		buf_append(out, "null");
	else
		buf_json_string(out, value);
}

/* The server keeps no incidents: one line, exit 3. */
int
incidents_unavailable(Conn *c)
{
	Buf			m;
	char	   *message;

	buf_init(&m);
	buf_printf(&m, "extension pg_contention %d.%d in database \"%s\" keeps no incidents "
			   "(no view pg_contention_incidents): they come with version 1.4, run "
			   "ALTER EXTENSION pg_contention UPDATE",
			   c->ext_version / 100, c->ext_version % 100, PQdb(c->conn));
	message = text_shown(m.data);
	buf_free(&m);
	fprintf(stderr, "%s: error: %s\n", progname_get(), message);
	free(message);
	return EXIT_UNKNOWN;
}

int
command_incidents(Conn *c, bool json)
{
	IncidentList list;
	char	   *message = NULL;
	char	   *interval;
	bool		off;
	char	   *not_kept;
	int			rc;
	Buf			out;

	if (!c->has_incidents)
		return incidents_unavailable(c);
	if (!incidents_read(c, -1, json, &list, &message))
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		free(message);
		return EXIT_UNKNOWN;
	}
	interval = incident_interval(c);
	off = interval && strcmp(interval, "0") == 0;
	not_kept = incidents_not_kept(c);
	if (not_kept)
		fprintf(stderr, "%s: warning: the incidents are not kept: %s\n", progname_get(), not_kept);

	buf_init(&out);
	if (json)
	{
		buf_append(&out, "{\"server\": ");
		buf_json_string(&out, c->target);
		buf_append(&out, ", \"server_version\": ");
		buf_json_string(&out, c->server_version);
		buf_printf(&out, ", \"incident_interval\": ");
		if (interval)
			buf_json_string(&out, interval);
		else
			buf_append(&out, "null");
		buf_append(&out, ", \"not_kept\": ");
		if (not_kept)
			buf_json_string(&out, not_kept);
		else
			buf_append(&out, "null");
		buf_printf(&out, ", \"counts\": {\"open\": %d, \"closed\": %d}, \"incidents\": [",
				   list.total_open, list.total - list.total_open);
		for (int i = 0; i < list.n; i++)
		{
			Incident   *r = &list.rows[i];

			buf_append(&out, i ? ",\n  {\"id\": " : "\n  {\"id\": ");
			/* A bigint from the server: digits only. */
			buf_append(&out, strspn(r->id, "0123456789") == strlen(r->id) && r->id[0] ? r->id : "null");
			json_field(&out, "status", r->open ? "open" : "closed", false);
			json_field(&out, "problem", r->problem, false);
			json_field(&out, "peak_severity", r->peak_severity, false);
			json_field(&out, "severity", r->severity, true);
			json_field(&out, "subject", r->subject, false);
			json_field(&out, "opened", r->opened, true);
			json_field(&out, "peak", r->peak, true);
			json_field(&out, "closed", r->closed, true);
			json_field(&out, "last_seen", r->last_seen, true);
			json_field(&out, "evidence", r->evidence, false);
			json_field(&out, "advice", r->advice, false);
			json_field(&out, "resolution", r->resolution, true);
			/* Already JSON: the server's jsonb output. */
			buf_append(&out, ", \"details\": ");
			buf_json_raw(&out, r->details);
			buf_append(&out, "}");
		}
		buf_append(&out, list.n ? "\n]}\n" : "]}\n");
	}
	else
	{
		buf_printf(&out, "PG_CONTENTION INCIDENTS - %d open, %d closed on ", list.total_open,
				   list.total - list.total_open);
		buf_text(&out, c->target);
		if (off)
			buf_append(&out, " (pg_contention.incident_interval is 0: the server opens none)");
		buf_append(&out, "\n");
		if (not_kept)
		{
			buf_append(&out, "WARNING: the incidents are not kept: ");
			buf_text(&out, not_kept);
			buf_append(&out, "\n");
		}
		for (int i = 0; i < list.n; i++)
		{
			Incident   *r = &list.rows[i];

			/* One line each (incidents_read made the texts one line). */
			buf_append(&out, "#");
			buf_text(&out, r->id);
			buf_append(&out, r->open ? " OPEN " : " closed ");
			buf_text(&out, r->peak_severity);
			buf_append(&out, " ");
			buf_text(&out, r->problem);
			buf_append(&out, ": ");
			buf_text(&out, r->subject);
			buf_append(&out, ". Opened ");
			buf_text(&out, r->opened);
			if (r->open)
			{
				buf_append(&out, ", still open, now ");
				buf_text(&out, r->severity[0] ? r->severity : "unknown");
				buf_append(&out, ", last seen ");
				buf_text(&out, r->last_seen);
			}
			else
			{
				buf_append(&out, ", closed ");
				buf_text(&out, r->closed);
				buf_append(&out, " after ");
				buf_append(&out, fmt_duration(r->closed_epoch - r->opened_epoch));
			}
			buf_append(&out, ". ");
			buf_text(&out, r->evidence);
			if (!r->open)
			{
				buf_append(&out, " Resolution: ");
				buf_text(&out, r->resolution[0] ? r->resolution : "not known");
			}
			buf_append(&out, "\n");
		}
	}
	fputs(out.data, stdout);
	buf_free(&out);
	free(interval);
	incidents_free(&list);
	/* Not kept: 1, as check's WARNING. */
	rc = not_kept ? 1 : 0;
	free(not_kept);
	return fflush(stdout) == 0 ? rc : EXIT_UNKNOWN;
}
