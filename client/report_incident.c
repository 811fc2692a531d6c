/*-------------------------------------------------------------------------
 *
 * report_incident.c
 *		pg_contention report --incident N --html: the page of one incident
 *		the server kept (extension 1.4), from what it froze: its open, peak
 *		and close, the charts of the seconds before its peak (its details'
 *		history), the statements and holders at its peak, and what closed
 *		it.  The page's parts shared with the live report are report.c's
 *		(report.h).
 *
 * Texts from the server are escaped as util.c says, and isolated from the
 * page's direction where they stand among its words (<bdi>).
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- One incident, as the server froze it (pg_contention_incidents) ---- */

/* A cell of a frozen row: the value, "-" for a JSON null. */
static void
cell_frozen(Buf *b, PGresult *res, int row, int col, bool number)
{
	if (PQgetisnull(res, row, col))
		html_cell_number(b, "-");
	else if (number)
		html_cell_number(b, fmt_count(strtod(PQgetvalue(res, row, col), NULL)));
	else
		html_cell(b, PQgetvalue(res, row, col));
}

/* "no incident 7", as the server's report says it. */
static int
incident_missing(long long id)
{
	fprintf(stderr, "%s: error: no incident %lld: pg_contention incidents lists them\n",
			progname_get(), id);
	return EXIT_UNKNOWN;
}

/*
 * The rows of one of the frozen arrays (statements, holders, history) of
 * an incident's details, each element's keys as columns.  The details are
 * the text read once with the incident: the view is read once (it builds
 * every incident's details, and one may be evicted between two reads).
 */
static PGresult *
frozen_rows(Conn *c, const char *details, const char *array, const char *columns,
			const char *order, char **message)
{
	Buf			sql;
	PGresult   *res;
	char	   *literal = PQescapeLiteral(c->conn, details, strlen(details));

	if (literal == NULL)
	{
		*message = xstrdup("the incident's details could not be quoted (out of memory, or not in the client's encoding)");
		return NULL;
	}
	/* A literal, not a parameter: the round trip's settings go first. */
	buf_init(&sql);
	buf_printf(&sql, "SELECT %s FROM pg_catalog.jsonb_array_elements("
			   "CASE WHEN pg_catalog.jsonb_typeof(%s::pg_catalog.jsonb -> '%s') = 'array'"
			   " THEN %s::pg_catalog.jsonb -> '%s' ELSE '[]' END) WITH ORDINALITY AS x(e, o) ORDER BY %s",
			   columns, literal, array, literal, array, order);
	PQfreemem(literal);
	res = conn_query(c, sql.data, message);
	buf_free(&sql);
	return res;
}

/*
 * The timeline's rows for the server's restarts while the incident was
 * open (inc's columns 22 and 23: the kept times, '|'-separated, and how
 * many earlier ones were not kept), those before the peak or, after_peak,
 * the others: the times are one format in one zone, so they compare as
 * text.
 */
static void
timeline_restarts(Buf *b, const PGresult *inc, const char *peak, bool after_peak)
{
	const char *times = PQgetvalue(inc, 0, 22);
	long		not_kept = strtol(PQgetvalue(inc, 0, 23), NULL, 10);
	int			i = 0;

	while (times[0] != '\0')
	{
		const char *end = strchr(times, '|');
		size_t		len = end ? (size_t) (end - times) : strlen(times);
		char		at[64];

		snprintf(at, sizeof(at), "%.*s", (int) (len < sizeof(at) ? len : sizeof(at) - 1), times);
		if ((strcmp(at, peak) > 0) == after_peak)
		{
			buf_append(b, "<tr>");
			html_cell(b, "server restarted");
			html_cell(b, at);
			html_cell(b, "");
			html_cell(b, "");
			if (i == 0 && not_kept > 0)
			{
				char		text[160];

				snprintf(text, sizeof(text),
						 "open across this start of the server (and %ld earlier ones, whose times are not kept)",
						 not_kept);
				html_cell(b, text);
			}
			else
				html_cell(b, "open across this start of the server");
			buf_append(b, "</tr>\n");
		}
		i++;
		times += len + (end ? 1 : 0);
	}
}

