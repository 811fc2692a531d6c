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
 * of the statement tables, up and down select a finding and enter reads it
 * whole.  It plans the frame's layout (tables get rows before the
 * sparklines get space); top_draw.c draws its lines.  Not on a terminal it
 * prints each refresh as plain text.  When the connection drops (a server
 * restart) it keeps the last screen, says so, and reconnects at every
 * refresh.  Its state is TopState (top_state.h), its own: no shared state, no
 * locks.
 *
 *-------------------------------------------------------------------------
 */
#include "top_state.h"

#include <errno.h>
#include <limits.h>
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


/*
 * Seconds between two reads of the incidents: the server changes them at
 * most every pg_contention.incident_interval (10 s by default), and reading
 * the view costs the server ~45 ms of CPU with 100 incidents kept (their
 * frozen details are built for every row), three times the rest of a
 * refresh.
 */
#define INCIDENTS_EVERY	10.0

/*
 * The statements, indexes and who pays are read every TABLES_EVERY
 * seconds (and at once after s changes their order): their reads grow
 * with the statements in the store, 80 ms of the server's CPU at 5,000
 * indexes with dead entries, while their figures are per period and move
 * slowly.  The findings, backends, holders and seconds are read at every
 * refresh.
 */
#define TABLES_EVERY	5.0
/* How often top looks at the extension's version (an update). */
#define EXTENSION_CHECK_EVERY 5.0

static volatile sig_atomic_t got_stop = 0;
static volatile sig_atomic_t got_resize = 0;

static struct termios saved_termios;
static bool terminal_changed = false;
static bool screen_entered = false;


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

/*
 * The layouts a frame may take, richest first: blank lines between
 * sections, then the history compact, then whole.  The richest that fits
 * beside the rows the tables were given is used (plan_rows).
 */
static const struct
{
	int			history_mode;
	bool		blanks;
}			layouts[] = {
	{HISTORY_FULL, true},
	{HISTORY_COMPACT, true},
	{HISTORY_COMPACT, false},
	{HISTORY_NONE, true},
	{HISTORY_NONE, false},
};

/* Is any section left out (plan_rows)?  One line then names them. */
static bool
any_hidden(const TopState *t)
{
	for (int k = 1; k < 7; k++)
		if (t->hidden[k])
			return true;
	return false;
}

/* Lines a frame takes besides its tables' rows and column headers. */
static int
fixed_lines(const TopState *t)
{
	int			sections = 5 + (t->c->ext_version >= 104) + (t->c->has_incidents ? 1 : 0);

	for (int k = 1; k < 7; k++)
		sections -= t->hidden[k];
	/* The line that names the sections left out is one more. */
	sections += any_hidden(t);

	/*
	 * The header, the connection and error lines; a title per section,
	 * the history's lines, and a blank line after every section but the
	 * last (the history's too, when it is shown).
	 */
	return 1 + (t->lost_since > 0 || t->reconnected_at > 0) + (t->error != NULL) +
		(t->waiting != NULL) + sections +
		history_lines(t) + (t->blanks ? sections - 1 + (t->history_mode != HISTORY_NONE) : 0);
}

/*
 * Lines the tables take: the findings two a row, the others one and a
 * column header when they show any, but the incidents (rows[1]), which
 * have none.
 */
static int
table_lines(const int *rows)
{
	int			used = 2 * rows[0];

	for (int k = 1; k < 7; k++)
		used += rows[k] + (k > 1 && rows[k] > 0);
	return used;
}

/* Does the frame fit the screen with these rows and the layout set? */
static bool
fits(const TopState *t, const int *rows)
{
	return fixed_lines(t) + table_lines(rows) <= t->height;
}

/*
 * Take one row from the table (not the findings) with the most above
 * floor; on a tie the lower table gives it.  False if none has one.
 */
static bool
take_row(int *rows, const int *floor)
{
	int			largest = -1;

	for (int k = 6; k >= 1; k--)
		if (rows[k] > floor[k] && (largest < 0 || rows[k] > rows[largest]))
			largest = k;
	if (largest < 0)
		return false;
	rows[largest]--;
	return true;
}

