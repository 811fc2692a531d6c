/*-------------------------------------------------------------------------
 *
 * report.c
 *		pg_contention report: what a DBA attaches to the incident ticket.
 *		--text prints the server's pg_contention_report(); --html writes one
 *		self-contained page (no script, font, image or network reference):
 *		the findings, charts of the whole history as inline SVG (active
 *		backends by wait class, readers' pg_subtrans lookups per second,
 *		overflowed backends, the xmin horizon's age), and the evidence
 *		tables.  With --incident N, the same for one incident the server
 *		kept (extension 1.4), from what it froze: its open, peak and close,
 *		the charts of the seconds before its peak (its details' history),
 *		the statements and holders at its peak.
 *
 * Texts from the server are escaped as util.c says: in the page, those
 * inline among the page's own words are also isolated from its direction
 * (<bdi>); in --text, lines and tabs are kept and every other control is
 * shown escaped.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const page_style =
"body{font:14px/1.45 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1a1a1a;"
"max-width:1000px;margin:24px auto;padding:0 16px}\n"
"h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}\n"
"h3{font-size:15px;margin:0 0 4px}.meta{color:#555;margin:0}\n"
".finding{border-left:6px solid #999;padding:8px 12px;margin:10px 0;background:#fafafa;"
"break-inside:avoid}\n"
".finding.critical{border-color:#c62828}.finding.warning{border-color:#ef8f00}"
".finding.info{border-color:#1565c0}\n"
".sev{display:inline-block;min-width:64px;font-weight:bold;text-transform:uppercase}\n"
".critical .sev{color:#c62828}.warning .sev{color:#b26a00}.info .sev{color:#1565c0}\n"
".finding p{margin:4px 0}.subject{font-weight:600}.advice b{color:#333}\n"
"pre.details{font-size:11px;white-space:pre-wrap;word-break:break-all;color:#444;margin:4px 0}\n"
"details summary{font-size:11px;color:#666;cursor:pointer}\n"
".ok{padding:8px 12px;border-left:6px solid #2e7d32;background:#f3faf3}\n"
"svg.chart{width:100%;height:auto;margin:6px 0 14px;break-inside:avoid}\n"
"svg .chart-title{font-size:14px;font-weight:600;fill:#1a1a1a}svg .unit{font-weight:normal;fill:#555}\n"
"svg .axis{font-size:11px;fill:#555}svg .legend{font-size:11px;fill:#333}\n"
"svg .grid{stroke:#e3e3e3;stroke-width:1}svg .frame{fill:none;stroke:#bbb}\n"
"table{border-collapse:collapse;width:100%;font-size:12px;margin:4px 0 14px;break-inside:auto}\n"
"th,td{border-bottom:1px solid #e3e3e3;padding:3px 6px;text-align:left;vertical-align:top}\n"
"th{background:#f0f0f0}td.n{text-align:right;white-space:nowrap}td.q{font-family:monospace;"
"word-break:break-word}\n"
".none{color:#666;font-style:italic}footer{margin-top:28px;color:#777;font-size:12px}\n"
"@media print{body{margin:0;max-width:none}h2{break-after:avoid}.finding{background:none}}\n";

/*
 * Every text from the server is escaped (buf_html: its controls and
 * bidirectional controls shown as \x1b, \u202e).  A table cell, a
 * paragraph and a <pre> are blocks, each a bidirectional paragraph of its
 * own: nothing in one reorders text outside it.  Server text inline among
 * the page's own words is isolated in a <bdi> (buf_html_isolated).
 */
static void
cell(Buf *b, const char *text)
{
	buf_append(b, "<td>");
	buf_html(b, text);
	buf_append(b, "</td>");
}

static void
cell_number(Buf *b, const char *text)
{
	buf_append(b, "<td class=\"n\">");
	buf_html(b, text);
	buf_append(b, "</td>");
}

