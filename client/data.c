/*-------------------------------------------------------------------------
 *
 * data.c
 *		One look at the server for the pg_contention client: the findings,
 *		the backends near or past subtransaction-cache overflow, the holders
 *		of the xmin horizon, the history second by second, the statements
 *		behind pg_subtrans waits and dead index entries, the overflow events.
 *
 * Every query reads the extension's views in its schema (quoted once, at
 * connection); what the server masks for this role stays masked.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const class_names[NUM_CLASSES] = {
	"CPU", "LWLock", "Lock", "IO", "IPC", "BufferPin", "Timeout", "Extension",
	"Client", "Other"
};

/* Distinguishable in print and for the common kinds of colour blindness. */
const char *const class_colors[NUM_CLASSES] = {
	"#2e7d32", "#c62828", "#6a1b9a", "#1565c0", "#ef6c00", "#795548",
	"#00838f", "#9e9d24", "#9e9e9e", "#546e7a"
};

const char *const sort_names[NUM_SORT_MODES] = {"cost", "volume", "recent"};

int
severity_rank(const char *severity)
{
	if (severity && strcmp(severity, "critical") == 0)
		return 2;
	if (severity && strcmp(severity, "warning") == 0)
		return 1;
	return 0;
}

int
snapshot_worst(const Snapshot *s)
{
	int			worst = 0;

	for (int i = 0; i < s->nfindings; i++)
		if (severity_rank(s->findings[i].severity) > worst)
			worst = severity_rank(s->findings[i].severity);
	return worst;
}

static char *
text_at(PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return NULL;
	return xstrdup(PQgetvalue(res, row, col));
}

/* A text for display: one line, "" for NULL. */
static char *
line_at(PGresult *res, int row, int col)
{
	char	   *s = xstrdup(PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));

	one_line(s);
	return s;
}

static double
number_at(PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return NAN;
	return strtod(PQgetvalue(res, row, col), NULL);
}

static PGresult *
run(Conn *c, Buf *sql, char **message)
{
	PGresult   *res = conn_query(c, sql->data, message);

	buf_reset(sql);
	return res;
}

static void *
rows_alloc(PGresult *res, size_t size, int *n)
{
	*n = PQntuples(res);
	return xmalloc(size * (size_t) (*n > 0 ? *n : 1));
}

static const char *
statement_order(SortMode sort)
{
	switch (sort)
	{
		case SORT_VOLUME:
			return "suboverflowed_calls DESC, subtrans_wait_samples DESC";
		case SORT_RECENT:
			return "last_seen DESC";
		default:
			return "subtrans_wait_samples DESC, suboverflowed_calls DESC";
	}
}

static const char *
index_order(SortMode sort)
{
	switch (sort)
	{
		case SORT_VOLUME:
			return "dead_visits DESC";
		case SORT_RECENT:
			return "last_seen DESC";
		default:
			return "dead_visits::float8 / nullif(scans, 0) DESC NULLS LAST, dead_visits DESC";
	}
}

/*
 * The queries of one look, sent in one round trip, each prepared once per
 * connection (conn_query_prepared).  Room for every query a look can make.
 */
#define MAX_BATCH 12

typedef struct Batch
{
	char	   *texts[MAX_BATCH];
	int			n;
	int			next;
	PGresult   *res[MAX_BATCH];
} Batch;

/* Move the query in *query to the batch. */
static void
batch_add(Batch *b, Buf *query)
{
	if (b->n == (int) (sizeof(b->res) / sizeof(b->res[0])))
		fatal("internal error: too many queries in one look");
	b->texts[b->n++] = xstrdup(query->data);
	buf_reset(query);
}

static void
batch_free(Batch *b)
{
	for (int i = 0; i < b->n; i++)
		free(b->texts[i]);
	b->n = 0;
}

/* The next result, in the order of batch_add; the caller frees it. */
static PGresult *
batch_next(Batch *b)
{
	return b->res[b->next++];
}