/*
 * Rows per table so that the frame fits the screen, in this order of
 * need: the findings (all of them: the tables go down to one row each,
 * then the least urgent sections are left out whole, named on one line,
 * before a finding is cut), then the tables (up to five rows each), then
 * the blank lines and the history (compact, then whole), and what is left
 * to the tables' further rows.  rows: the findings, incidents, victims,
 * backends, holders, statements and indexes, in the order render() draws
 * them.
 */
static void
plan_rows(TopState *t, int rows[7])
{
	const Snapshot *s = &t->last;
	int			want[7];
	int			floor[7] = {0};
	int			five[7];

	/* Left out first: the statements, the indexes, the backends, who pays. */
	static const int leave_out[] = {5, 6, 3, 2};

	want[0] = s->nfindings;
	want[1] = s->incidents.n;
	want[2] = t->c->ext_version >= 104 ? s->nvictims : 0;
	want[3] = s->nbackends;
	want[4] = s->nholders;
	want[5] = s->nstatements;
	want[6] = s->nindexes;
	memcpy(rows, want, sizeof(want));
	memset(t->hidden, 0, sizeof(t->hidden));
	t->history_mode = HISTORY_FULL;
	t->blanks = true;
	t->findings_shown = want[0];
	if (t->height <= 0)
		return;

	/* The plainest layout, and at most five rows a table. */
	t->history_mode = HISTORY_NONE;
	t->blanks = false;
	for (int k = 1; k < 7; k++)
	{
		rows[k] = want[k] < 5 ? want[k] : 5;
		floor[k] = want[k] < 1 ? want[k] : 1;
	}
	/* Tables down to one row each. */
	while (!fits(t, rows) && take_row(rows, floor))
		;
	/* Still no room for every finding: sections out, then findings cut. */
	for (int i = 0; i < (int) (sizeof(leave_out) / sizeof(leave_out[0])) && !fits(t, rows); i++)
	{
		int			k = leave_out[i];

		if (k == 2 && t->c->ext_version < 104)
			continue;
		t->hidden[k] = true;
		rows[k] = 0;
	}
	while (!fits(t, rows) && rows[0] > 1)
		rows[0]--;
	/* A tiny screen: tables to none, largest first. */
	memset(floor, 0, sizeof(floor));
	while (!fits(t, rows) && take_row(rows, floor))
		;
	memcpy(five, rows, sizeof(five));

	/* What is left: the richest layout that fits beside those rows. */
	for (int i = 0; i < (int) (sizeof(layouts) / sizeof(layouts[0])); i++)
	{
		t->history_mode = layouts[i].history_mode;
		t->blanks = layouts[i].blanks;
		if (fits(t, rows))
			break;
	}

	/* Then the tables' further rows, the largest giving them back first. */
	for (int k = 1; k < 7; k++)
		rows[k] = t->hidden[k] ? 0 : want[k];
	while (!fits(t, rows) && take_row(rows, five))
		;
	t->findings_shown = rows[0];
}

/* The line that names the sections left out, with their rows. */
static void
draw_left_out(TopState *t)
{
	static const char *const names[7] = {
		NULL, NULL, "who pays", "backends", NULL, "statements", "indexes"
	};
	const Snapshot *s = &t->last;
	const int	counts[7] = {0, 0, s->nvictims, s->nbackends, 0, s->nstatements, s->nindexes};
	Buf			text;
	bool		first = true;

	buf_init(&text);
	buf_append(&text, "Not shown, to list every finding:");
	for (int k = 2; k < 7; k++)
	{
		if (!t->hidden[k] || names[k] == NULL)
			continue;
		buf_printf(&text, "%s %s (%d)", first ? "" : ",", names[k], counts[k]);
		first = false;
	}
	text_line(t, "", text.data);
	buf_free(&text);
}

/* A blank line between sections, when the layout has room for it. */
static void
gap(TopState *t)
{
	if (t->blanks)
		new_line(t);
}

