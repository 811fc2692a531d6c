/*-------------------------------------------------------------------------
 *
 * top.c
 *		pg_contention top: a live view for the incident, refreshed every
 *		--interval seconds.  From the top: the findings, the incidents the
 *		server kept (open ones, then the last closed), the backends past
 *		or near subtransaction-cache overflow, the holders of the xmin
 *		horizon, the last 60 seconds as sparklines, the statements behind
 *		pg_subtrans waits and behind dead index entries.
 *
 * On a terminal it draws full screen (the alternate screen, VT100 escape
 * sequences that every terminal emulator and tmux understand: no terminal
 * library) and reads keys: q quits, p or space pauses, s switches the sort
 * of the statement tables.  Not on a terminal it prints each refresh as
 * plain text.  When the connection drops (a server restart) it keeps the
 * last screen, says so, and reconnects at every refresh.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <langinfo.h>

#define HISTORY_SPAN	60		/* seconds shown as sparklines */
#define MAX_ROWS		20		/* rows read per table */

/*
 * Seconds between two reads of the incidents: the server changes them at
 * most every pg_contention.incident_interval (10 s by default), and reading
 * the view costs the server ~45 ms of CPU with 100 incidents kept (their
 * frozen details are built for every row), three times the rest of a
 * refresh.
 */
#define INCIDENTS_EVERY	10.0

static volatile sig_atomic_t got_stop = 0;
static volatile sig_atomic_t got_resize = 0;

static struct termios saved_termios;
static bool terminal_changed = false;
static bool screen_entered = false;

typedef struct TopState
{
	Conn	   *c;
	bool		tty;			/* draw full screen */
	bool		keys;			/* read keys from stdin */
	bool		utf8;
	bool		color;
	int			width;
	int			height;
	bool		paused;
	SortMode	sort;
	double		interval;

	Snapshot	last;			/* what is on screen */
	bool		have_last;
	char	   *error;			/* the last refresh's error, the server up */
	double		lost_since;		/* wall clock; 0 when connected */
	char	   *lost_message;
	int			attempts;
	double		reconnected_at; /* wall clock; 0 when not recently */
	bool		server_restarted;
	double		known_start;	/* the server's start time when first seen */
	double		incidents_read_at;	/* monotonic; 0: read at the next refresh */

	Buf		   *lines;
	int			nlines;
	int			maxlines;
} TopState;

static void
on_stop(int signo)
{
	(void) signo;
	got_stop = 1;
}

static void
on_resize(int signo)
{
	(void) signo;
	got_resize = 1;
}

static double
wall_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Put the terminal back as it was, whatever way the program ends. */
static void
restore_terminal(void)
{
	if (screen_entered)
	{
		/* Show the cursor, leave the alternate screen. */
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		screen_entered = false;
	}
	if (terminal_changed)
	{
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
		terminal_changed = false;
	}
}

