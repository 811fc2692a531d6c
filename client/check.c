/*-------------------------------------------------------------------------
 *
 * check.c
 *		pg_contention check: the findings for a monitoring system.  One
 *		status line in the monitoring-plugin format ("PG_CONTENTION
 *		WARNING - ... | perfdata"), then one line per finding; exit 0 when
 *		nothing is above info, 1 for a warning, 2 for a critical finding,
 *		3 when it could not tell: the server did not answer, or the sampler
 *		has stopped (the finding sampler_stale: the evidence stops at its
 *		last sample, so "no finding" means nothing; a critical finding
 *		still says 2).  --json prints one JSON document instead.
 *
 * The monitoring-plugin format (monitoring-plugins.org, guidelines):
 * "TEXT | PERFDATA", then long text lines, any of which may again carry
 * " | PERFDATA".  So no text from the server may hold a "|" (shown as
 * "\x7c") or a newline, and a performance-data label is quoted
 * ('label'=value, a quote doubled) when it holds a space, "=" or "'".
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};

void
check_print_unknown(const char *message, bool json)
{
	if (json)
	{
		Buf			out;

		buf_init(&out);
		buf_append(&out, "{\"status\": \"UNKNOWN\", \"exit_code\": 3, \"error\": ");
		buf_json_string(&out, message);
		buf_append(&out, ", \"findings\": []}\n");
		fputs(out.data, stdout);
		buf_free(&out);
	}
	else
	{
		Buf			out;

		buf_init(&out);
		buf_append(&out, "PG_CONTENTION UNKNOWN - ");
		buf_text_plugin(&out, message);
		buf_append(&out, "\n");
		fputs(out.data, stdout);
		buf_free(&out);
	}
}

/* One performance-data value: 'label'=value, quoted when it must be. */
static void
perfdata(Buf *out, const char *label, int value)
{
	buf_append(out, " ");
	if (strpbrk(label, " ='") == NULL)
		buf_append(out, label);
	else
	{
		buf_append(out, "'");
		for (const char *p = label; *p; p++)
		{
			if (*p == '\'')
				buf_append(out, "''");
			else
				buf_appendn(out, p, 1);
		}
		buf_append(out, "'");
	}
	buf_printf(out, "=%d", value);
}

int
command_check(Conn *c, bool json, bool live)
{
	SnapshotScope scope = {0};
	Snapshot	s;
	char	   *message = NULL;
	int			counts[3] = {0, 0, 0};
	int			worst;
	const Finding *stale = NULL;
	char	   *not_kept;
	Buf			out;

	scope.findings_only = true;
	scope.kept_findings = !live;
	if (!snapshot_take(c, &scope, &s, &message))
	{
		fprintf(stderr, "%s: error: %s\n", progname_get(), message);
		check_print_unknown(message, json);
		return EXIT_UNKNOWN;
	}
	for (int i = 0; i < s.nfindings; i++)
		counts[severity_rank(s.findings[i].severity)]++;
	worst = snapshot_worst(&s);
	for (int i = 0; i < s.nfindings; i++)
		if (s.findings[i].problem && strcmp(s.findings[i].problem, "sampler_stale") == 0)
			stale = &s.findings[i];
	if (stale && worst < 2)
		worst = EXIT_UNKNOWN;
	/* Findings no worker keeps as incidents: nobody is paged from them. */
	not_kept = incidents_not_kept(c);
	if (not_kept && worst == 0)
		worst = 1;

	buf_init(&out);
	if (json)
	{
		buf_printf(&out, "{\"status\": \"%s\", \"exit_code\": %d, \"server\": ",
				   status_names[worst], worst);
		buf_json_string(&out, c->target);
		buf_append(&out, ", \"server_version\": ");
		buf_json_string(&out, c->server_version);
		buf_printf(&out, ", \"in_recovery\": %s, \"checked_at\": %.3f, \"findings_window\": ",
				   c->in_recovery ? "true" : "false", s.taken);
		buf_json_string(&out, s.findings_window);
		buf_printf(&out, ", \"evaluated_at\": %.3f, \"evaluated_by\": \"%s\"",
				   s.evaluated_at, s.findings_kept ? "incidents worker" : "check");
		buf_append(&out, ", \"incidents_not_kept\": ");
		if (not_kept)
			buf_json_string(&out, not_kept);
		else
			buf_append(&out, "null");
		if (stale)
		{
			buf_append(&out, ", \"error\": ");
			buf_json_string(&out, "the sampler has stopped: the findings are blind since its last sample");
		}
		buf_printf(&out, ", \"counts\": {\"critical\": %d, \"warning\": %d, \"info\": %d}",
				   counts[2], counts[1], counts[0]);
		buf_append(&out, ", \"findings\": [");
		for (int i = 0; i < s.nfindings; i++)
		{
			Finding    *f = &s.findings[i];

			buf_append(&out, i ? ",\n  {" : "\n  {");
			buf_append(&out, "\"severity\": ");
			buf_json_string(&out, f->severity);
			buf_append(&out, ", \"problem\": ");
			buf_json_string(&out, f->problem);
			buf_append(&out, ", \"subject\": ");
			buf_json_string(&out, f->subject);
			buf_append(&out, ", \"evidence\": ");
			buf_json_string(&out, f->evidence);
			buf_append(&out, ", \"advice\": ");
			buf_json_string(&out, f->advice);
			buf_append(&out, ", \"since\": ");
			buf_json_string(&out, f->since);
			/* Already JSON: the server's jsonb output. */
			buf_append(&out, ", \"details\": ");
			buf_json_raw(&out, f->details);
			buf_append(&out, "}");
		}
		buf_append(&out, s.nfindings ? "\n]}\n" : "]}\n");
	}
	else
	{
		buf_printf(&out, "PG_CONTENTION %s - ", status_names[worst]);
		if (stale)
			buf_append(&out, "the sampler has stopped, the findings are blind since its last sample; ");
		if (not_kept)
		{
			buf_append(&out, "the incidents are not kept: ");
			buf_text_plugin(&out, not_kept);
			buf_append(&out, "; ");
		}
		if (s.nfindings == 0)
			buf_append(&out, "no findings");
		else
			buf_printf(&out, "%d finding%s (%d critical, %d warning, %d info)",
					   s.nfindings, s.nfindings == 1 ? "" : "s", counts[2], counts[1], counts[0]);
		buf_append(&out, " on ");
		buf_text_plugin(&out, c->target);
		if (s.findings_kept)
			buf_printf(&out, " (the incidents worker's evaluation of %.0f s ago)",
					   s.taken > s.evaluated_at ? s.taken - s.evaluated_at : 0.0);
		buf_append(&out, " |");
		perfdata(&out, "findings", s.nfindings);
		perfdata(&out, "critical", counts[2]);
		perfdata(&out, "warning", counts[1]);
		perfdata(&out, "info", counts[0]);
		buf_append(&out, "\n");
		for (int i = 0; i < s.nfindings; i++)
		{
			Finding    *f = &s.findings[i];

			/* One line each (data.c made them one line), no "|". */
			buf_text_plugin(&out, f->severity);
			buf_append(&out, " ");
			buf_text_plugin(&out, f->problem);
			buf_append(&out, ": ");
			buf_text_plugin(&out, f->subject);
			buf_append(&out, ". ");
			buf_text_plugin(&out, f->evidence);
			buf_append(&out, " Advice: ");
			buf_text_plugin(&out, f->advice);
			buf_append(&out, "\n");
		}
	}
	fputs(out.data, stdout);
	buf_free(&out);
	free(not_kept);
	snapshot_free(&s);
	return worst;
}
