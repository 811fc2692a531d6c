/*-------------------------------------------------------------------------
 *
 * top_draw.c
 *		pg_contention top's frame, line by line: the header, the findings,
 *		the incidents, who pays, the backends, the holders of the xmin
 *		horizon, the last 60 seconds as sparklines, the statements; each
 *		section cut to the rows top.c's layout gives it.  Owns no state:
 *		it draws what TopState holds (top_state.h).
 *
 *-------------------------------------------------------------------------
 */
#include "top_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- lines of the frame ---- */

Buf *
new_line(TopState *t)
{
	if (t->nlines == t->maxlines)
	{
		t->maxlines = t->maxlines ? t->maxlines * 2 : 64;
		t->lines = realloc(t->lines, sizeof(Buf) * (size_t) t->maxlines);
		if (t->lines == NULL)
			fatal("out of memory");
		for (int i = t->nlines; i < t->maxlines; i++)
			buf_init(&t->lines[i]);
	}
	buf_reset(&t->lines[t->nlines]);
	return &t->lines[t->nlines++];
}

const char *
sgr(TopState *t, const char *code)
{
	return t->color ? code : "";
}

/* A line of fixed text, cut to the width, in one style. */
void
text_line(TopState *t, const char *style, const char *text)
{
	Buf		   *l = new_line(t);

	buf_append(l, sgr(t, style));
	buf_fit(l, text, t->width, false);
	buf_append(l, sgr(t, "\033[0m"));
}

/* A table's column names, underlined across the width. */
void
column_header(TopState *t, const char *head)
{
	Buf		   *l = new_line(t);

	buf_append(l, sgr(t, "\033[4m"));
	buf_fit(l, head, t->width, true);
	buf_append(l, sgr(t, "\033[0m"));
}

void
section_title(TopState *t, const char *title, int total, int shown)
{
	char		text[160];

	if (shown < total)
		snprintf(text, sizeof(text), "%s (%d, %d shown)", title, total, shown);
	else
		snprintf(text, sizeof(text), "%s (%d)", title, total);
	text_line(t, "\033[1m", text);
}

const char *
severity_style(const char *severity)
{
	switch (severity_rank(severity))
	{
		case 2:
			return "\033[1;31m";
		case 1:
			return "\033[1;33m";
		default:
			return "\033[36m";
	}
}

void
draw_header(TopState *t)
{
	char		left[512];
	char		right[64];
	Buf		   *l = new_line(t);
	int			pad;
	double		now = wall_clock();

	/*
	 * What the keys change first (pause, sort), then the time and the
	 * server: a narrow terminal cuts the target, never the mode.
	 */
	snprintf(left, sizeof(left), " pg_contention top  %ssort: %s  %s  every %g s  %s  PostgreSQL %s %s",
			 t->paused ? "PAUSED  " : "", sort_names[t->sort], fmt_clock(now), t->interval,
			 t->c->target ? t->c->target : "", t->c->server_version ? t->c->server_version : "?",
			 t->c->in_recovery ? "standby" : "primary");
	snprintf(right, sizeof(right), "%s",
			 !t->keys ? "" : t->detail ? "q quit  esc back " :
			 t->width >= 100 ? "q quit  p pause  s sort  \u2191\u2193 enter: read " :
			 "q p s \u2191\u2193 enter ");
	if (!t->utf8 && t->keys)
		snprintf(right, sizeof(right), "%s", t->detail ? "q quit  esc back " :
				 t->width >= 100 ? "q quit  p pause  s sort  j k enter: read " : "q p s j k enter ");
	buf_append(l, sgr(t, "\033[7m"));
	pad = t->width - display_width(right);
	buf_fit(l, left, pad > 0 ? pad : 0, true);
	if (pad > 0)
		buf_append(l, right);
	buf_append(l, sgr(t, "\033[0m"));
}