/*
 * A statement's cell: a long text (an ORM's, a generated CTE) is shown cut
 * at a readable length, whole behind a disclosure, so that one statement
 * does not take several screens.
 */
#define QUERY_SHOWN_BYTES	400

static void
cell_query(Buf *b, const char *text)
{
	size_t		len = strlen(text);

	buf_append(b, "<td class=\"q\">");
	if (len <= QUERY_SHOWN_BYTES + 100)
		buf_html(b, text);
	else
	{
		size_t		cut = QUERY_SHOWN_BYTES;
		char	   *head;

		/* Never inside a UTF-8 character. */
		while (cut > 0 && ((unsigned char) text[cut] & 0xC0) == 0x80)
			cut--;
		head = xstrdup(text);
		head[cut] = '\0';
		buf_html(b, head);
		free(head);
		buf_printf(b, "<details><summary>&hellip; %zu more bytes</summary>", len - cut);
		buf_html(b, text + cut);
		buf_append(b, "</details>");
	}
	buf_append(b, "</td>");
}

static void
table_start(Buf *b, const char *title, const char *const *headers, int nheaders, int rows,
			const char *none)
{
	buf_append(b, "<h3>");
	buf_html(b, title);
	buf_append(b, "</h3>\n");
	if (rows == 0)
	{
		buf_append(b, "<p class=\"none\">");
		buf_html(b, none);
		buf_append(b, "</p>\n");
		return;
	}
	buf_append(b, "<table><thead><tr>");
	for (int i = 0; i < nheaders; i++)
	{
		buf_append(b, "<th>");
		buf_html(b, headers[i]);
		buf_append(b, "</th>");
	}
	buf_append(b, "</tr></thead><tbody>\n");
}

static void
table_end(Buf *b, int rows)
{
	if (rows > 0)
		buf_append(b, "</tbody></table>\n");
}

static void
html_findings(Buf *b, const Snapshot *s)
{
	buf_printf(b, "<h2>Findings (%d)</h2>\n", s->nfindings);
	if (s->nfindings == 0)
		buf_append(b, "<p class=\"ok\">None: nothing pg_contention checks for is wrong now.</p>\n");
	for (int i = 0; i < s->nfindings; i++)
	{
		const Finding *f = &s->findings[i];

		buf_append(b, "<section class=\"finding ");
		buf_html(b, f->severity);
		buf_append(b, "\"><h3><span class=\"sev\">");
		buf_html(b, f->severity);
		buf_append(b, "</span> ");
		buf_html_isolated(b, f->problem);
		buf_append(b, "</h3>\n<p class=\"subject\">");
		buf_html(b, f->subject);
		buf_append(b, "</p>\n<p class=\"evidence\">");
		buf_html(b, f->evidence);
		buf_append(b, "</p>\n<p class=\"advice\"><b>What to do:</b> ");
		buf_html_isolated(b, f->advice);
		buf_append(b, "</p>\n<p class=\"meta\">Since ");
		buf_html(b, f->since ? f->since : "unknown");
		buf_append(b, "</p>\n");
		if (f->details)
		{
			/* For machines: folded away, the evidence says it in words. */
			buf_append(b, "<details><summary>Details (JSON)</summary><pre class=\"details\">");
			buf_html(b, f->details);
			buf_append(b, "</pre></details>\n");
		}
		buf_append(b, "</section>\n");
	}
}

/* What a victim row paid, in words. */
const char *
victim_kind_label(const char *kind)
{
	if (strcmp(kind, "suboverflowed_snapshots") == 0)
		return "executions on suboverflowed snapshots";
	if (strcmp(kind, "dead_index_entries") == 0)
		return "dead index entries visited";
	return kind;
}

