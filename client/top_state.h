/*-------------------------------------------------------------------------
 *
 * top_state.h
 *		pg_contention top's private interface: the state of the live view
 *		(top.c: the terminal, the refreshes, the keys, the layout) and the
 *		functions that draw its frame line by line (top_draw.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_TOP_STATE_H
#define PGC_TOP_STATE_H

#include "client.h"

#define HISTORY_SPAN	60		/* seconds shown as sparklines */
#define MAX_ROWS		20		/* rows read per table */
#define HISTORY_ROWS	11		/* series in the full history */

/* How much of the history a frame shows: tables get rows first. */
#define HISTORY_NONE	0
#define HISTORY_COMPACT	1		/* active backends and the four series */
#define HISTORY_FULL	2		/* with the wait classes */

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
	char	   *waiting;		/* the extension is gone: why top waits */
	double		lost_since;		/* wall clock; 0 when connected */
	char	   *lost_message;
	int			attempts;
	double		reconnected_at; /* wall clock; 0 when not recently */
	bool		server_restarted;
	double		known_start;	/* the server's start time when first seen */
	double		incidents_read_at;	/* monotonic; 0: read at the next refresh */
	double		tables_read_at; /* the statements, indexes and who pays:
								 * monotonic; 0: read at the next refresh */
	double		extension_checked_at;	/* monotonic: its version last looked at */

	/* The layout of the frame (plan_rows), and the finding read whole. */
	int			history_mode;	/* HISTORY_FULL, _COMPACT or _NONE */
	bool		blanks;			/* a blank line between sections */
	int			findings_shown; /* the findings listed on screen */
	bool		hidden[7];		/* sections left out for the findings (by
								 * plan_rows' index; one line names them) */
	int			selected;		/* the finding selected (up, down) */
	bool		selecting;		/* an arrow was pressed: mark it */
	bool		detail;			/* the selected finding read whole */

	Buf		   *lines;
	int			nlines;
	int			maxlines;
} TopState;

/* top_draw.c */
extern Buf *new_line(TopState *t);
extern const char *sgr(TopState *t, const char *code);
extern void text_line(TopState *t, const char *style, const char *text);
extern void column_header(TopState *t, const char *head);
extern void section_title(TopState *t, const char *title, int total, int shown);
extern const char *severity_style(const char *severity);
extern void draw_header(TopState *t);
extern void draw_connection(TopState *t);
extern void draw_findings(TopState *t, int shown);
extern void draw_victims(TopState *t, int shown);
extern void draw_backends(TopState *t, int shown);
extern void draw_holders(TopState *t, int shown);
extern int	history_lines(const TopState *t);
extern void draw_history(TopState *t);
extern void draw_statements(TopState *t, int shown);
extern void draw_indexes(TopState *t, int shown);
extern void draw_incidents(TopState *t, int shown);
extern void draw_detail(TopState *t);

#endif							/* PGC_TOP_STATE_H */