/* The findings, evaluated now: the columns parse_findings reads. */
static void
live_findings_query(Buf *sql, const char *x, bool without_values)
{
	buf_append(sql, "SELECT severity, problem, subject, ");
	if (without_values)
		buf_printf(sql, "%s.pg_contention_without_values(evidence, details)", x);
	else
		buf_append(sql, "evidence");
	buf_printf(sql, ", advice, details::text,"
			   " pg_catalog.to_char(since, 'YYYY-MM-DD HH24:MI:SS')"
			   " FROM %s.pg_contention_findings", x);
}

/*
 * A text column of a live view as the look shows it: normalized
 * (constants as $1, ...) for a report without values (1.4: the
 * extension's normalizer), else as the view gives it.
 */
static const char *
text_column(const Conn *c, const SnapshotScope *scope, const char *column, char *buf, size_t size)
{
	if (!scope->without_values || c->ext_version < 104)
		return column;
	snprintf(buf, size, "%s.pg_contention_normalize(%s)", c->schema, column);
	return buf;
}

/*
 * top (1.4): the incidents worker's last evaluation when it is this
 * session's answer, else the findings evaluated now, in one statement of
 * the batch: the live branch runs only when nothing is kept (its EXISTS is
 * a one-time filter).  The two last columns: when the rows were
 * evaluated (kept rows only) and whether they were kept; a kept row with
 * no problem says the worker found nothing.
 */
static void
latest_findings_query(Buf *sql, const char *x)
{
	buf_printf(sql,
			   "WITH k AS MATERIALIZED (SELECT * FROM %s.pg_contention_findings_kept())"
			   " SELECT severity, problem, subject, evidence, advice, details::text,"
			   " pg_catalog.to_char(since, 'YYYY-MM-DD HH24:MI:SS'),"
			   " pg_catalog.date_part('epoch', evaluated_at), true FROM k"
			   " UNION ALL"
			   " SELECT severity, problem, subject, evidence, advice, details::text,"
			   " pg_catalog.to_char(since, 'YYYY-MM-DD HH24:MI:SS'), NULL, false"
			   " FROM %s.pg_contention_findings WHERE NOT EXISTS (SELECT FROM k)", x, x);
}

/* The newest second a look holds (its epoch), 0 when none. */
static double
newest_held(const Snapshot *held)
{
	double		newest = 0;

	for (int i = 0; held && i < held->nseconds; i++)
		if (held->seconds[i].epoch > newest)
			newest = held->seconds[i].epoch;
	return newest;
}

/*
 * top: put the seconds of the last look (held) that are still in the span
 * (from first on) before the new ones, which the server sent from the
 * newest held second on (completed seconds never change).  A reset of the
 * statistics empties the server's history: its count of seconds falls, and
 * the held ones are not shown again, as a full read would not show them.
 */
static void
merge_seconds(Snapshot *s, const Snapshot *held, double first)
{
	Second	   *merged;
	int			n = 0;

	if (held == NULL || held->nseconds == 0 ||
		s->history_buckets < held->history_buckets)
		return;
	merged = xmalloc(sizeof(Second) * (size_t) (held->nseconds + s->nseconds + 1));
	for (int i = 0; i < held->nseconds; i++)
		if (held->seconds[i].epoch >= first)
			merged[n++] = held->seconds[i];
	memcpy(&merged[n], s->seconds, sizeof(Second) * (size_t) s->nseconds);
	n += s->nseconds;
	free(s->seconds);
	s->seconds = merged;
	s->nseconds = n;
}

/*
 * The first query's row: the server's clock, the sampler, the window.  The
 * window's seconds are formatted here, not by pg_contention_duration():
 * that is PL/pgSQL, and loading PL/pgSQL into a new session (each check is
 * one) costs the server more than all of check's queries.
 */
static void
parse_clock(PGresult *res, Snapshot *s)
{
	s->taken = number_at(res, 0, 0);
	s->sampler_running = PQgetvalue(res, 0, 1)[0] == 't';
	s->findings_window = xstrdup(fmt_duration(number_at(res, 0, 2)));
	s->history_buckets = atoi(PQgetvalue(res, 0, 3));
	PQclear(res);
}

