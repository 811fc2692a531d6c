/*-------------------------------------------------------------------------
 *
 * report_page.c
 *		The parts of the HTML page that the live report (report.c) and an
 *		incident's page (report_incident.c) share: its style sheet, the
 *		tables and their cells, the charts of seconds of history, and the
 *		writing of the file.
 *
 * Every text from the server is escaped as util.c says (buf_html); a
 * statement is cut to a readable length, whole behind a disclosure.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"
#include "report.h"
#include "../src/problem_list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const html_page_style =
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
void
html_cell(Buf *b, const char *text)
{
	buf_append(b, "<td>");
	buf_html(b, text);
	buf_append(b, "</td>");
}

void
html_cell_number(Buf *b, const char *text)
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

void
html_cell_query(Buf *b, const char *text)
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

void
html_table_start(Buf *b, const char *title, const char *const *headers, int nheaders, int rows,
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

void
html_table_end(Buf *b, int rows)
{
	if (rows > 0)
		buf_append(b, "</tbody></table>\n");
}

/* The xmin horizon's age, one line. */
static void
horizon_chart(Buf *b, const Second *sec, int nseconds)
{
	ChartSeries one = {"xmin age", "#1565c0", nseconds ? &sec[0].horizon_age : NULL, sizeof(Second)};

	chart_svg(b, "horizon", "Age of the xmin horizon", "transactions",
			  nseconds ? &sec[0].epoch : NULL, sizeof(Second), nseconds, &one, 1, false);
}

/*
 * The charts of seconds of history: the live history (pg_contention_history)
 * or an incident's frozen one (its details' history), the same charts.
 */
void
html_seconds_charts(Buf *b, const Second *sec, int nseconds, const char *problem)
{
	ChartSeries classes[NUM_CLASSES];
	ChartSeries one;
	size_t		stride = sizeof(Second);
	const double *epochs = nseconds ? &sec[0].epoch : NULL;
	/* What the problem is about first: the horizon's age for a held one. */
	const PgcProblem *about = pgc_problem(problem);
	bool		horizon_first = about != NULL && about->horizon;

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

/*
 * The page into path ("-": standard output).  A file written is said on
 * standard output, which the page does not take then (its name and size);
 * a failure on standard error, which is kept for errors.
 */
bool
html_write_out(const char *path, const char *data, size_t len)
{
	FILE	   *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
	bool		ok;

	if (f != NULL)
	{
		ok = fwrite(data, 1, len, f) == len;
		if (f == stdout)
			ok = (fflush(f) == 0) && ok;
		else
			ok = (fclose(f) == 0) && ok;
	}
	else
		ok = false;
	if (!ok)
		fprintf(stderr, "%s: error: could not write \"%s\": %s\n", progname_get(), path,
				strerror(errno));
	else if (f != stdout)
		printf("%s: wrote %s (%zu kB)\n", progname_get(), path, (len + 1023) / 1024);
	return ok;
}