/* Who pays: the victims' statements and applications, most paid first. */
static void
html_victims(Buf *b, const Snapshot *s, const Conn *c)
{
	static const char *const victim_headers[] = {
		"application", "user", "database", "paid", "in", "executions", "statement"
	};

	if (c->ext_version < 104)
		return;
	table_start(b, "Who pays: the statements that paid for the findings' problems, by application",
				victim_headers, 7, s->nvictims,
				"Nobody: no statement but the culprits' and pg_contention's own paid in the window.");
	for (int i = 0; i < s->nvictims; i++)
	{
		const VictimRow *v = &s->victims[i];

		buf_append(b, "<tr>");
		cell(b, v->application[0] ? v->application : "(none)");
		cell(b, v->usename);
		cell(b, v->datname);
		cell_number(b, fmt_count(v->paid));
		cell(b, victim_kind_label(v->kind));
		cell_number(b, fmt_count(v->executions));
		cell_query(b, v->query);
		buf_append(b, "</tr>\n");
	}
	table_end(b, s->nvictims);
}

/*
 * The charts of seconds of history: the live history (pg_contention_history)
 * or an incident's frozen one (its details' history), the same charts.
 */
/* The xmin horizon's age, one line. */
static void
horizon_chart(Buf *b, const Second *sec, int nseconds)
{
	ChartSeries one = {"xmin age", "#1565c0", nseconds ? &sec[0].horizon_age : NULL, sizeof(Second)};

	chart_svg(b, "horizon", "Age of the xmin horizon", "transactions",
			  nseconds ? &sec[0].epoch : NULL, sizeof(Second), nseconds, &one, 1, false);
}

static void
html_seconds_charts(Buf *b, const Second *sec, int nseconds, const char *problem)
{
	ChartSeries classes[NUM_CLASSES];
	ChartSeries one;
	size_t		stride = sizeof(Second);
	const double *epochs = nseconds ? &sec[0].epoch : NULL;
	/* What the problem is about first: the horizon's age for a held one. */
	bool		horizon_first = problem != NULL &&
		(strcmp(problem, "xmin_horizon_held") == 0 ||
		 strcmp(problem, "dead_tuple_index_scan") == 0 ||
		 strcmp(problem, "hot_chain_scan") == 0);

	if (horizon_first)
		horizon_chart(b, sec, nseconds);

	for (int k = 0; k < NUM_CLASSES; k++)
	{
		classes[k].name = class_names[k];
		classes[k].color = class_colors[k];
		classes[k].values = nseconds ? &sec[0].by_class[k] : NULL;
		classes[k].stride = stride;
	}
	chart_svg(b, "active", "Active backends by wait class", "backends, average per second",
			  epochs, stride, nseconds, classes, NUM_CLASSES, true);

	one.name = "lookups/s";
	one.color = "#c62828";
	one.values = nseconds ? &sec[0].lookups : NULL;
	one.stride = stride;
	chart_svg(b, "lookups", "pg_subtrans lookups per second by readers",
			  "Subtrans pages read or hit, less parent records",
			  epochs, stride, nseconds, &one, 1, false);

	one.name = "overflowed";
	one.color = "#6a1b9a";
	one.values = nseconds ? &sec[0].overflowed : NULL;
	chart_svg(b, "overflowed", "Backends with an overflowed subtransaction cache",
			  "most in one sample", epochs, stride, nseconds, &one, 1, false);

	if (!horizon_first)
		horizon_chart(b, sec, nseconds);
}

static void
html_charts(Buf *b, const Snapshot *s)
{
	const Second *sec = s->seconds;

	buf_append(b, "<h2>History</h2>\n");
	if (s->nseconds > 0)
		buf_printf(b, "<p class=\"meta\">%d seconds recorded by the sampler, from %s to %s "
				   "(a gap in a line is a time it recorded nothing, such as a restart).</p>\n",
				   s->nseconds, fmt_clock(sec[0].epoch), fmt_clock(sec[s->nseconds - 1].epoch));
	html_seconds_charts(b, s->seconds, s->nseconds, NULL);
}

