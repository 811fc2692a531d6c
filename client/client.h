/*-------------------------------------------------------------------------
 *
 * client.h
 *		The pg_contention client program: what its files share.
 *
 * main.c parses the command line; conn.c connects and checks the server;
 * data.c runs the queries and holds their results; top.c, check.c and
 * report.c are the commands (incidents.c the incidents: the list and
 * the command); chart.c draws the history as SVG;
 * util.c has growing strings, escaping and number formatting.  The program
 * is single-threaded and links with libpq, libm and libc only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_CLIENT_H
#define PGC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "libpq-fe.h"

/* This program's version (--version, the reports' footers). */
#define PGC_CLIENT_PROGRAM_VERSION	"1.4"
/* The oldest extension version whose views this client reads. */
#define PGC_NEEDS_VERSION		"1.3"
#define PGC_NEEDS_MAJOR			1
#define PGC_NEEDS_MINOR			3

/*
 * Exit codes, the monitoring-plugin convention: check exits with the worst
 * finding's severity_rank() (0 ok or info, 1 warning, 2 critical); every
 * command exits with this one when it could not tell.
 */
#define EXIT_UNKNOWN			3	/* connection, usage, server or file error */

/* ---- util.c ---- */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

extern void buf_init(Buf *b);
extern void buf_free(Buf *b);
extern void buf_reset(Buf *b);
extern void buf_append(Buf *b, const char *s);
extern void buf_appendn(Buf *b, const char *s, size_t n);
extern void buf_printf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void buf_html(Buf *b, const char *s);
extern void buf_html_isolated(Buf *b, const char *s);	/* in a <bdi> */
extern void buf_json_string(Buf *b, const char *s);
extern void buf_json_raw(Buf *b, const char *json);

/* Server text as a terminal shows it: controls and bidi escaped, see util.c. */
extern void text_init(void);	/* after setlocale(): UTF-8 or ASCII out */
extern void buf_text(Buf *b, const char *s);
extern void buf_text_lines(Buf *b, const char *s);	/* newlines, tabs kept */
extern void buf_text_plugin(Buf *b, const char *s);	/* and "|" as \x7c */
extern char *text_shown(const char *s);	/* malloc'd buf_text() */