/* The connection's state, when it is not simply fine. */
void
draw_connection(TopState *t)
{
	char		text[1024];
	double		now = wall_clock();

	if (t->lost_since > 0)
	{
		snprintf(text, sizeof(text),
				 "CONNECTION LOST at %s (%s ago), reconnecting every %g s (attempt %d): %s%s",
				 fmt_clock(t->lost_since), fmt_duration(now - t->lost_since), t->interval,
				 t->attempts, t->lost_message ? t->lost_message : "",
				 t->have_last ? "; below: the last figures read" : "");
		text_line(t, "\033[1;37;41m", text);
	}
	else if (t->reconnected_at > 0 && now - t->reconnected_at < 60)
	{
		snprintf(text, sizeof(text), "Reconnected at %s%s%s.", fmt_clock(t->reconnected_at),
				 t->server_restarted ? "; the server restarted at " : "",
				 t->server_restarted ? fmt_clock(t->c->server_started) : "");
		text_line(t, "\033[1;32m", text);
	}
	if (t->error)
	{
		snprintf(text, sizeof(text), "Error: %s", t->error);
		text_line(t, "\033[1;31m", text);
	}
	if (t->waiting)
	{
		snprintf(text, sizeof(text), "Waiting: %s", t->waiting);
		text_line(t, "\033[1;33m", text);
	}
}

void
draw_findings(TopState *t, int shown)
{
	const Snapshot *s = &t->last;
	int			counts[3] = {0, 0, 0};
	char		title[240];
	char		age[80] = "";

	/* Read, not evaluated: say how old (check says it the same way). */
	if (s->findings_kept)
		snprintf(age, sizeof(age), " (the incidents worker's evaluation of %.0f s ago)",
				 s->taken > s->evaluated_at ? s->taken - s->evaluated_at : 0.0);
	for (int i = 0; i < s->nfindings; i++)
		counts[severity_rank(s->findings[i].severity)]++;
	if (s->nfindings == 0)
	{
		snprintf(title, sizeof(title), "Findings over the last %s: none, nothing pg_contention "
				 "checks for is wrong now%s", s->findings_window ? s->findings_window : "window", age);
		text_line(t, "\033[1;32m", title);
		return;
	}
	snprintf(title, sizeof(title), "Findings over the last %s: %d critical, %d warning, %d info%s%s",
			 s->findings_window, counts[2], counts[1], counts[0], age,
			 shown < s->nfindings ? " (more: pg_contention check)" : "");
	text_line(t, "\033[1m", title);
	for (int i = 0; i < shown && i < s->nfindings; i++)
	{
		const Finding *f = &s->findings[i];
		Buf		   *l = new_line(t);
		char		head[64];

		/* The selected finding (enter reads it whole): a marker. */
		snprintf(head, sizeof(head), "%s%-8s ", t->selecting && i == t->selected ? ">" : " ", f->severity);
		buf_append(l, sgr(t, severity_style(f->severity)));
		buf_fit(l, head, t->width, false);
		buf_append(l, sgr(t, "\033[0m\033[1m"));
		buf_fit(l, f->problem, t->width - 10, false);
		buf_append(l, sgr(t, "\033[0m"));
		buf_append(l, " ");
		buf_fit(l, f->subject, t->width - 11 - display_width(f->problem), false);
		l = new_line(t);
		buf_append(l, "          ");
		buf_fit(l, f->evidence, t->width - 10, false);
	}
}

/*
 * Who pays: the statements and applications that paid for the findings'
 * problems in the window (none before extension 1.4: no title either).
 */