/*
 * The findings' rows, live or kept (the same first seven columns).  With
 * latest_findings_query's two more columns: whether and when they were
 * kept, and a row of no problem that is no finding.
 */
static void
parse_findings(PGresult *res, Snapshot *s)
{
	int			nrows;
	bool		latest = PQnfields(res) == 9;

	s->findings = rows_alloc(res, sizeof(Finding), &nrows);
	s->nfindings = 0;
	for (int i = 0; i < nrows; i++)
	{
		Finding    *f;

		if (latest && PQgetvalue(res, i, 8)[0] == 't')
		{
			s->findings_kept = true;
			s->evaluated_at = number_at(res, i, 7);
		}
		if (PQgetisnull(res, i, 1))
			continue;
		f = &s->findings[s->nfindings++];

		f->severity = line_at(res, i, 0);
		f->problem = line_at(res, i, 1);
		f->subject = line_at(res, i, 2);
		f->evidence = line_at(res, i, 3);
		f->advice = line_at(res, i, 4);
		f->details = text_at(res, i, 5);
		f->since = text_at(res, i, 6);
	}
	PQclear(res);
}

bool
snapshot_take(Conn *c, const SnapshotScope *scope, Snapshot *s, char **message)
{
	Buf			sql;
	Batch		b;
	PGresult   *res;
	const char *x = c->schema;
	int			limit = scope->row_limit;
	bool		victims = c->ext_version >= 104 && !scope->without_tables;
	bool		tables = !scope->without_tables;
	bool		incidents;
	const char *params[MAX_BATCH] = {0};
	int			history_query = -1; /* its place in the batch */
	char		held_after[32];
	char		column[256];	/* a quoted schema, a function and a column */

	memset(s, 0, sizeof(*s));
	memset(&b, 0, sizeof(b));
	buf_init(&sql);

	buf_printf(&sql,
			   "SELECT pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), running,"
			   " pg_catalog.date_part('epoch', pg_catalog.current_setting("
			   "'pg_contention.findings_window')::pg_catalog.interval), history_buckets"
			   " FROM %s.pg_contention_sampler_status()", x);
	if (scope->findings_only)
	{
		/*
		 * check: the clock, and in the same round trip the incidents
		 * worker's last evaluation, when it is this session's own answer
		 * (no row otherwise; one row of NULLs: it found nothing): a new
		 * session would plan every rule first.  Else the findings as below.
		 */
		bool		kept = scope->kept_findings && c->ext_version >= 104;
		PGresult   *answers[2];

		if (kept)
			buf_printf(&sql,
					   "; SELECT severity, problem, subject, evidence, advice, details::text,"
					   " pg_catalog.to_char(since, 'YYYY-MM-DD HH24:MI:SS'),"
					   " pg_catalog.date_part('epoch', evaluated_at)"
					   " FROM %s.pg_contention_findings_kept()", x);
		if (!conn_query_many(c, sql.data, kept ? 2 : 1, answers, message))
			goto failed;
		buf_reset(&sql);
		parse_clock(answers[0], s);
		s->evaluated_at = s->taken;
		res = NULL;
		if (kept)
		{
			res = answers[1];
			if (PQntuples(res) == 0)
			{
				PQclear(res);
				res = NULL;
			}
			else
			{
				s->findings_kept = true;
				s->evaluated_at = number_at(res, 0, 7);
				/* Found nothing: no finding rows. */
				if (PQgetisnull(res, 0, 1))
				{
					PQclear(res);
					res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
				}
			}
		}
		if (res == NULL)
		{
			live_findings_query(&sql, x, false);
			if ((res = run(c, &sql, message)) == NULL)
				goto failed;
		}

		parse_findings(res, s);

		buf_free(&sql);
		batch_free(&b);
		return true;
	}

	/*
	 * top and report: every query of the look in one round trip, then the
	 * results in the same order.  None depends on another's answer.
	 */
	batch_add(&b, &sql);
	if (scope->kept_findings && c->ext_version >= 104)
		latest_findings_query(&sql, x);
	else
		live_findings_query(&sql, x, scope->without_values && c->ext_version >= 104);
	batch_add(&b, &sql);
	buf_printf(&sql,
			   "SELECT pid, datname, usename, application_name, state, subxact_count,"
			   " subxact_overflowed,"
			   " pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - xact_start), %s,"
			   " count(*) FILTER (WHERE subxact_overflowed) OVER (), count(*) OVER ()"
			   " FROM %s.pg_contention_subxact"
			   " WHERE subxact_overflowed OR subxact_count > %d"
			   " ORDER BY subxact_overflowed DESC, subxact_count DESC, pid LIMIT %d",
			   text_column(c, scope, "query", column, sizeof(column)), x, c->near_level, limit);
	batch_add(&b, &sql);
	/*
	 * Not pg_contention's own sessions (this client's others, a check, a
	 * top beside it): a few milliseconds' snapshot each.  Only while they
	 * do not block cleanup: a name is anyone's to take, a hold is not
	 * hidden by it.
	 */
	buf_printf(&sql,
			   "SELECT kind, holder, pid, datname, application_name, xmin_age,"
			   " pg_catalog.date_part('epoch', held_for), state, follows, blocks_cleanup, %s"
			   " FROM %s.pg_contention_horizon"
			   " WHERE blocks_cleanup OR application_name IS DISTINCT FROM 'pg_contention' LIMIT %d",
			   text_column(c, scope, "query", column, sizeof(column)), x, limit);
	batch_add(&b, &sql);
	/*
	 * The seconds, oldest first; per-class averages are samples / ticks.
	 * The readers' lookups since 1.4; before, all Subtrans accesses.
	 */
	buf_printf(&sql,
			   "SELECT pg_catalog.date_part('epoch', bucket_start), avg_active_backends,"
			   " greatest(ticks, 1), cpu_samples, lwlock_samples, lock_samples, io_samples,"
			   " ipc_samples, bufferpin_samples, timeout_samples, extension_samples,"
			   " client_samples, other_samples,"
			   " coalesce(subtrans_slru_samples, 0) + coalesce(subtrans_buffer_samples, 0),"
			   " max_overflowed_backends, %s, horizon_xid_age"
			   " FROM %s.pg_contention_history",
			   c->ext_version >= 104 ? "subtrans_reader_lookups" : "subtrans_lookups", x);
	/*
	 * 1.4 copies and builds the rows of the seconds asked for only: those
	 * of the span that complete after the newest second held ($1, 0 when
	 * none), which are merged with the held ones (merge_seconds).
	 */
	if (scope->history_seconds > 0 && c->ext_version >= 104)
	{
		buf_printf(&sql, "(GREATEST(pg_catalog.clock_timestamp() - interval '%d seconds',"
				   " pg_catalog.to_timestamp($1::pg_catalog.float8)))",
				   scope->history_seconds + 1);
		history_query = b.n;
		snprintf(held_after, sizeof(held_after), "%.1f", newest_held(scope->held) + 0.5);
	}
	else if (scope->history_seconds > 0)
		buf_printf(&sql, " WHERE bucket_start >= pg_catalog.clock_timestamp() - interval '%d seconds'",
				   scope->history_seconds + 1);
	buf_append(&sql, " ORDER BY bucket_start");
	batch_add(&b, &sql);
	if (tables)
	{
		buf_printf(&sql,
				   "SELECT query_id, datname, usename, calls, suboverflowed_calls,"
				   " subtrans_wait_samples, max_subxacts, blks_per_row, query, %s"
				   " FROM (SELECT s.*, max(suboverflowed_calls) OVER () AS most FROM ",
				   c->ext_version >= 104 ? "application_name" : "NULL::text");
		if (c->ext_version >= 104)
		{
			/*
			 * The view's rows of the statements that ran suboverflowed or
			 * waited on pg_subtrans only (1.4): the view copies every
			 * statement of the store to show these few.
			 */
			buf_printf(&sql, "%s.pg_contention_statements_view(true) AS s", x);
		}
		else
			buf_printf(&sql, "%s.pg_contention_statements AS s", x);
		/*
		 * Not pg_contention's own statements (its client's, its workers'),
		 * as who pays leaves them out: they read its views, and they are not
		 * the workload.
		 */
		buf_printf(&sql,
				   " WHERE (suboverflowed_calls > 0 OR subtrans_wait_samples > 0)%s) AS s"
				   /* Not the long tail of statements that merely ran beside. */
				   " WHERE subtrans_wait_samples > 0 OR suboverflowed_calls >= most / 100"
				   " ORDER BY %s LIMIT %d",
				   c->ext_version >= 104 ?
				   " AND s.application_name IS DISTINCT FROM 'pg_contention'"
				   " AND coalesce(s.application_name NOT LIKE 'pg\\_contention %%', true)"
				   " AND coalesce(pg_catalog.strpos(s.query, 'pg_contention') = 0, true)" : "",
				   statement_order(scope->sort), limit);
		batch_add(&b, &sql);
		buf_printf(&sql,
				   "SELECT coalesce(schemaname || '.' || indexrelname, 'index oid ' || indexrelid),"
				   " datname, query_id, scans, dead_visits, dead_visits::float8 / nullif(scans, 0),"
				   " max_dead_visits_per_scan, dead_ratio, query FROM ");
		if (c->ext_version >= 104)
		{
			/*
			 * The view's rows of the indexes that visited dead entries only
			 * (1.4): the view copies every statement of the store to show
			 * these few.
			 */
			buf_printf(&sql, "%s.pg_contention_index_scans_view(true) AS i", x);
		}
		else
			buf_printf(&sql, "%s.pg_contention_index_scans AS i", x);
		buf_printf(&sql, " WHERE dead_visits > 0 ORDER BY %s LIMIT %d",
				   index_order(scope->sort), limit);
		batch_add(&b, &sql);
	}

	/*
	 * Who pays: per application and statement, what each paid in the
	 * findings' window for the problems the findings name, each finding's
	 * culprit left out as its evidence leaves it out (pg_contention's own
	 * too; a culprit of one finding may be another's victim).
	 */
	if (victims)
	{
		buf_printf(&sql,
				   "SELECT kind, application_name, usename, datname, query_id, executions, paid, query"
				   " FROM %s.pg_contention_findings_victims(NULL::pg_catalog.interval) ORDER BY paid DESC LIMIT %d", x, limit);
		batch_add(&b, &sql);
	}
	/* The incidents the server kept: the open ones and the last closed. */
	incidents = scope->incidents > 0 &&
		incidents_query(c, scope->incidents, false, &sql);
	if (incidents)
		batch_add(&b, &sql);
	if (scope->events)
	{
		/*
		 * One row per session and statement: a loop of overflowing
		 * transactions is one row with its count and time range, not
		 * a screen of identical rows.
		 */
		buf_printf(&sql,
				   "SELECT pg_catalog.to_char(min(event_time), 'YYYY-MM-DD HH24:MI:SS'),"
				   " pg_catalog.to_char(max(event_time), 'YYYY-MM-DD HH24:MI:SS'), pid, datname,"
				   " usename, application_name, %s, count(*)"
				   " FROM %s.pg_contention_overflow_events GROUP BY 3, 4, 5, 6, 7"
				   " ORDER BY max(event_time) DESC LIMIT %d",
				   text_column(c, scope, "query", column, sizeof(column)), x, limit);
		batch_add(&b, &sql);
	}
	if (history_query >= 0)
		params[history_query] = held_after;
	if (!conn_query_prepared(c, b.texts, params, b.n, b.res, message))
		goto failed;

	res = batch_next(&b);
	parse_clock(res, s);
	res = batch_next(&b);
	parse_findings(res, s);
	res = batch_next(&b);
	s->backends = rows_alloc(res, sizeof(Backend), &s->nbackends);
	for (int i = 0; i < s->nbackends; i++)
	{
		Backend    *b = &s->backends[i];

		b->pid = atoi(PQgetvalue(res, i, 0));
		b->datname = line_at(res, i, 1);
		b->usename = line_at(res, i, 2);
		b->application = line_at(res, i, 3);
		b->state = line_at(res, i, 4);
		b->subxacts = atoi(PQgetvalue(res, i, 5));
		b->overflowed = PQgetvalue(res, i, 6)[0] == 't';
		b->xact_seconds = PQgetisnull(res, i, 7) ? -1 : number_at(res, i, 7);
		b->query = line_at(res, i, 8);
		s->overflowed_backends = atoi(PQgetvalue(res, i, 9));
		s->near_backends = atoi(PQgetvalue(res, i, 10)) - s->overflowed_backends;
	}
	PQclear(res);
	res = batch_next(&b);
	s->holders = rows_alloc(res, sizeof(Holder), &s->nholders);
	for (int i = 0; i < s->nholders; i++)
	{
		Holder	   *h = &s->holders[i];

		h->kind = line_at(res, i, 0);
		h->holder = line_at(res, i, 1);
		h->pid = PQgetisnull(res, i, 2) ? 0 : atoi(PQgetvalue(res, i, 2));
		h->datname = line_at(res, i, 3);
		h->application = line_at(res, i, 4);
		h->xmin_age = number_at(res, i, 5);
		h->held_seconds = PQgetisnull(res, i, 6) ? -1 : number_at(res, i, 6);
		h->state = line_at(res, i, 7);
		h->follows = line_at(res, i, 8);
		h->blocks_cleanup = PQgetvalue(res, i, 9)[0] == 't';
		h->query = line_at(res, i, 10);
	}
	PQclear(res);
	res = batch_next(&b);
	s->seconds = rows_alloc(res, sizeof(Second), &s->nseconds);
	for (int i = 0; i < s->nseconds; i++)
	{
		Second	   *b = &s->seconds[i];
		double		ticks = number_at(res, i, 2);

		b->epoch = number_at(res, i, 0);
		b->active = number_at(res, i, 1);
		for (int k = 0; k < NUM_CLASSES; k++)
			b->by_class[k] = number_at(res, i, 3 + k) / ticks;
		b->subtrans_waits = number_at(res, i, 13);
		b->overflowed = number_at(res, i, 14);
		b->lookups = number_at(res, i, 15);
		b->horizon_age = number_at(res, i, 16);
	}
	PQclear(res);
	if (history_query >= 0)
		merge_seconds(s, scope->held, s->taken - (scope->history_seconds + 1));
	if (tables)
	{
		res = batch_next(&b);
		s->statements = rows_alloc(res, sizeof(StatementRow), &s->nstatements);
		for (int i = 0; i < s->nstatements; i++)
		{
			StatementRow *r = &s->statements[i];

			r->query_id = line_at(res, i, 0);
			r->datname = line_at(res, i, 1);
			r->usename = line_at(res, i, 2);
			r->calls = number_at(res, i, 3);
			r->suboverflowed_calls = number_at(res, i, 4);
			r->subtrans_waits = number_at(res, i, 5);
			r->max_subxacts = number_at(res, i, 6);
			r->blks_per_row = number_at(res, i, 7);
			r->query = line_at(res, i, 8);
			r->application = line_at(res, i, 9);
		}
		PQclear(res);
		res = batch_next(&b);
		s->indexes = rows_alloc(res, sizeof(IndexRow), &s->nindexes);
		for (int i = 0; i < s->nindexes; i++)
		{
			IndexRow   *r = &s->indexes[i];

			r->index = line_at(res, i, 0);
			r->datname = line_at(res, i, 1);
			r->query_id = line_at(res, i, 2);
			r->scans = number_at(res, i, 3);
			r->dead_visits = number_at(res, i, 4);
			r->dead_per_scan = number_at(res, i, 5);
			r->max_dead_per_scan = number_at(res, i, 6);
			r->dead_ratio = number_at(res, i, 7);
			r->query = line_at(res, i, 8);
		}
		PQclear(res);
	}
	if (victims)
	{
		res = batch_next(&b);
		s->victims = rows_alloc(res, sizeof(VictimRow), &s->nvictims);
		for (int i = 0; i < s->nvictims; i++)
		{
			VictimRow  *v = &s->victims[i];

			v->kind = line_at(res, i, 0);
			v->application = line_at(res, i, 1);
			v->usename = line_at(res, i, 2);
			v->datname = line_at(res, i, 3);
			v->query_id = line_at(res, i, 4);
			v->executions = number_at(res, i, 5);
			v->paid = number_at(res, i, 6);
			v->query = line_at(res, i, 7);
		}
		PQclear(res);
	}
	if (incidents)
		incidents_parse(batch_next(&b), &s->incidents);
	if (scope->events)
	{
		res = batch_next(&b);
		s->events = rows_alloc(res, sizeof(EventRow), &s->nevents);
		for (int i = 0; i < s->nevents; i++)
		{
			EventRow   *e = &s->events[i];

			e->time = line_at(res, i, 0);
			e->last_time = line_at(res, i, 1);
			e->pid = atoi(PQgetvalue(res, i, 2));
			e->datname = line_at(res, i, 3);
			e->usename = line_at(res, i, 4);
			e->application = line_at(res, i, 5);
			e->query = line_at(res, i, 6);
			e->events = strtoll(PQgetvalue(res, i, 7), NULL, 10);
		}
		PQclear(res);
	}
	buf_free(&sql);
	batch_free(&b);
	return true;

failed:
	buf_free(&sql);
	batch_free(&b);
	snapshot_free(s);
	return false;
}