static void
html_tables(Buf *b, const Snapshot *s, const Conn *c)
{
	static const char *const backend_headers[] = {
		"pid", "database", "user", "application", "state", "subxacts", "overflowed",
		"transaction age", "statement"
	};
	static const char *const holder_headers[] = {
		"kind", "holder", "pid", "database", "application", "xmin age", "held for",
		"blocks cleanup", "follows", "state", "statement"
	};
	static const char *const statement_headers[] = {
		"query id", "database", "user", "application", "calls", "suboverflowed calls",
		"pg_subtrans wait samples", "max subxacts", "buffers per row", "statement"
	};
	static const char *const index_headers[] = {
		"index", "database", "scans", "dead entries", "dead per scan", "max per scan", "dead %",
		"statement"
	};
	static const char *const event_headers[] = {
		"first", "last", "events", "pid", "database", "user", "application", "statement"
	};
	char		near[64];

	buf_append(b, "<h2>Evidence</h2>\n");

	snprintf(near, sizeof(near), "Backends with more than %d subtransactions (64 overflow)",
			 c->near_level);
	table_start(b, near, backend_headers, 9, s->nbackends, "None now.");
	for (int i = 0; i < s->nbackends; i++)
	{
		const Backend *r = &s->backends[i];
		char		n[32];

		buf_append(b, "<tr>");
		snprintf(n, sizeof(n), "%d", r->pid);
		cell_number(b, n);
		cell(b, r->datname);
		cell(b, r->usename);
		cell(b, r->application);
		cell(b, r->state);
		snprintf(n, sizeof(n), "%d", r->subxacts);
		cell_number(b, n);
		cell(b, r->overflowed ? "yes" : "no");
		cell_number(b, fmt_duration(r->xact_seconds));
		cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	table_end(b, s->nbackends);

	table_start(b, "Holders of the xmin horizon, oldest first", holder_headers, 11,
				s->nholders, "None: nothing holds the horizon back.");
	for (int i = 0; i < s->nholders; i++)
	{
		const Holder *r = &s->holders[i];
		char		n[32];

		buf_append(b, "<tr>");
		cell(b, r->kind);
		cell(b, r->holder);
		snprintf(n, sizeof(n), "%d", r->pid);
		cell_number(b, r->pid ? n : "");
		cell(b, r->datname);
		cell(b, r->application);
		cell_number(b, fmt_count(r->xmin_age));
		cell_number(b, fmt_duration(r->held_seconds));
		cell(b, r->blocks_cleanup ? "yes" : "no");
		cell(b, r->follows);
		cell(b, r->state);
		cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	table_end(b, s->nholders);

	table_start(b, "Statements by pg_subtrans waits, since the last reset", statement_headers, 10,
				s->nstatements, "None: no statement ran on a suboverflowed snapshot.");
	for (int i = 0; i < s->nstatements; i++)
	{
		const StatementRow *r = &s->statements[i];
		char		n[32];

		buf_append(b, "<tr>");
		cell(b, r->query_id);
		cell(b, r->datname);
		cell(b, r->usename);
		cell(b, r->application);
		cell_number(b, fmt_count(r->calls));
		cell_number(b, fmt_count(r->suboverflowed_calls));
		cell_number(b, fmt_count(r->subtrans_waits));
		cell_number(b, fmt_count(r->max_subxacts));
		snprintf(n, sizeof(n), "%.1f", r->blks_per_row);
		cell_number(b, isnan(r->blks_per_row) ? "-" : n);
		cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	table_end(b, s->nstatements);

	table_start(b, "Indexes by dead entries per execution, since the last reset", index_headers, 8,
				s->nindexes, "None: no measured index scan visited a dead entry.");
	for (int i = 0; i < s->nindexes; i++)
	{
		const IndexRow *r = &s->indexes[i];
		char		n[32];

		buf_append(b, "<tr>");
		cell(b, r->index);
		cell(b, r->datname);
		cell_number(b, fmt_count(r->scans));
		cell_number(b, fmt_count(r->dead_visits));
		cell_number(b, fmt_count(r->dead_per_scan));
		cell_number(b, fmt_count(r->max_dead_per_scan));
		snprintf(n, sizeof(n), "%.1f", 100 * r->dead_ratio);
		cell_number(b, isnan(r->dead_ratio) ? "-" : n);
		cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	table_end(b, s->nindexes);

	table_start(b, "Latest subtransaction-cache overflow events, by session and statement",
				event_headers, 8, s->nevents, "None recorded.");
	for (int i = 0; i < s->nevents; i++)
	{
		const EventRow *r = &s->events[i];
		char		n[32];

		buf_append(b, "<tr>");
		cell(b, r->time);
		/* the time alone when it is the same day */
		cell(b, strlen(r->last_time) > 11 && strncmp(r->time, r->last_time, 11) == 0 ?
			 r->last_time + 11 : r->last_time);
		cell_number(b, fmt_count(r->events));
		snprintf(n, sizeof(n), "%d", r->pid);
		cell_number(b, n);
		cell(b, r->datname);
		cell(b, r->usename);
		cell(b, r->application);
		cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	table_end(b, s->nevents);
}

static bool
write_out(const char *path, const char *data, size_t len)
{
	FILE	   *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
	bool		ok;

	if (f == NULL)
		return false;
	ok = fwrite(data, 1, len, f) == len;
	if (f == stdout)
		ok = (fflush(f) == 0) && ok;
	else
		ok = (fclose(f) == 0) && ok;
	return ok;
}

/*
 * The incidents open now (extension 1.4): what the server itself judged
 * worth an incident, each with the command for its frozen report.
 */
static void
html_open_incidents(Buf *b, const Snapshot *s, const Conn *c)
{
	static const char *const headers[] = {
		"id", "severity", "problem", "opened", "last seen", "subject"
	};
	int			open = 0;

	if (!c->has_incidents)
		return;
	for (int i = 0; i < s->incidents.n; i++)
		open += s->incidents.rows[i].closed[0] == '\0';
	table_start(b, "Open incidents (pg_contention report --incident=ID: each one's frozen report)",
				headers, 6, open, "None: the server has no incident open.");
	for (int i = 0; i < s->incidents.n; i++)
	{
		const Incident *r = &s->incidents.rows[i];

		if (r->closed[0] != '\0')
			continue;
		buf_append(b, "<tr>");
		cell_number(b, r->id);
		cell(b, r->severity);
		cell(b, r->problem);
		cell(b, r->opened);
		cell(b, r->last_seen);
		cell_query(b, r->subject);
		buf_append(b, "</tr>\n");
	}
	table_end(b, open);
}

static int
report_html(Conn *c, const char *path, bool with_values)
{
	SnapshotScope scope = {0};
	Snapshot	s;
	char	   *message = NULL;
	Buf			b;
	char		when[64];
	time_t		now;
	struct tm	tm;

	scope.history_seconds = 0;
	scope.row_limit = 20;
	scope.sort = SORT_COST;
	scope.events = true;
	scope.incidents = 1;		/* the open ones (and the last closed) */
	scope.without_values = !with_values;
	if (!snapshot_take(c, &scope, &s, &message))
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		return EXIT_UNKNOWN;
	}
	now = (time_t) s.taken;
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);

	buf_init(&b);
	buf_append(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
	buf_append(&b, "pg_contention report: ");
	buf_html(&b, c->target);
	buf_append(&b, " at ");
	buf_html(&b, when);
	buf_append(&b, "</title>\n<style>\n");
	buf_append(&b, page_style);
	buf_append(&b, "</style>\n</head>\n<body>\n<h1>pg_contention report</h1>\n<p class=\"meta\">");
	buf_html_isolated(&b, c->target);
	buf_append(&b, ", PostgreSQL ");
	buf_html_isolated(&b, c->server_version);
	buf_printf(&b, " (%s), at ", c->in_recovery ? "hot standby" : "primary");
	buf_html(&b, when);
	buf_append(&b, "; findings over the last ");
	buf_html_isolated(&b, s.findings_window);
	buf_append(&b, s.sampler_running ? "." : "; <b>the sampler is not running</b>: "
			   "no history or wait figures.");
	buf_append(&b, "</p>\n");

	html_findings(&b, &s);
	html_open_incidents(&b, &s, c);
	/* The charts before the tables: the top of the page shows the story. */
	html_charts(&b, &s);
	html_victims(&b, &s, c);
	html_tables(&b, &s, c);

	buf_append(&b, "<footer>Written by the pg_contention client ");
	buf_append(&b, PGC_CLIENT_PROGRAM_VERSION);
	buf_append(&b, "; the same figures are in the extension's views (pg_contention_findings, "
			   "pg_contention_history, pg_contention_horizon, pg_contention_statements, "
			   "pg_contention_index_scans).</footer>\n</body>\n</html>\n");

	snapshot_free(&s);
	if (!write_out(path, b.data, b.len))
	{
		fprintf(stderr, "%s: error: could not write \"%s\": %s\n", progname_get(), path,
				strerror(errno));
		buf_free(&b);
		return EXIT_UNKNOWN;
	}
	buf_free(&b);
	return 0;
}

/* ---- One incident, as the server froze it (pg_contention_incidents) ---- */

/* A cell of a frozen row: the value, "-" for a JSON null. */
static void
cell_frozen(Buf *b, PGresult *res, int row, int col, bool number)
{
	if (PQgetisnull(res, row, col))
		cell_number(b, "-");
	else if (number)
		cell_number(b, fmt_count(strtod(PQgetvalue(res, row, col), NULL)));
	else
		cell(b, PQgetvalue(res, row, col));
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
			cell(b, "server restarted");
			cell(b, at);
			cell(b, "");
			cell(b, "");
			if (i == 0 && not_kept > 0)
			{
				char		text[160];

				snprintf(text, sizeof(text),
						 "open across this start of the server (and %ld earlier ones, whose times are not kept)",
						 not_kept);
				cell(b, text);
			}
			else
				cell(b, "open across this start of the server");
			buf_append(b, "</tr>\n");
		}
		i++;
		times += len + (end ? 1 : 0);
	}
}

static int
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
	buf_append(&b, page_style);
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
	table_start(&b, "Open, peak and close", timeline_headers, 5, 3, "");
	/* Opened at its peak: one row, not the same figures twice. */
	peak_at_open = strcmp(PQgetvalue(inc, 0, 7), PQgetvalue(inc, 0, 8)) == 0;
	if (!peak_at_open)
	{
		buf_append(&b, "<tr>");
		cell(&b, "opened");
		cell(&b, PQgetvalue(inc, 0, 7));
		cell(&b, PQgetvalue(inc, 0, 12));
		cell(&b, PQgetvalue(inc, 0, 13));
		cell(&b, PQgetisnull(inc, 0, 14) ? "(not kept)" : PQgetvalue(inc, 0, 14));
		buf_append(&b, "</tr>\n");
	}
	timeline_restarts(&b, inc, PQgetvalue(inc, 0, 8), false);
	buf_append(&b, "<tr>");
	cell(&b, peak_at_open ? "opened at its peak" : "peak");
	cell(&b, PQgetvalue(inc, 0, 8));
	cell(&b, PQgetvalue(inc, 0, 1));
	cell(&b, PQgetvalue(inc, 0, 2));
	cell(&b, PQgetvalue(inc, 0, 3));
	buf_append(&b, "</tr>\n");
	timeline_restarts(&b, inc, PQgetvalue(inc, 0, 8), true);
	buf_append(&b, "<tr>");
	cell(&b, "closed");
	cell(&b, open ? "still open" : PQgetvalue(inc, 0, 9));
	cell(&b, "");
	cell(&b, "");
	cell(&b, open ? "" : PQgetisnull(inc, 0, 15) ? "(not kept)" : PQgetvalue(inc, 0, 15));
	buf_append(&b, "</tr>\n");
	table_end(&b, 3);

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
	table_start(&b, "Top statements at the peak", statement_headers, 10, PQntuples(res),
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
		cell_query(&b, PQgetisnull(res, i, 9) ? "" : PQgetvalue(res, i, 9));
		buf_append(&b, "</tr>\n");
	}
	table_end(&b, PQntuples(res));
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
	table_start(&b, "Holders of the xmin horizon at the peak", holder_headers, 9, PQntuples(res),
				"None kept.");
	for (int i = 0; i < PQntuples(res); i++)
	{
		buf_append(&b, "<tr>");
		cell_frozen(&b, res, i, 0, false);
		cell_frozen(&b, res, i, 1, false);
		cell_frozen(&b, res, i, 2, false);
		cell_frozen(&b, res, i, 3, true);
		cell_number(&b, PQgetisnull(res, i, 4) ? "-" :
					fmt_duration(strtod(PQgetvalue(res, i, 4), NULL)));
		cell_frozen(&b, res, i, 5, false);
		cell_frozen(&b, res, i, 6, false);
		cell_frozen(&b, res, i, 7, false);
		cell_query(&b, PQgetisnull(res, i, 8) ? "" : PQgetvalue(res, i, 8));
		buf_append(&b, "</tr>\n");
	}
	table_end(&b, PQntuples(res));
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

	if (!write_out(path, b.data, b.len))
	{
		fprintf(stderr, "%s: error: could not write \"%s\": %s\n", progname_get(), path,
				strerror(errno));
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

static int
report_text(Conn *c, long long incident, bool with_values)
{
	Buf			sql;
	Buf			out;
	PGresult   *res;
	char	   *message = NULL;

	buf_init(&sql);
	/*
	 * Every argument given, each of its parameter's type: a function
	 * planted beside the extension's could win a call that leaves one to
	 * its default or to a literal's type (doc/security.md).
	 */
	if (c->ext_version >= 104 && incident > 0)
		buf_printf(&sql, "SELECT %s.pg_contention_report(NULL::pg_catalog.interval,"
				   " %lld::pg_catalog.int8, %s::pg_catalog.bool)", c->schema,
				   incident, with_values ? "true" : "false");
	else if (c->ext_version >= 104)
		buf_printf(&sql, "SELECT %s.pg_contention_report(NULL::pg_catalog.interval,"
				   " NULL::pg_catalog.int8, %s::pg_catalog.bool)", c->schema,
				   with_values ? "true" : "false");
	else
		buf_printf(&sql, "SELECT %s.pg_contention_report(NULL::pg_catalog.interval)", c->schema);
	res = conn_query(c, sql.data, &message);
	buf_free(&sql);
	if (res == NULL)
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		return EXIT_UNKNOWN;
	}
	/* Server text: lines kept, every other control shown escaped. */
	buf_init(&out);
	buf_text_lines(&out, PQgetvalue(res, 0, 0));
	fputs(out.data, stdout);
	buf_free(&out);
	PQclear(res);
	return fflush(stdout) == 0 ? 0 : EXIT_UNKNOWN;
}

int
command_report(Conn *c, const char *html_path, bool text, long long incident,
			   bool with_values)
{
	int			rc = 0;

	if (incident > 0 && !c->has_incidents)
		return incidents_unavailable(c);
	if (html_path)
		rc = incident > 0 ? report_incident_html(c, html_path, incident, with_values) :
			report_html(c, html_path, with_values);
	if (rc == 0 && text)
		rc = report_text(c, incident, with_values);
	return rc;
}