void
draw_victims(TopState *t, int shown)
{
	const Snapshot *s = &t->last;
	char		title[160];

	if (t->c->ext_version < 104)
		return;
	snprintf(title, sizeof(title), "Who pays, over the last %s",
			 s->findings_window ? s->findings_window : "window");
	section_title(t, title, s->nvictims, shown);
	if (shown == 0)
		return;
	{
		char		head[256];

		snprintf(head, sizeof(head), "%-14s %-12s %12s %-21s %s", "application", "user", "paid",
				 "in", "statement");
		column_header(t, head);
	}
	for (int i = 0; i < shown; i++)
	{
		const VictimRow *v = &s->victims[i];
		Buf		   *l = new_line(t);
		Buf			row;

		buf_init(&row);
		buf_fit(&row, v->application[0] ? v->application : "(none)", 14, true);
		buf_append(&row, " ");
		buf_fit(&row, v->usename, 12, true);
		buf_printf(&row, " %12s ", fmt_count(v->paid));
		buf_fit(&row, strcmp(v->kind, "suboverflowed_snapshots") == 0 ?
				"suboverflowed execs" : "dead index entries", 21, true);
		buf_printf(&row, " %s", v->query);
		buf_fit(l, row.data, t->width, false);
		buf_free(&row);
	}
}

void
draw_backends(TopState *t, int shown)
{
	const Snapshot *s = &t->last;
	char		title[128];
	int			overflowed = s->overflowed_backends;

	snprintf(title, sizeof(title), "Subtransactions: %d backend%s overflowed, %d near (over %d of 64)%s",
			 overflowed, overflowed == 1 ? "" : "s", s->near_backends, t->c->near_level,
			 shown < overflowed + s->near_backends ? ", more not shown" : "");
	text_line(t, "\033[1m", title);
	if (shown == 0)
		return;
	{
		char		head[256];

		snprintf(head, sizeof(head), "%8s %-12s %-12s %-14s %-19s %9s %10s  %s", "pid",
				 "database", "user", "application", "state", "subxacts", "xact age",
				 "statement");
		column_header(t, head);
	}
	for (int i = 0; i < shown; i++)
	{
		const Backend *b = &s->backends[i];
		Buf		   *l = new_line(t);
		Buf			row;
		char		subx[32];

		buf_init(&row);
		snprintf(subx, sizeof(subx), b->overflowed ? "%d ovfl" : "%d", b->subxacts);
		buf_printf(&row, "%8d ", b->pid);
		buf_fit(&row, b->datname, 12, true);
		buf_append(&row, " ");
		buf_fit(&row, b->usename, 12, true);
		buf_append(&row, " ");
		buf_fit(&row, b->application, 14, true);
		buf_append(&row, " ");
		buf_fit(&row, b->state, 19, true);
		buf_printf(&row, " %9s %10s  ", subx, fmt_duration(b->xact_seconds));
		buf_append(&row, b->query);
		if (b->overflowed)
			buf_append(l, sgr(t, "\033[31m"));
		buf_fit(l, row.data, t->width, false);
		buf_append(l, sgr(t, "\033[0m"));
		buf_free(&row);
	}
}

void
draw_holders(TopState *t, int shown)
{
	const Snapshot *s = &t->last;

	section_title(t, "Holders of the xmin horizon", s->nholders, shown);
	if (shown == 0)
		return;
	{
		char		head[256];

		snprintf(head, sizeof(head), "%-18s %-14s %10s %10s %6s  %s", "kind", "holder",
				 "xmin age", "held for", "blocks", "state, application, statement");
		column_header(t, head);
	}
	for (int i = 0; i < shown; i++)
	{
		const Holder *h = &s->holders[i];
		Buf		   *l = new_line(t);
		Buf			row;
		char		pid[16] = "";

		buf_init(&row);
		/*
		 * A backend's holder is its pid: one column.  A slot's or a
		 * prepared transaction's is a name; the pid of its process, if
		 * any, goes with the rest.
		 */
		if (h->pid)
		{
			snprintf(pid, sizeof(pid), "%d", h->pid);
			if (strcmp(h->holder, pid) == 0)
				pid[0] = '\0';
		}
		buf_fit(&row, h->kind, 18, true);
		buf_append(&row, " ");
		buf_fit(&row, h->holder, 14, true);
		buf_printf(&row, " %10s %10s %6s  ", fmt_count(h->xmin_age),
				   fmt_duration(h->held_seconds), h->blocks_cleanup ? "yes" : "no");
		{
			/* What is known of it, comma-separated: masked parts are empty. */
			const char *parts[5] = {pid, h->follows, h->state, h->application, h->query};
			static const char *const prefix[5] = {"pid ", "follows ", "", "", ""};
			bool		first = true;

			for (int k = 0; k < 5; k++)
			{
				if (parts[k][0] == '\0')
					continue;
				buf_printf(&row, "%s%s%s", first ? "" : ", ", prefix[k], parts[k]);
				first = false;
			}
		}
		if (h->blocks_cleanup)
			buf_append(l, sgr(t, "\033[31m"));
		buf_fit(l, row.data, t->width, false);
		buf_append(l, sgr(t, "\033[0m"));
		buf_free(&row);
	}
}