static void
render(TopState *t)
{
	int			rows[7] = {0};

	t->nlines = 0;
	draw_header(t);
	draw_connection(t);
	if (!t->have_last)
	{
		text_line(t, "", "Waiting for the first figures.");
		return;
	}
	if (t->detail)
	{
		draw_detail(t);
		return;
	}
	plan_rows(t, rows);
	/* The selection stays on a finding on screen. */
	if (t->selected >= rows[0] && rows[0] > 0)
		t->selected = rows[0] - 1;
	draw_findings(t, rows[0]);
	gap(t);
	if (t->c->has_incidents)
	{
		draw_incidents(t, rows[1]);
		gap(t);
	}
	if (t->c->ext_version >= 104 && !t->hidden[2])
	{
		draw_victims(t, rows[2]);
		gap(t);
	}
	if (!t->hidden[3])
	{
		draw_backends(t, rows[3]);
		gap(t);
	}
	draw_holders(t, rows[4]);
	gap(t);
	if (t->history_mode != HISTORY_NONE)
	{
		draw_history(t);
		gap(t);
	}
	if (!t->hidden[5])
	{
		draw_statements(t, rows[5]);
		if (!t->hidden[6] || any_hidden(t))
			gap(t);
	}
	if (!t->hidden[6])
	{
		draw_indexes(t, rows[6]);
		if (any_hidden(t))
			gap(t);
	}
	if (any_hidden(t))
		draw_left_out(t);
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

/* The extension is gone from the session's database: say so, and wait. */
static void
wait_for_extension(TopState *t)
{
	char		text[512];

	snprintf(text, sizeof(text),
			 "extension pg_contention was dropped from database \"%s\" (seen at %s): "
			 "top resumes when it is created again (CREATE EXTENSION pg_contention)",
			 PQdb(t->c->conn), fmt_clock(wall_clock()));
	free(t->waiting);
	t->waiting = xstrdup(text);
}

/*
 * The extension as conn_extension_state found it: gone, top says so and
 * waits; of another version or schema, it is read again on a new
 * connection (a refresh now).  True if either was done.
 */
static void refresh(TopState *t);

static bool
follow_extension(TopState *t, ExtensionState state)
{
	if (state == EXT_GONE)
	{
		wait_for_extension(t);
		return true;
	}
	if (state == EXT_CHANGED)
	{
		conn_close(t->c);
		refresh(t);
		return true;
	}
	return false;
}

/* Read the figures; on a dropped connection, note it and reconnect later. */
/*
 * The selection follows its finding when a refresh reorders the list or
 * adds one above it: the same problem and subject, else the same problem
 * (its subject's counts grew), else it stays where it was.  Without this,
 * enter could read, and the open page show, another finding than the
 * one marked a second before.
 */
static void
follow_selection(TopState *t, const Snapshot *next)
{
	const Finding *was;
	int			same_problem = -1;

	if (t->selected < 0 || t->selected >= t->last.nfindings)
		return;
	was = &t->last.findings[t->selected];
	for (int i = 0; i < next->nfindings; i++)
	{
		const Finding *f = &next->findings[i];

		if (strcmp(f->problem, was->problem) != 0)
			continue;
		if (strcmp(f->subject, was->subject) == 0)
		{
			t->selected = i;
			return;
		}
		if (same_problem < 0)
			same_problem = i;
	}
	if (same_problem >= 0)
		t->selected = same_problem;
}

static void
refresh(TopState *t)
{
	SnapshotScope scope = {0};
	Snapshot	next;
	char	   *message = NULL;
	bool		read_incidents;
	bool		read_tables;
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

	/*
	 * The extension was dropped: look for it again, with a read that
	 * raises no error, and read the figures only once it is back (on a new
	 * connection, which finds its schema and version).
	 */
	if (t->waiting != NULL)
	{
		ExtensionState state = conn_extension_state(t->c);

		if (state == EXT_GONE || (state == EXT_UNKNOWN && PQstatus(t->c->conn) == CONNECTION_OK))
			return;
		free(t->waiting);
		t->waiting = NULL;
		conn_close(t->c);
		refresh(t);
		return;
	}

	/*
	 * An ALTER EXTENSION UPDATE need not make any read fail (a view read
	 * again by name answers as before): every EXTENSION_CHECK_EVERY
	 * seconds, look at the extension's version, and read an updated one
	 * on a new connection.
	 */
	if (!same_connection)
		t->extension_checked_at = monotonic();
	else if (monotonic() - t->extension_checked_at >= EXTENSION_CHECK_EVERY)
	{
		ExtensionState state = conn_extension_state(t->c);

		t->extension_checked_at = monotonic();
		if (follow_extension(t, state))
			return;
	}

	scope.history_seconds = HISTORY_SPAN + 1;
	/* The seconds read before, on this connection, are not read again. */
	scope.held = t->have_last && same_connection ? &t->last : NULL;
	scope.row_limit = MAX_ROWS;
	/* The incidents every INCIDENTS_EVERY seconds; in between, the last read. */
	read_incidents = !t->have_last || t->incidents_read_at == 0 ||
		monotonic() - t->incidents_read_at >= INCIDENTS_EVERY;
	scope.incidents = read_incidents ? MAX_ROWS : 0;
	read_tables = !t->have_last || !same_connection || t->tables_read_at == 0 ||
		monotonic() - t->tables_read_at >= TABLES_EVERY;
	scope.without_tables = !read_tables;
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
		{
			/*
			 * The extension dropped or changed under the session: say so
			 * once, and wait for it (dropped) or read it again (updated),
			 * instead of the same error at every refresh.
			 */
			if (follow_extension(t, conn_extension_state(t->c)))
				free(message);
			else
				t->error = message;
		}
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
	if (read_tables)
		t->tables_read_at = monotonic();
	else if (t->have_last)
	{
		/* The same for the tables. */
		next.statements = t->last.statements;
		next.nstatements = t->last.nstatements;
		next.indexes = t->last.indexes;
		next.nindexes = t->last.nindexes;
		next.victims = t->last.victims;
		next.nvictims = t->last.nvictims;
		t->last.statements = NULL;
		t->last.nstatements = 0;
		t->last.indexes = NULL;
		t->last.nindexes = 0;
		t->last.victims = NULL;
		t->last.nvictims = 0;
	}
	if (t->have_last)
	{
		follow_selection(t, &next);
		snapshot_free(&t->last);
	}
	t->last = next;
	t->have_last = true;
}

/*
 * Keys: q quits, p or space pauses, s switches the sort; up and down (or
 * k and j) select a finding, enter reads it whole, esc (or enter) goes
 * back.  An arrow key is three bytes (ESC [ A); an ESC alone is esc.
 */
static bool
read_keys(TopState *t, bool *refresh_now, bool *redraw)
{
	char		keys[32];
	ssize_t		n = read(STDIN_FILENO, keys, sizeof(keys));
	/* Up and down move over the findings on screen, or all when read whole. */
	int			nfindings = !t->have_last ? 0 :
		t->detail || t->findings_shown > t->last.nfindings ? t->last.nfindings : t->findings_shown;

	for (ssize_t i = 0; i < n; i++)
	{
		int			move = 0;

		if (keys[i] == '\033' && i + 2 < n && keys[i + 1] == '[')
		{
			move = keys[i + 2] == 'A' ? -1 : keys[i + 2] == 'B' ? 1 : 0;
			i += 2;
		}
		else if (keys[i] == '\033')
		{
			t->detail = false;
			*redraw = true;
			continue;
		}
		switch (move != 0 ? 0 : keys[i])
		{
			case 'q':
			case 'Q':
				return false;
			case 'p':
			case 'P':
			case ' ':
				t->paused = !t->paused;
				*redraw = true;
				break;
			case 's':
			case 'S':
				t->sort = (t->sort + 1) % NUM_SORT_MODES;
				t->tables_read_at = 0;
				*refresh_now = true;
				break;
			case 'k':
				move = -1;
				break;
			case 'j':
				move = 1;
				break;
			case '\r':
			case '\n':
				t->detail = !t->detail && nfindings > 0;
				*redraw = true;
				break;
			default:
				break;
		}
		if (move != 0 && nfindings > 0)
		{
			t->selected = (t->selected + move + nfindings) % nfindings;
			t->selecting = true;
			*redraw = true;
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
				bool		redraw_now = false;

				if (!read_keys(&t, &refresh_now, &redraw_now))
					break;
				if (refresh_now)
					next_refresh = 0;
				if (refresh_now || redraw_now)
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