static void
setup_terminal(TopState *t)
{
	struct termios raw;

	if (t->keys && tcgetattr(STDIN_FILENO, &saved_termios) == 0)
	{
		raw = saved_termios;
		/* Keys one by one, not echoed; ^C still raises SIGINT. */
		raw.c_lflag &= ~(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
			terminal_changed = true;
	}
	if (t->tty)
	{
		/* The alternate screen, the cursor hidden. */
		fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
		fflush(stdout);
		screen_entered = true;
	}
	atexit(restore_terminal);
}

static void
screen_size(TopState *t)
{
	struct winsize ws;

	t->width = 132;
	t->height = 0;				/* unlimited */
	if (t->tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
	{
		t->width = ws.ws_col;
		t->height = ws.ws_row;
	}
	else if (!t->tty && getenv("COLUMNS") && atoi(getenv("COLUMNS")) > 40)
		t->width = atoi(getenv("COLUMNS"));
	if (t->width < 40)
		t->width = 40;
}

/* ---- lines of the frame ---- */

static Buf *
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

static const char *
sgr(TopState *t, const char *code)
{
	return t->color ? code : "";
}

/* A line of fixed text, cut to the width, in one style. */
static void
text_line(TopState *t, const char *style, const char *text)
{
	Buf		   *l = new_line(t);

	buf_append(l, sgr(t, style));
	buf_fit(l, text, t->width, false);
	buf_append(l, sgr(t, "\033[0m"));
}

/* A table's column names, underlined across the width. */
static void
column_header(TopState *t, const char *head)
{
	Buf		   *l = new_line(t);

	buf_append(l, sgr(t, "\033[4m"));
	buf_fit(l, head, t->width, true);
	buf_append(l, sgr(t, "\033[0m"));
}

static void
section_title(TopState *t, const char *title, int total, int shown)
{
	char		text[160];

	if (shown < total)
		snprintf(text, sizeof(text), "%s (%d, %d shown)", title, total, shown);
	else
		snprintf(text, sizeof(text), "%s (%d)", title, total);
	text_line(t, "\033[1m", text);
}

static const char *
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

static void
draw_header(TopState *t)
{
	char		left[512];
	char		right[64];
	Buf		   *l = new_line(t);
	int			pad;
	double		now = wall_clock();

	snprintf(left, sizeof(left), " pg_contention top  %s  PostgreSQL %s %s  %s  every %g s  sort: %s%s",
			 t->c->target ? t->c->target : "", t->c->server_version ? t->c->server_version : "?",
			 t->c->in_recovery ? "standby" : "primary", fmt_clock(now), t->interval,
			 sort_names[t->sort], t->paused ? "  PAUSED" : "");
	snprintf(right, sizeof(right), "%s", t->keys ? "q quit  p pause  s sort " : "");
	buf_append(l, sgr(t, "\033[7m"));
	pad = t->width - display_width(right);
	buf_fit(l, left, pad > 0 ? pad : 0, true);
	if (pad > 0)
		buf_append(l, right);
	buf_append(l, sgr(t, "\033[0m"));
}

/* The connection's state, when it is not simply fine. */
static void
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
}

static void
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

		snprintf(head, sizeof(head), " %-8s ", f->severity);
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
static void
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

static void
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

static void
draw_holders(TopState *t, int shown)
{
	const Snapshot *s = &t->last;

	section_title(t, "Holders of the xmin horizon", s->nholders, shown);
	if (shown == 0)
		return;
	{
		char		head[256];

		snprintf(head, sizeof(head), "%-20s %-14s %8s %10s %10s %6s  %s", "kind", "holder",
				 "pid", "xmin age", "held for", "blocks", "state, application, statement");
		column_header(t, head);
	}
	for (int i = 0; i < shown; i++)
	{
		const Holder *h = &s->holders[i];
		Buf		   *l = new_line(t);
		Buf			row;
		char		pid[16] = "";

		buf_init(&row);
		if (h->pid)
			snprintf(pid, sizeof(pid), "%d", h->pid);
		buf_fit(&row, h->kind, 20, true);
		buf_append(&row, " ");
		buf_fit(&row, h->holder, 14, true);
		buf_printf(&row, " %8s %10s %10s %6s  ", pid, fmt_count(h->xmin_age),
				   fmt_duration(h->held_seconds), h->blocks_cleanup ? "yes" : "no");
		{
			/* What is known of it, comma-separated: masked parts are empty. */
			const char *parts[4] = {h->follows, h->state, h->application, h->query};
			bool		first = true;

			for (int k = 0; k < 4; k++)
			{
				if (parts[k][0] == '\0')
					continue;
				buf_printf(&row, "%s%s%s", first ? "" : ", ", k == 0 ? "follows " : "", parts[k]);
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
 * Under 40 lines the wait classes are left out of the history (active
 * backends stay): the tables need the room.
 */
#define HISTORY_ROWS	11
static bool
compact_history(const TopState *t)
{
	return t->height > 0 && t->height < 40;
}

static int
history_lines(const TopState *t)
{
	return 1 + (compact_history(t) ? HISTORY_ROWS - 6 : HISTORY_ROWS);
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

static void
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
		if (!compact_history(t) || r == 0 || r >= 7)
			spark_row(t, labels[r], rows[r], spark_width);
}

static void
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

static void
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
static void
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
 * Rows per table so that the frame fits the screen: take one row at a time
 * from the table that has the most, keeping at least one finding.
 */
static void
plan_rows(TopState *t, int *findings, int *incidents, int *victims, int *backends,
		  int *holders, int *statements, int *indexes)
{
	const Snapshot *s = &t->last;
	int		   *tables[6] = {incidents, victims, backends, holders, statements, indexes};
	bool		who_pays = t->c->ext_version >= 104;
	int			fixed;

	*findings = s->nfindings;
	*incidents = s->incidents.n;
	*victims = s->nvictims;
	*backends = s->nbackends;
	*holders = s->nholders;
	*statements = s->nstatements;
	*indexes = s->nindexes;
	if (t->height <= 0)
		return;

	/*
	 * Header, connection and error lines, five titles, five blank lines;
	 * and the title and blank line of who pays (extension 1.4), of the
	 * incidents (when the server keeps them).
	 */
	fixed = 1 + (t->lost_since > 0 || t->reconnected_at > 0) + (t->error != NULL) + 5 + 5 +
		(who_pays ? 2 : 0) + (t->c->has_incidents ? 2 : 0) + history_lines(t);
	for (;;)
	{
		int			used = fixed + 2 * *findings;
		int		   *largest = NULL;
		int			most = 0;

		/* Rows and column header; the incidents have no column header. */
		for (int k = 0; k < 6; k++)
			used += *tables[k] + (k > 0 && *tables[k] > 0);
		if (used <= t->height)
			break;
		/* On a tie the lower table gives up a row. */
		for (int k = 5; k >= 0; k--)
			if (*tables[k] > most)
				most = *(largest = tables[k]);
		/* Findings go last, and the first one stays. */
		if (*findings > 1 && 2 * *findings >= most)
			largest = findings;
		if (largest == NULL || *largest == 0)
			break;
		(*largest)--;
	}
}

static void
render(TopState *t)
{
	int			nf = 0,
				nx = 0,
				nv = 0,
				nb = 0,
				nh = 0,
				ns = 0,
				ni = 0;

	t->nlines = 0;
	draw_header(t);
	draw_connection(t);
	if (!t->have_last)
	{
		text_line(t, "", "Waiting for the first figures.");
		return;
	}
	plan_rows(t, &nf, &nx, &nv, &nb, &nh, &ns, &ni);
	draw_findings(t, nf);
	new_line(t);
	if (t->c->has_incidents)
	{
		draw_incidents(t, nx);
		new_line(t);
	}
	if (t->c->ext_version >= 104)
	{
		draw_victims(t, nv);
		new_line(t);
	}
	draw_backends(t, nb);
	new_line(t);
	draw_holders(t, nh);
	new_line(t);
	draw_history(t);
	new_line(t);
	draw_statements(t, ns);
	new_line(t);
	draw_indexes(t, ni);
}

static void
show(TopState *t)
{
	Buf			out;
	int			n = t->nlines;

	buf_init(&out);
	if (t->tty)
	{
		if (t->height > 0 && n > t->height)
			n = t->height;
		buf_append(&out, "\033[H");
		for (int i = 0; i < n; i++)
		{
			buf_append(&out, t->lines[i].data);
			buf_append(&out, "\033[K");
			if (i < n - 1)
				buf_append(&out, "\r\n");
		}
		buf_append(&out, "\033[J");
	}
	else
	{
		for (int i = 0; i < n; i++)
		{
			buf_append(&out, t->lines[i].data);
			buf_append(&out, "\n");
		}
		buf_append(&out, "\n");
	}
	fwrite(out.data, 1, out.len, stdout);
	fflush(stdout);
	buf_free(&out);
}

/* Read the figures; on a dropped connection, note it and reconnect later. */
static void
refresh(TopState *t)
{
	SnapshotScope scope = {0};
	Snapshot	next;
	char	   *message = NULL;
	bool		read_incidents;
	bool		same_connection = true;

	if (t->c->conn == NULL)
	{
		ConnProblem problem = conn_open(t->c, &message);

		t->attempts++;
		if (problem != CONN_OK)
		{
			free(t->lost_message);
			t->lost_message = message;
			conn_close(t->c);
			return;
		}
		t->reconnected_at = wall_clock();
		t->incidents_read_at = 0;
		t->server_restarted = t->c->server_started != t->known_start;
		t->known_start = t->c->server_started;
		t->lost_since = 0;
		t->attempts = 0;
		same_connection = false;
	}

	scope.history_seconds = HISTORY_SPAN + 1;
	/* The seconds read before, on this connection, are not read again. */
	scope.held = t->have_last && same_connection ? &t->last : NULL;
	scope.row_limit = MAX_ROWS;
	/* The incidents every INCIDENTS_EVERY seconds; in between, the last read. */
	read_incidents = !t->have_last || t->incidents_read_at == 0 ||
		monotonic() - t->incidents_read_at >= INCIDENTS_EVERY;
	scope.incidents = read_incidents ? MAX_ROWS : 0;
	scope.sort = t->sort;
	/* The incidents worker's evaluation when it is this session's answer. */
	scope.kept_findings = true;
	free(t->error);
	t->error = NULL;
	if (!snapshot_take(t->c, &scope, &next, &message))
	{
		if (PQstatus(t->c->conn) != CONNECTION_OK)
		{
			conn_close(t->c);
			t->lost_since = wall_clock();
			free(t->lost_message);
			t->lost_message = message;
			t->attempts = 0;
		}
		else
			t->error = message;
		return;
	}
	if (read_incidents)
		t->incidents_read_at = monotonic();
	else if (t->have_last)
	{
		/* Keep the last read: it moves to the new snapshot. */
		next.incidents = t->last.incidents;
		memset(&t->last.incidents, 0, sizeof(t->last.incidents));
	}
	if (t->have_last)
		snapshot_free(&t->last);
	t->last = next;
	t->have_last = true;
}

/* Keys: q quits, p or space pauses, s switches the sort. */
static bool
read_keys(TopState *t, bool *refresh_now)
{
	char		keys[32];
	ssize_t		n = read(STDIN_FILENO, keys, sizeof(keys));

	for (ssize_t i = 0; i < n; i++)
	{
		switch (keys[i])
		{
			case 'q':
			case 'Q':
				return false;
			case 'p':
			case 'P':
			case ' ':
				t->paused = !t->paused;
				break;
			case 's':
			case 'S':
				t->sort = (t->sort + 1) % NUM_SORT_MODES;
				*refresh_now = true;
				break;
			default:
				break;
		}
	}
	return true;
}

int
command_top(Conn *c, const TopOptions *options)
{
	TopState	t = {0};
	struct sigaction sa;
	double		next_refresh = 0;
	long		done = 0;
	const char *term = getenv("TERM");

	t.c = c;
	t.interval = options->interval;
	t.sort = SORT_COST;
	t.known_start = c->server_started;
	t.tty = isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
	t.keys = t.tty && isatty(STDIN_FILENO);
	t.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	t.color = t.tty && getenv("NO_COLOR") == NULL;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_resize;
	sigaction(SIGWINCH, &sa, NULL);
	/* A reconnect to a vanished server must not kill us with SIGPIPE. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	setup_terminal(&t);
	screen_size(&t);

	while (!got_stop)
	{
		double		now = monotonic();
		bool		redraw = false;
		int			timeout_ms;

		if (!t.paused && now >= next_refresh)
		{
			refresh(&t);
			done++;
			next_refresh = now + t.interval;
			redraw = true;
		}
		if (got_resize)
		{
			got_resize = 0;
			screen_size(&t);
			redraw = true;
		}
		if (redraw)
		{
			render(&t);
			show(&t);
		}
		if (options->iterations > 0 && done >= options->iterations)
			break;

		timeout_ms = t.paused ? 1000 : (int) ((next_refresh - monotonic()) * 1000);
		if (timeout_ms < 0)
			timeout_ms = 0;
		if (t.keys)
		{
			struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};

			if (poll(&pfd, 1, timeout_ms) > 0 && (pfd.revents & POLLIN))
			{
				bool		refresh_now = false;
				bool		was_paused = t.paused;

				if (!read_keys(&t, &refresh_now))
					break;
				if (refresh_now)
					next_refresh = 0;
				if (refresh_now || was_paused != t.paused)
				{
					render(&t);
					show(&t);
				}
			}
		}
		else if (timeout_ms > 0)
			poll(NULL, 0, timeout_ms);
	}
	restore_terminal();
	if (t.have_last)
		snapshot_free(&t.last);
	return 0;
}