extern void *xmalloc(size_t size);
extern char *xstrdup(const char *s);
extern void fatal(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
extern void progname_set(const char *name);
extern const char *progname_get(void);

extern char *fmt_count(double value);	/* 12,345 (static buffer ring) */
extern char *fmt_compact(double value); /* 12.3k, 4.5M */
extern char *fmt_duration(double seconds);	/* 35 s, 14 min, 2 h 5 min */
extern double wall_clock(void);	/* the time of day, epoch seconds */
extern char *fmt_clock(double epoch);	/* HH:MM:SS, local time */
extern void one_line(char *s);	/* white space to one space, in place */
extern int	display_width(const char *s);	/* screen columns, as shown */
extern void buf_fit(Buf *b, const char *s, int width, bool pad);

/* ---- conn.c: the connection ---- */
typedef struct Conn
{
	PGconn	   *conn;
	const char *const *keywords;	/* what to connect with, again */
	const char *const *values;
	char	   *schema;			/* the extension's schema, quoted */
	char	   *server_version;
	char	   *target;			/* "host:port/db" as the user sees it */
	bool		in_recovery;
	double		server_started; /* pg_postmaster_start_time(), epoch */
	int			near_level;		/* pg_contention.subxact_warn_level */
	int			ext_version;	/* the extension's, major * 100 + minor */
	bool		has_incidents;	/* pg_contention_incidents exists (1.4) */
	/* Statements prepared on this PGconn (conn_query_prepared) */
	PGconn	   *prepared_on;
	unsigned long long prepared[64];	/* their texts' hashes */
	int			nprepared;
	bool		no_prepare;		/* the server lost one: a pooler */
} Conn;

/* Why a connection is not usable; each has one message and exit 3. */
typedef enum ConnProblem
{
	CONN_OK,
	CONN_FAILED,				/* could not connect */
	CONN_NO_EXTENSION,			/* CREATE EXTENSION not run in this database */
	CONN_OLD_EXTENSION,			/* an older version: ALTER EXTENSION UPDATE */
	CONN_NOT_PRELOADED,			/* the library is not in shared_preload_libraries */
	CONN_QUERY_FAILED			/* anything else the server said */
} ConnProblem;

extern ConnProblem conn_open(Conn *c, char **message);
extern void conn_close(Conn *c);

/* The extension as it stands now against what conn_open found. */
typedef enum ExtensionState
{
	EXT_SAME,					/* as found: the error was something else */
	EXT_GONE,					/* dropped from the database */
	EXT_CHANGED,				/* another version or schema: read it again */
	EXT_UNKNOWN					/* the look itself failed */
} ExtensionState;

extern ExtensionState conn_extension_state(Conn *c);
extern PGresult *conn_query(Conn *c, const char *sql, char **message);
extern bool conn_query_prepared(Conn *c, char *const *texts, const char *const *params,
								int n, PGresult **res, char **message);
extern bool conn_query_many(Conn *c, const char *sql, int n, PGresult **res,
							char **message);

/* ---- data.c: one look at the server ---- */
typedef struct Finding
{
	char	   *problem;
	char	   *severity;
	char	   *subject;
	char	   *evidence;
	char	   *advice;
	char	   *details;		/* jsonb as text */
	char	   *since;
} Finding;

typedef struct Backend
{
	int			pid;
	char	   *datname;
	char	   *usename;
	char	   *application;
	char	   *state;
	int			subxacts;
	bool		overflowed;
	double		xact_seconds;	/* -1 unknown */
	char	   *query;
} Backend;

typedef struct Holder
{
	char	   *kind;
	char	   *holder;
	int			pid;			/* 0 when none */
	char	   *datname;
	char	   *application;
	double		xmin_age;
	double		held_seconds;	/* -1 unknown */
	char	   *state;
	char	   *follows;
	bool		blocks_cleanup;
	char	   *query;
} Holder;

/* Wait classes in the history, in the order charts stack them. */
#define NUM_CLASSES 10
extern const char *const class_names[NUM_CLASSES];
extern const char *const class_colors[NUM_CLASSES];

typedef struct Second
{
	double		epoch;
	double		active;			/* average active backends */
	double		by_class[NUM_CLASSES];	/* average backends per class */
	double		subtrans_waits; /* samples of SubtransSLRU + SubtransBuffer */
	double		overflowed;		/* most overflowed backends in one tick */
	double		lookups;		/* readers' pg_subtrans lookups (the extension
								 * at 1.3: all Subtrans accesses); NAN
								 * unknown */
	double		horizon_age;	/* XIDs; NAN unknown */
} Second;

typedef struct StatementRow
{
	char	   *query_id;
	char	   *datname;
	char	   *usename;
	double		calls;
	double		suboverflowed_calls;
	double		subtrans_waits;
	double		max_subxacts;
	double		blks_per_row;	/* NAN unknown */
	char	   *query;
	char	   *application;	/* "" before 1.4 */
} StatementRow;

typedef struct IndexRow
{
	char	   *index;
	char	   *datname;
	char	   *query_id;
	double		scans;
	double		dead_visits;
	double		dead_per_scan;
	double		max_dead_per_scan;
	double		dead_ratio;		/* NAN unknown */
	char	   *query;
} IndexRow;

/* Overflow events of one session and statement: their count and span. */
typedef struct EventRow
{
	char	   *time;			/* the first */
	char	   *last_time;
	long long	events;
	int			pid;
	char	   *datname;
	char	   *usename;
	char	   *application;
	char	   *query;
} EventRow;

/* Who pays (pg_contention_victims, extension 1.4 and later). */
typedef struct VictimRow
{
	char	   *kind;			/* suboverflowed_snapshots, dead_index_entries */
	char	   *application;
	char	   *usename;
	char	   *datname;
	char	   *query_id;
	double		executions;
	double		paid;			/* suboverflowed executions, dead entries */
	char	   *query;
} VictimRow;

/* An incident the server kept (pg_contention_incidents, extension 1.4). */
typedef struct Incident
{
	char	   *id;
	char	   *problem;
	char	   *peak_severity;
	char	   *severity;		/* now; "" once closed */
	char	   *subject;		/* at the peak */
	char	   *evidence;
	char	   *advice;
	char	   *resolution;		/* "" while open or unknown */
	char	   *opened;			/* YYYY-MM-DD HH:MM:SS, server's time zone */
	char	   *peak;
	char	   *closed;			/* "" while open */
	char	   *last_seen;
	double		opened_epoch;
	double		closed_epoch;	/* NAN while open */
	double		last_seen_epoch;
	bool		open;
	char	   *details;		/* jsonb as text; NULL unless asked for */
} Incident;

typedef struct IncidentList
{
	int			n;				/* rows read */
	Incident   *rows;			/* the open ones, newest first, then the
								 * closed ones, last closed first */
	int			total_open;		/* in the view */
	int			total;
} IncidentList;

/* closed_limit < 0: every closed one. */
extern bool incidents_query(Conn *c, int closed_limit, bool details, Buf *sql);
extern void incidents_parse(PGresult *res, IncidentList *list);
extern bool incidents_read(Conn *c, int closed_limit, bool details, IncidentList *list,
						   char **message);
extern void incidents_free(IncidentList *list);
extern int	command_incidents(Conn *c, bool json);
extern int	incidents_unavailable(Conn *c);	/* says so; EXIT_UNKNOWN */
extern char *incidents_not_kept(Conn *c);	/* why, with the remedy; NULL: kept
											 * (or off by the setting) */

typedef enum SortMode
{
	SORT_COST,					/* waits; dead entries per execution */
	SORT_VOLUME,				/* suboverflowed executions; dead entries in all */
	SORT_RECENT,				/* last seen */
	NUM_SORT_MODES
} SortMode;
extern const char *const sort_names[NUM_SORT_MODES];

typedef struct Snapshot
{
	double		taken;			/* server clock, epoch */
	int			nfindings;
	Finding    *findings;
	int			nbackends;		/* rows read (at most row_limit) */
	Backend    *backends;
	int			overflowed_backends;	/* in all */
	int			near_backends;
	int			nholders;
	Holder	   *holders;
	int			nseconds;
	Second	   *seconds;
	int			nstatements;
	StatementRow *statements;
	int			nindexes;
	IndexRow   *indexes;
	int			nevents;
	EventRow   *events;
	int			nvictims;
	VictimRow  *victims;
	bool		sampler_running;
	int			history_buckets;	/* the seconds the server keeps now */
	char	   *findings_window;	/* "5 min" */
	bool		findings_kept;	/* the findings are the incidents worker's */
	double		evaluated_at;	/* when the findings were evaluated */
	IncidentList incidents;		/* when the scope asks and the server keeps them */
} Snapshot;

/* What to read: top reads the last minute, the report everything. */
typedef struct SnapshotScope
{
	int			history_seconds;	/* 0: all of it */
	int			row_limit;		/* per table */
	SortMode	sort;
	bool		events;			/* overflow events too */
	bool		findings_only;	/* check: nothing else */
	bool		kept_findings;	/* the incidents worker's last evaluation
								 * when it is this session's answer (1.4) */
	int			incidents;		/* closed incidents to read (the open ones
								 * too); 0: none */
	const Snapshot *held;		/* top: the last look on this connection,
								 * whose seconds are not read again */
	bool		without_tables; /* top: not the statements, indexes and who
								 * pays (the costliest reads; top keeps its
								 * last read in between) */
	bool		without_values; /* report: statements normalized, the
								 * findings without the worst execution's
								 * constants (1.4) */
} SnapshotScope;

extern const char *victim_kind_label(const char *kind);	/* report.c */
extern bool snapshot_take(Conn *c, const SnapshotScope *scope, Snapshot *s, char **message);
extern void snapshot_free(Snapshot *s);
extern int	severity_rank(const char *severity);	/* 2 critical, 1 warning, 0 */
extern int	snapshot_worst(const Snapshot *s);

/* ---- the commands ---- */
typedef struct TopOptions
{
	double		interval;		/* seconds between refreshes */
	long		iterations;		/* 0: until quit */
} TopOptions;

extern int	command_top(Conn *c, const TopOptions *options);
extern int	command_check(Conn *c, bool json, bool live);
extern void check_print_unknown(const char *message, bool json);
extern int	command_report(Conn *c, const char *html_path, bool text, long long incident,	/* 0: live */
						   bool with_values);

/* ---- chart.c ---- */
typedef struct ChartSeries
{
	const char *name;
	const char *color;
	const double *values;		/* one per point; NAN is a gap */
	size_t		stride;			/* bytes between values */
} ChartSeries;

extern void chart_svg(Buf *out, const char *id, const char *title, const char *unit,
					  const double *epochs, size_t epoch_stride, int npoints,
					  const ChartSeries *series, int nseries, bool stacked);
extern void sparkline(Buf *out, const double *values, size_t stride, int npoints,
					  int width, bool utf8);

#endif							/* PGC_CLIENT_H */