/*
 * The history's lines in the frame: none, or its title and the series the
 * layout gives it (top.c's plan_rows: tables get rows first).
 */
int
history_lines(const TopState *t)
{
	switch (t->history_mode)
	{
		case HISTORY_NONE:
			return 0;
		case HISTORY_COMPACT:
			return 1 + HISTORY_ROWS - 6;
		default:
			return 1 + HISTORY_ROWS;
	}
}

/* One history series as a sparkline with its latest and highest value. */
static void
spark_row(TopState *t, const char *label, const double *series, int spark_width)
{
	Buf		   *l = new_line(t);
	double		latest = NAN,
				max = NAN;

	for (int i = 0; i < HISTORY_SPAN; i++)
	{
		if (isnan(series[i]))
			continue;
		latest = series[i];
		if (isnan(max) || series[i] > max)
			max = series[i];
	}
	buf_printf(l, " %-18s ", label);
	sparkline(l, series, sizeof(double), HISTORY_SPAN, spark_width, t->utf8);
	buf_printf(l, " %8s %8s", fmt_compact(latest), fmt_compact(max));
}

void
draw_history(TopState *t)
{
	const Snapshot *s = &t->last;
	double		rows[HISTORY_ROWS][HISTORY_SPAN];
	static const char *const labels[HISTORY_ROWS] = {
		"active backends", "  CPU", "  LWLock", "  Lock", "  IO", "  IPC", "  other waits",
		"subtrans waits", "subtrans lookups/s", "overflowed", "xmin horizon age"
	};
	double		end = floor(s->taken) - 1;	/* the last completed second */
	int			spark_width = t->width - 40;
	char		title[128];
	bool		stale = false;	/* the finding sampler_stale */

	if (t->history_mode == HISTORY_NONE)
		return;
	if (spark_width > HISTORY_SPAN)
		spark_width = HISTORY_SPAN;
	if (spark_width < 10)
		spark_width = 10;
	for (int r = 0; r < HISTORY_ROWS; r++)
		for (int i = 0; i < HISTORY_SPAN; i++)
			rows[r][i] = NAN;
	for (int k = 0; k < s->nseconds; k++)
	{
		const Second *b = &s->seconds[k];
		int			i = HISTORY_SPAN - 1 - (int) (end - b->epoch);
		double		other = 0;

		if (i < 0 || i >= HISTORY_SPAN)
			continue;
		rows[0][i] = b->active;
		for (int c = 0; c < 5; c++)
			rows[1 + c][i] = b->by_class[c];
		for (int c = 5; c < NUM_CLASSES; c++)
			other += b->by_class[c];
		rows[6][i] = other;
		rows[7][i] = b->subtrans_waits;
		rows[8][i] = b->lookups;
		rows[9][i] = b->overflowed;
		rows[10][i] = b->horizon_age;
	}
	for (int i = 0; i < s->nfindings; i++)
		if (s->findings[i].problem && strcmp(s->findings[i].problem, "sampler_stale") == 0)
			stale = true;
	snprintf(title, sizeof(title), "Last %d seconds%s", HISTORY_SPAN,
			 !s->sampler_running ? " (the sampler is not running)" :
			 stale ? " (the sampler has stopped)" : "");
	{
		Buf		   *l = new_line(t);
		Buf			head;

		buf_init(&head);
		buf_printf(&head, "%-20s", title);
		for (int i = 20; i < spark_width + 20; i++)
			buf_append(&head, " ");
		buf_printf(&head, " %8s %8s", "now", "max");
		buf_append(l, sgr(t, "\033[1m"));
		buf_fit(l, head.data, t->width, false);
		buf_append(l, sgr(t, "\033[0m"));
		buf_free(&head);
	}
	for (int r = 0; r < HISTORY_ROWS; r++)
		if (t->history_mode == HISTORY_FULL || r == 0 || r >= 7)
			spark_row(t, labels[r], rows[r], spark_width);
}