void
snapshot_free(Snapshot *s)
{
	for (int i = 0; i < s->nfindings; i++)
	{
		Finding    *f = &s->findings[i];

		free(f->problem);
		free(f->severity);
		free(f->subject);
		free(f->evidence);
		free(f->advice);
		free(f->details);
		free(f->since);
	}
	for (int i = 0; i < s->nbackends; i++)
	{
		free(s->backends[i].datname);
		free(s->backends[i].usename);
		free(s->backends[i].application);
		free(s->backends[i].state);
		free(s->backends[i].query);
	}
	for (int i = 0; i < s->nholders; i++)
	{
		free(s->holders[i].kind);
		free(s->holders[i].holder);
		free(s->holders[i].datname);
		free(s->holders[i].application);
		free(s->holders[i].state);
		free(s->holders[i].follows);
		free(s->holders[i].query);
	}
	for (int i = 0; i < s->nstatements; i++)
	{
		free(s->statements[i].query_id);
		free(s->statements[i].datname);
		free(s->statements[i].usename);
		free(s->statements[i].query);
		free(s->statements[i].application);
	}
	for (int i = 0; i < s->nindexes; i++)
	{
		free(s->indexes[i].index);
		free(s->indexes[i].datname);
		free(s->indexes[i].query_id);
		free(s->indexes[i].query);
	}
	for (int i = 0; i < s->nvictims; i++)
	{
		free(s->victims[i].kind);
		free(s->victims[i].application);
		free(s->victims[i].usename);
		free(s->victims[i].datname);
		free(s->victims[i].query_id);
		free(s->victims[i].query);
	}
	for (int i = 0; i < s->nevents; i++)
	{
		free(s->events[i].time);
		free(s->events[i].last_time);
		free(s->events[i].datname);
		free(s->events[i].usename);
		free(s->events[i].application);
		free(s->events[i].query);
	}
	free(s->findings);
	free(s->backends);
	free(s->holders);
	free(s->seconds);
	free(s->statements);
	free(s->indexes);
	free(s->events);
	free(s->victims);
	free(s->findings_window);
	incidents_free(&s->incidents);
	memset(s, 0, sizeof(*s));
}
