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
 *		kept (report_incident.c).  The page's shared parts (style, cells,
 *		charts of seconds, writing the file) are report_page.c's.
 *
 * Texts from the server are escaped as util.c says: in the page, those
 * inline among the page's own words are also isolated from its direction
 * (<bdi>); in --text, lines and tabs are kept and every other control is
 * shown escaped.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	html_table_start(b, "Who pays: the statements that paid for the findings' problems, by application",
				victim_headers, 7, s->nvictims,
				"Nobody: no statement but the culprits' and pg_contention's own paid in the window.");
	for (int i = 0; i < s->nvictims; i++)
	{
		const VictimRow *v = &s->victims[i];

		buf_append(b, "<tr>");
		html_cell(b, v->application[0] ? v->application : "(none)");
		html_cell(b, v->usename);
		html_cell(b, v->datname);
		html_cell_number(b, fmt_count(v->paid));
		html_cell(b, victim_kind_label(v->kind));
		html_cell_number(b, fmt_count(v->executions));
		html_cell_query(b, v->query);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, s->nvictims);
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
	html_table_start(b, near, backend_headers, 9, s->nbackends, "None now.");
	for (int i = 0; i < s->nbackends; i++)
	{
		const Backend *r = &s->backends[i];
		char		n[32];

		buf_append(b, "<tr>");
		snprintf(n, sizeof(n), "%d", r->pid);
		html_cell_number(b, n);
		html_cell(b, r->datname);
		html_cell(b, r->usename);
		html_cell(b, r->application);
		html_cell(b, r->state);
		snprintf(n, sizeof(n), "%d", r->subxacts);
		html_cell_number(b, n);
		html_cell(b, r->overflowed ? "yes" : "no");
		html_cell_number(b, fmt_duration(r->xact_seconds));
		html_cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, s->nbackends);

	html_table_start(b, "Holders of the xmin horizon, oldest first", holder_headers, 11,
				s->nholders, "None: nothing holds the horizon back.");
	for (int i = 0; i < s->nholders; i++)
	{
		const Holder *r = &s->holders[i];
		char		n[32];

		buf_append(b, "<tr>");
		html_cell(b, r->kind);
		html_cell(b, r->holder);
		snprintf(n, sizeof(n), "%d", r->pid);
		html_cell_number(b, r->pid ? n : "");
		html_cell(b, r->datname);
		html_cell(b, r->application);
		html_cell_number(b, fmt_count(r->xmin_age));
		html_cell_number(b, fmt_duration(r->held_seconds));
		html_cell(b, r->blocks_cleanup ? "yes" : "no");
		html_cell(b, r->follows);
		html_cell(b, r->state);
		html_cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, s->nholders);

	html_table_start(b, "Statements by pg_subtrans waits, since the last reset", statement_headers, 10,
				s->nstatements, "None: no statement ran on a suboverflowed snapshot.");
	for (int i = 0; i < s->nstatements; i++)
	{
		const StatementRow *r = &s->statements[i];
		char		n[32];

		buf_append(b, "<tr>");
		html_cell(b, r->query_id);
		html_cell(b, r->datname);
		html_cell(b, r->usename);
		html_cell(b, r->application);
		html_cell_number(b, fmt_count(r->calls));
		html_cell_number(b, fmt_count(r->suboverflowed_calls));
		html_cell_number(b, fmt_count(r->subtrans_waits));
		html_cell_number(b, fmt_count(r->max_subxacts));
		snprintf(n, sizeof(n), "%.1f", r->blks_per_row);
		html_cell_number(b, isnan(r->blks_per_row) ? "-" : n);
		html_cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, s->nstatements);

	html_table_start(b, "Indexes by dead entries per execution, since the last reset", index_headers, 8,
				s->nindexes, "None: no measured index scan visited a dead entry.");
	for (int i = 0; i < s->nindexes; i++)
	{
		const IndexRow *r = &s->indexes[i];
		char		n[32];

		buf_append(b, "<tr>");
		html_cell(b, r->index);
		html_cell(b, r->datname);
		html_cell_number(b, fmt_count(r->scans));
		html_cell_number(b, fmt_count(r->dead_visits));
		html_cell_number(b, fmt_count(r->dead_per_scan));
		html_cell_number(b, fmt_count(r->max_dead_per_scan));
		snprintf(n, sizeof(n), "%.1f", 100 * r->dead_ratio);
		html_cell_number(b, isnan(r->dead_ratio) ? "-" : n);
		html_cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, s->nindexes);

	html_table_start(b, "Latest subtransaction-cache overflow events, by session and statement",
				event_headers, 8, s->nevents, "None recorded.");
	for (int i = 0; i < s->nevents; i++)
	{
		const EventRow *r = &s->events[i];
		char		n[32];

		buf_append(b, "<tr>");
		html_cell(b, r->time);
		/* the time alone when it is the same day */
		html_cell(b, strlen(r->last_time) > 11 && strncmp(r->time, r->last_time, 11) == 0 ?
			 r->last_time + 11 : r->last_time);
		html_cell_number(b, fmt_count(r->events));
		snprintf(n, sizeof(n), "%d", r->pid);
		html_cell_number(b, n);
		html_cell(b, r->datname);
		html_cell(b, r->usename);
		html_cell(b, r->application);
		html_cell_query(b, r->query);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, s->nevents);
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
	html_table_start(b, "Open incidents (pg_contention report --incident=ID: each one's frozen report)",
				headers, 6, open, "None: the server has no incident open.");
	for (int i = 0; i < s->incidents.n; i++)
	{
		const Incident *r = &s->incidents.rows[i];

		if (r->closed[0] != '\0')
			continue;
		buf_append(b, "<tr>");
		html_cell_number(b, r->id);
		html_cell(b, r->severity);
		html_cell(b, r->problem);
		html_cell(b, r->opened);
		html_cell(b, r->last_seen);
		html_cell_query(b, r->subject);
		buf_append(b, "</tr>\n");
	}
	html_table_end(b, open);
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
	buf_append(&b, html_page_style);
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
	if (!html_write_out(path, b.data, b.len))
	{
		buf_free(&b);
		return EXIT_UNKNOWN;
	}
	buf_free(&b);
	return 0;
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