void
draw_statements(TopState *t, int shown)
{
	const Snapshot *s = &t->last;

	section_title(t, "Statements by pg_subtrans waits, since reset", s->nstatements, shown);
	if (shown == 0)
		return;
	{
		char		head[256];

		snprintf(head, sizeof(head), "%9s %12s %12s %8s  %-14s %s", "waits", "subovfl calls", "calls",
				 "max subx", "application", "statement");
		column_header(t, head);
	}
	for (int i = 0; i < shown; i++)
	{
		const StatementRow *r = &s->statements[i];
		Buf		   *l = new_line(t);
		Buf			row;

		buf_init(&row);
		buf_printf(&row, "%9s %12s %12s %8s  ", fmt_count(r->subtrans_waits),
				   fmt_count(r->suboverflowed_calls), fmt_count(r->calls),
				   fmt_count(r->max_subxacts));
		buf_fit(&row, r->application, 14, true);
		buf_printf(&row, " %s", r->query);
		buf_fit(l, row.data, t->width, false);
		buf_free(&row);
	}
}

void
draw_indexes(TopState *t, int shown)
{
	const Snapshot *s = &t->last;

	section_title(t, "Statements by dead index entries per execution, since reset",
				  s->nindexes, shown);
	if (shown == 0)
		return;
	{
		char		head[256];

		snprintf(head, sizeof(head), "%10s %12s %9s %6s  %-28s %s", "dead/exec", "dead", "scans",
				 "dead%", "index", "statement");
		column_header(t, head);
	}
	for (int i = 0; i < shown; i++)
	{
		const IndexRow *r = &s->indexes[i];
		Buf		   *l = new_line(t);
		Buf			row;
		char		ratio[16];

		buf_init(&row);
		snprintf(ratio, sizeof(ratio), isnan(r->dead_ratio) ? "-" : "%.0f%%", 100 * r->dead_ratio);
		buf_printf(&row, "%10s %12s %9s %6s  ", fmt_count(r->dead_per_scan),
				   fmt_count(r->dead_visits), fmt_count(r->scans), ratio);
		buf_fit(&row, r->index, 28, true);
		buf_printf(&row, " %s", r->query);
		buf_fit(l, row.data, t->width, false);
		buf_free(&row);
	}
}

/* The time of a "YYYY-MM-DD HH:MM:SS" from the server: "HH:MM:SS". */
static const char *
time_part(const char *stamp)
{
	return strlen(stamp) >= 19 ? stamp + 11 : stamp;
}

/*
 * The incidents the server kept (extension 1.4): the open ones, then the
 * last closed, one line each, no column header (nothing at all before 1.4).
 */