int
report_incident_html(Conn *c, const char *path, long long id, bool with_values)
{
	static const char *const timeline_headers[] = {"", "at", "severity", "subject", "evidence"};
	static const char *const statement_headers[] = {
		"query id", "user", "calls", "rows", "buffers hit", "buffers read", "buffers per row",
		"suboverflowed calls", "pg_subtrans wait samples", "statement"
	};
	static const char *const holder_headers[] = {
		"kind", "holder", "pid", "xmin age", "held for", "blocks cleanup", "state",
		"application", "statement"
	};
	Buf			sql;
	Buf			b;
	PGresult   *inc,
			   *res;
	char	   *message = NULL;
	Second	   *seconds;
	int			nseconds;
	bool		open;
	bool		peak_at_open;
	const char *details;
	char		title[64];

	/*
	 * Without values (the default): the evidence without the worst
	 * execution's constants, the finding's details without them either,
	 * the frozen holders' statements normalized.
	 */
	char		evidence[3][320];	/* a quoted schema, a function, two paths */
	const char *const evidence_of[3] = {"evidence", "details #>> '{opened,evidence}'",
	"details #>> '{closed,evidence}'"};

	for (int k = 0; k < 3; k++)
		snprintf(evidence[k], sizeof(evidence[k]),
				 with_values ? "%s%s" : "%s.pg_contention_without_values(%s, details -> 'finding')",
				 with_values ? "" : c->schema, evidence_of[k]);
	buf_init(&sql);
	buf_printf(&sql,
			   "SELECT problem, peak_severity, subject, %s, advice, resolution, severity,"
			   " pg_catalog.to_char(opened, 'YYYY-MM-DD HH24:MI:SS TZ'),"
			   " pg_catalog.to_char(peak, 'YYYY-MM-DD HH24:MI:SS TZ'),"
			   " pg_catalog.to_char(closed, 'YYYY-MM-DD HH24:MI:SS TZ'),"
			   " pg_catalog.to_char(last_seen, 'YYYY-MM-DD HH24:MI:SS TZ'),"
			   " %s.pg_contention_duration(coalesce(closed, pg_catalog.clock_timestamp()) - opened),"
			   " coalesce(details #>> '{opened,severity}', 'warning'),"
			   " coalesce(details #>> '{opened,subject}', subject),"
			   " %s, %s,"
			   " coalesce(details ->> 'truncated' = 'true', false),"
			   " pg_catalog.jsonb_pretty(details -> 'finding'%s),"
			   " pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS TZ'),"
			   " coalesce(details ->> 'masked' = 'true', false),"
			   " coalesce(details, '{}')::text,"
			   " coalesce(details ->> 'unavailable' = 'true', false),"
			   " (SELECT pg_catalog.string_agg(pg_catalog.to_char((r.value #>> '{}')::pg_catalog.timestamptz,"
			   " 'YYYY-MM-DD HH24:MI:SS TZ'), '|' ORDER BY r.n)"
			   " FROM pg_catalog.jsonb_array_elements(details -> 'restarts') WITH ORDINALITY AS r(value, n)),"
			   " coalesce((details ->> 'restart_count')::integer"
			   " - pg_catalog.jsonb_array_length(details -> 'restarts'), 0)"
			   " FROM %s.pg_contention_incidents(true, %lld::pg_catalog.int8) WHERE id = %lld",
			   evidence[0], c->schema, evidence[1], evidence[2],
			   with_values ? "" : " #- '{worst,literals}'", c->schema, id > 0 ? id : -1, id);
	inc = conn_query(c, sql.data, &message);
	buf_free(&sql);
	if (inc == NULL)
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		return EXIT_UNKNOWN;
	}
	if (PQntuples(inc) == 0)
	{
		PQclear(inc);
		return incident_missing(id);
	}
	open = PQgetisnull(inc, 0, 9);
	details = PQgetvalue(inc, 0, 20);

	/*
	 * The frozen seconds, read as the live history is (data.c): per-class
	 * averages are samples / ticks; the readers' lookups.
	 */
	res = frozen_rows(c, details, "history",
					  "pg_catalog.date_part('epoch', (e ->> 'bucket_start')::timestamptz),"
					  " (e ->> 'avg_active_backends')::float8,"
					  " greatest(coalesce((e ->> 'ticks')::float8, 1), 1),"
					  " (e ->> 'cpu_samples')::float8, (e ->> 'lwlock_samples')::float8,"
					  " (e ->> 'lock_samples')::float8, (e ->> 'io_samples')::float8,"
					  " (e ->> 'ipc_samples')::float8, (e ->> 'bufferpin_samples')::float8,"
					  " (e ->> 'timeout_samples')::float8, (e ->> 'extension_samples')::float8,"
					  " (e ->> 'client_samples')::float8, (e ->> 'other_samples')::float8,"
					  " coalesce((e ->> 'subtrans_slru_samples')::float8, 0)"
					  " + coalesce((e ->> 'subtrans_buffer_samples')::float8, 0),"
					  " (e ->> 'max_overflowed_backends')::float8,"
					  " (e ->> 'subtrans_reader_lookups')::float8,"
					  " (e ->> 'horizon_xid_age')::float8",
					  "1, o", &message);
	if (res == NULL)
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		PQclear(inc);
		return EXIT_UNKNOWN;
	}
	nseconds = PQntuples(res);
	seconds = xmalloc(sizeof(Second) * (size_t) (nseconds > 0 ? nseconds : 1));
	for (int i = 0; i < nseconds; i++)
	{
		Second	   *sec = &seconds[i];
		double		ticks = strtod(PQgetvalue(res, i, 2), NULL);

#define FROZEN(col) (PQgetisnull(res, i, (col)) ? NAN : strtod(PQgetvalue(res, i, (col)), NULL))
		sec->epoch = FROZEN(0);
		sec->active = FROZEN(1);
		for (int k = 0; k < NUM_CLASSES; k++)
			sec->by_class[k] = FROZEN(3 + k) / ticks;
		sec->subtrans_waits = FROZEN(13);
		sec->overflowed = FROZEN(14);
		sec->lookups = FROZEN(15);
		sec->horizon_age = FROZEN(16);
#undef FROZEN
	}
	PQclear(res);

	snprintf(title, sizeof(title), "pg_contention incident %lld", id);
	buf_init(&b);
	buf_append(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
	buf_append(&b, title);
	buf_append(&b, ": ");
	buf_html(&b, c->target);
	buf_append(&b, "</title>\n<style>\n");
	buf_append(&b, html_page_style);
	buf_append(&b, "</style>\n</head>\n<body>\n<h1>");
	buf_append(&b, title);
	buf_append(&b, "</h1>\n<p class=\"meta\">");
	buf_html_isolated(&b, c->target);
	buf_append(&b, ", PostgreSQL ");
	buf_html_isolated(&b, c->server_version);
	buf_printf(&b, " (%s); written at ", c->in_recovery ? "hot standby" : "primary");
	buf_html(&b, PQgetvalue(inc, 0, 18));
	buf_append(&b, ". Everything below is what the server froze at the time, not what it "
			   "holds now.</p>\n");
	if (PQgetvalue(inc, 0, 19)[0] == 't')
		buf_append(&b, "<p class=\"meta\"><b>The texts are masked</b>: reading them takes "
				   "pg_read_all_stats; of the frozen statements and holders, those of your own role "
				   "are shown.</p>\n");

	/* The incident at its peak, as a finding is shown. */
	buf_append(&b, "<section class=\"finding ");
	buf_html(&b, PQgetvalue(inc, 0, 1));
	buf_append(&b, "\"><h3><span class=\"sev\">");
	buf_html(&b, PQgetvalue(inc, 0, 1));
	buf_append(&b, "</span> ");
	buf_html_isolated(&b, PQgetvalue(inc, 0, 0));
	buf_append(&b, "</h3>\n<p class=\"subject\">");
	buf_html(&b, PQgetvalue(inc, 0, 2));
	buf_append(&b, "</p>\n<p class=\"evidence\">");
	buf_html(&b, PQgetvalue(inc, 0, 3));
	buf_append(&b, "</p>\n<p class=\"advice\"><b>What to do:</b> ");
	buf_html_isolated(&b, PQgetvalue(inc, 0, 4));
	buf_append(&b, "</p>\n<p class=\"meta\">Opened ");
	buf_html(&b, PQgetvalue(inc, 0, 7));
	if (open)
	{
		buf_append(&b, "; <b>still open</b> (now ");
		buf_html_isolated(&b, PQgetisnull(inc, 0, 6) ? "unknown" : PQgetvalue(inc, 0, 6));
		buf_append(&b, ", last seen ");
		buf_html(&b, PQgetvalue(inc, 0, 10));
		buf_append(&b, "), for ");
	}
	else
	{
		buf_append(&b, "; closed ");
		buf_html(&b, PQgetvalue(inc, 0, 9));
		buf_append(&b, " after ");
	}
	buf_html(&b, PQgetvalue(inc, 0, 11));
	buf_append(&b, ".</p>\n");
	if (!open)
	{
		buf_append(&b, "<p class=\"resolution\"><b>Resolution:</b> ");
		buf_html_isolated(&b, PQgetisnull(inc, 0, 5) ?
						  "not known: the server could not tell what ended it" :
						  PQgetvalue(inc, 0, 5));
		buf_append(&b, "</p>\n");
	}
	buf_append(&b, "</section>\n");

	buf_append(&b, "<h2>Timeline</h2>\n");
	html_table_start(&b, "Open, peak and close", timeline_headers, 5, 3, "");
	/* Opened at its peak: one row, not the same figures twice. */
	peak_at_open = strcmp(PQgetvalue(inc, 0, 7), PQgetvalue(inc, 0, 8)) == 0;
	if (!peak_at_open)
	{
		buf_append(&b, "<tr>");
		html_cell(&b, "opened");
		html_cell(&b, PQgetvalue(inc, 0, 7));
		html_cell(&b, PQgetvalue(inc, 0, 12));
		html_cell(&b, PQgetvalue(inc, 0, 13));
		html_cell(&b, PQgetisnull(inc, 0, 14) ? "(not kept)" : PQgetvalue(inc, 0, 14));
		buf_append(&b, "</tr>\n");
	}
	timeline_restarts(&b, inc, PQgetvalue(inc, 0, 8), false);
	buf_append(&b, "<tr>");
	html_cell(&b, peak_at_open ? "opened at its peak" : "peak");
	html_cell(&b, PQgetvalue(inc, 0, 8));
	html_cell(&b, PQgetvalue(inc, 0, 1));
	html_cell(&b, PQgetvalue(inc, 0, 2));
	html_cell(&b, PQgetvalue(inc, 0, 3));
	buf_append(&b, "</tr>\n");
	timeline_restarts(&b, inc, PQgetvalue(inc, 0, 8), true);
	buf_append(&b, "<tr>");
	html_cell(&b, "closed");
	html_cell(&b, open ? "still open" : PQgetvalue(inc, 0, 9));
	html_cell(&b, "");
	html_cell(&b, "");
	html_cell(&b, open ? "" : PQgetisnull(inc, 0, 15) ? "(not kept)" : PQgetvalue(inc, 0, 15));
	buf_append(&b, "</tr>\n");
	html_table_end(&b, 3);

	buf_append(&b, "<h2>History before the peak</h2>\n");
	if (nseconds > 0)
		buf_printf(&b, "<p class=\"meta\">%d seconds frozen at the peak, from %s to %s "
				   "(a gap in a line is a time the sampler recorded nothing).</p>\n",
				   nseconds, fmt_clock(seconds[0].epoch), fmt_clock(seconds[nseconds - 1].epoch));
	else
		buf_append(&b, "<p class=\"none\">No seconds were kept with this incident.</p>\n");
	html_seconds_charts(&b, seconds, nseconds, PQgetvalue(inc, 0, 0));
	free(seconds);

	/* Frozen once, when it first reached its highest severity: say so. */
	buf_append(&b, "<h2>Evidence at the peak</h2>\n");
	buf_append(&b, "<p class=\"meta\">Frozen when the incident first reached its highest severity: "
			   "figures that grew after at that severity are in the finding now, not here.</p>\n");
	res = frozen_rows(c, details, "statements",
					  "e ->> 'query_id',"
					  " CASE WHEN e ->> 'userid' ~ '^[0-9]+$'"
					  " THEN pg_catalog.pg_get_userbyid((e ->> 'userid')::oid)::text END,"
					  " e ->> 'calls', e ->> 'rows', e ->> 'shared_blks_hit', e ->> 'shared_blks_read',"
					  " pg_catalog.round((e ->> 'blks_per_row')::numeric, 1)::text,"
					  " e ->> 'suboverflowed_calls', e ->> 'subtrans_wait_samples', e ->> 'query'",
					  "o", &message);
	if (res == NULL)
		goto failed;
	html_table_start(&b, "Top statements at the peak", statement_headers, 10, PQntuples(res),
				"None kept.");
	for (int i = 0; i < PQntuples(res); i++)
	{
		buf_append(&b, "<tr>");
		cell_frozen(&b, res, i, 0, false);
		cell_frozen(&b, res, i, 1, false);
		for (int k = 2; k <= 5; k++)
			cell_frozen(&b, res, i, k, true);
		cell_frozen(&b, res, i, 6, false);
		cell_frozen(&b, res, i, 7, true);
		cell_frozen(&b, res, i, 8, true);
		html_cell_query(&b, PQgetisnull(res, i, 9) ? "" : PQgetvalue(res, i, 9));
		buf_append(&b, "</tr>\n");
	}
	html_table_end(&b, PQntuples(res));
	PQclear(res);

	buf_init(&sql);
	buf_printf(&sql, "e ->> 'kind', e ->> 'holder', e ->> 'pid', e ->> 'xmin_age',"
			   " (e ->> 'held_for')::float8,"
			   " CASE WHEN (e ->> 'named_by_finding')::boolean THEN 'yes, named by the finding'"
			   " WHEN (e ->> 'blocks_cleanup')::boolean THEN 'yes'"
			   " WHEN NOT (e ->> 'blocks_cleanup')::boolean THEN 'no' END,"
			   " e ->> 'state', e ->> 'application_name', ");
	if (with_values)
		buf_append(&sql, "e ->> 'query'");
	else
		buf_printf(&sql, "%s.pg_contention_normalize(e ->> 'query')", c->schema);
	res = frozen_rows(c, details, "holders", sql.data, "o", &message);
	buf_free(&sql);
	if (res == NULL)
		goto failed;
	html_table_start(&b, "Holders of the xmin horizon at the peak", holder_headers, 9, PQntuples(res),
				"None kept.");
	for (int i = 0; i < PQntuples(res); i++)
	{
		buf_append(&b, "<tr>");
		cell_frozen(&b, res, i, 0, false);
		cell_frozen(&b, res, i, 1, false);
		cell_frozen(&b, res, i, 2, false);
		cell_frozen(&b, res, i, 3, true);
		html_cell_number(&b, PQgetisnull(res, i, 4) ? "-" :
					fmt_duration(strtod(PQgetvalue(res, i, 4), NULL)));
		cell_frozen(&b, res, i, 5, false);
		cell_frozen(&b, res, i, 6, false);
		cell_frozen(&b, res, i, 7, false);
		html_cell_query(&b, PQgetisnull(res, i, 8) ? "" : PQgetvalue(res, i, 8));
		buf_append(&b, "</tr>\n");
	}
	html_table_end(&b, PQntuples(res));
	PQclear(res);

	if (!PQgetisnull(inc, 0, 17))
	{
		/* For machines: folded away, the evidence says it in words. */
		buf_append(&b, "<details><summary>The finding's details at the peak (JSON)</summary>"
				   "<pre class=\"details\">");
		buf_html(&b, PQgetvalue(inc, 0, 17));
		buf_append(&b, "</pre></details>\n");
	}
	if (PQgetvalue(inc, 0, 16)[0] == 't')
		buf_append(&b, "<p class=\"meta\">Truncated: the frozen evidence was larger than an "
				   "incident may keep; the oldest history seconds, then the statements and "
				   "holders after the first, were left out.</p>\n");
	if (PQgetvalue(inc, 0, 21)[0] == 't')
		buf_append(&b, "<p class=\"meta\">Unavailable: the statements, holders and history "
				   "could not be frozen when the incident opened; the server log says why.</p>\n");

	buf_append(&b, "<footer>Written by the pg_contention client ");
	buf_append(&b, PGC_CLIENT_PROGRAM_VERSION);
	buf_printf(&b, "; the same figures are in the extension's view pg_contention_incidents "
			   "(id %lld, its column details) and in pg_contention_report(incident => %lld)."
			   "</footer>\n</body>\n</html>\n", id, id);
	PQclear(inc);

	if (!html_write_out(path, b.data, b.len))
	{
		buf_free(&b);
		return EXIT_UNKNOWN;
	}
	buf_free(&b);
	return 0;

failed:
	fprintf(stderr, "%s: error: %s\n", progname_get(), message);
	PQclear(inc);
	buf_free(&b);
	return EXIT_UNKNOWN;
}