void
draw_incidents(TopState *t, int shown)
{
	const IncidentList *list = &t->last.incidents;
	char		title[160];

	if (!t->c->has_incidents)
		return;
	if (list->total == 0)
	{
		text_line(t, "\033[1m", "Incidents: none kept");
		return;
	}
	snprintf(title, sizeof(title), "Incidents: %d open, %d closed%s", list->total_open,
			 list->total - list->total_open,
			 shown < list->total ? " (more: pg_contention incidents)" : "");
	text_line(t, "\033[1m", title);
	for (int i = 0; i < shown && i < list->n; i++)
	{
		const Incident *r = &list->rows[i];
		Buf		   *l = new_line(t);
		Buf			row;

		buf_init(&row);
		buf_append(&row, " #");
		buf_append(&row, r->id);
		buf_append(l, sgr(t, r->open ? severity_style(r->severity) : ""));
		buf_fit(l, row.data, 6, true);
		buf_fit(l, r->open ? " OPEN   " : " closed ", 8, true);
		buf_append(l, sgr(t, "\033[0m"));
		buf_reset(&row);
		buf_append(&row, r->peak_severity);
		buf_append(&row, " ");
		buf_fit(l, row.data, 9, true);
		buf_reset(&row);
		if (r->open)
			buf_printf(&row, " since %s", time_part(r->opened));
		else
			buf_printf(&row, " %s-%s", time_part(r->opened), time_part(r->closed));
		buf_append(&row, "  ");
		buf_append(&row, r->problem);
		buf_append(&row, ": ");
		buf_append(&row, r->subject);
		buf_fit(l, row.data, t->width - 23, false);
		buf_free(&row);
	}
}

/*
 * A text wrapped at spaces to the width, each line indented by indent
 * columns; a word wider than a line is cut there.  At most max_lines
 * lines (the last one says what is left out).
 */
static void
wrapped(TopState *t, int indent, const char *text, int max_lines)
{
	int			width = t->width - indent;
	const char *p = text ? text : "";
	int			n = 0;

	while (*p == ' ')
		p++;
	while (*p != '\0' && n < max_lines)
	{
		Buf		   *l = new_line(t);
		Buf			part;
		const char *cut = NULL;
		const char *q = p;

		/* The longest run of whole words that fits. */
		buf_init(&part);
		while (*q != '\0')
		{
			const char *word_end = strchr(q + 1, ' ');

			if (word_end == NULL)
				word_end = q + strlen(q);
			buf_reset(&part);
			buf_appendn(&part, p, (size_t) (word_end - p));
			if (display_width(part.data) > width)
				break;
			cut = word_end;
			q = word_end;
		}
		if (cut == NULL)		/* one word wider than the line: cut, go on */
			cut = p + strcspn(p, " ");
		buf_reset(&part);
		buf_appendn(&part, p, (size_t) (cut - p));
		for (int i = 0; i < indent; i++)
			buf_append(l, " ");
		if (++n == max_lines && *cut != '\0')
		{
			buf_fit(l, part.data, width - 4, false);
			buf_append(l, " ...");
		}
		else
			buf_fit(l, part.data, width, false);
		buf_free(&part);
		p = cut;
		while (*p == ' ')
			p++;
	}
}

/*
 * The selected finding read whole (enter): its subject, evidence and
 * advice wrapped to the screen, what no table row can hold.
 */
void
draw_detail(TopState *t)
{
	const Snapshot *s = &t->last;
	const Finding *f;
	char		title[160];
	int			room;

	if (s->nfindings == 0)
	{
		text_line(t, "\033[1;32m", "No finding to read: nothing pg_contention checks for is wrong now.");
		return;
	}
	if (t->selected >= s->nfindings)
		t->selected = s->nfindings - 1;
	f = &s->findings[t->selected];
	snprintf(title, sizeof(title), "Finding %d of %d: %s %s, since %s (esc or enter: back; up, down: another)",
			 t->selected + 1, s->nfindings, f->severity, f->problem, f->since ? f->since : "unknown");
	text_line(t, severity_style(f->severity), title);
	/* Whatever the height, each part gets a share; a tall screen all. */
	room = t->height > 0 ? (t->height - t->nlines - 6) / 3 : 1000;
	if (room < 2)
		room = 2;
	new_line(t);
	text_line(t, "\033[1m", "Subject");
	wrapped(t, 2, f->subject, room);
	text_line(t, "\033[1m", "Evidence");
	wrapped(t, 2, f->evidence, room);
	text_line(t, "\033[1m", "Advice");
	wrapped(t, 2, f->advice, room);
}
