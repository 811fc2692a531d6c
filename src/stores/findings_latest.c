/*-------------------------------------------------------------------------
 *
 * findings_latest.c
 *		The incidents worker's last evaluation of the findings, kept so that
 *		a reader who would get the same answer does not pay for it again:
 *		pg_contention check runs in a new session each time, and a new
 *		session plans every rule (tens of milliseconds with full stores)
 *		before it evaluates them.  pg_contention_findings_latest() returns
 *		these rows when they are the reader's own answer, up to one
 *		pg_contention.incident_interval old, and evaluates the findings
 *		itself otherwise.
 *
 * They are the reader's own answer only when all of these hold: the
 * evaluation is at most two intervals old (the worker runs, incidents are
 * on); it ran in the reader's database (names are resolved there); the
 * reader sees every text the worker saw (pg_read_all_stats: the worker is
 * a superuser, and the rules mask others' statements for anyone else); and
 * every setting that changes a finding or its text (the thresholds, which
 * any role may set, the window, time zone and styles) has the same value
 * for the reader as it had for the worker.  (Not search_path: every
 * function of the extension pins its own.)
 *
 * Owns ShmemInitStruct "pg_contention latest findings": a header and
 * PGC_LATEST_FINDINGS_BYTES of rows, written whole by the worker.  An
 * evaluation whose rows do not fit is not kept (evaluated_at 0, counted in
 * too_large): readers then evaluate; no row is ever cut.
 *
 * Locking: the worker is the only writer; it encodes the rows in its own
 * memory and copies them in under the LWLock in exclusive mode (memcpy,
 * nothing that can fail).  Readers copy the block under the lock in
 * shared mode and build rows after releasing it.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

/* What the rows may take: a few findings of a few kB each, many times over. */
#define PGC_LATEST_FINDINGS_BYTES	(256 * 1024)
#define SETTINGS_LEN				2048

typedef struct LatestShared
{
	LWLock	   *lock;
	TimestampTz evaluated_at;	/* 0: nothing usable */
	Oid			dbid;
	int			nrows;
	Size		used;			/* bytes of data in use */
	int64		too_large;		/* evaluations not kept: rows too big */
	char		settings[SETTINGS_LEN]; /* the worker's, see settings_text */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} LatestShared;

static LatestShared *latest = NULL;

/*
 * The settings a finding or its text depends on, besides the stores:
 * every threshold (PGC_USERSET: a role or a session may set its own), the
 * window and the other settings the rules read (the same for every session
 * but for a moment after a reload), and what formats names, times and
 * numbers.
 */
/*
 * The settings the rules read that need no place here: fixed when the
 * server starts, so the same for the worker and every session.
 * tools/sql.sh --check reads this list and finding_settings, and fails
 * when a rule reads a setting in neither.
 *
 * fixed at start: server_version server_version_num old_snapshot_threshold
 *     subtransaction_buffers pg_contention.history_seconds
 */
static const char *const finding_settings[] = {
	"pg_contention.findings_window",
	"pg_contention.horizon_min_age",
	"pg_contention.horizon_min_xid_age",
	"pg_contention.subtrans_lookups_warning",
	"pg_contention.subtrans_wait_warning",
	"pg_contention.subtrans_wait_critical",
	"pg_contention.dead_visits_warning",
	"pg_contention.dead_visits_critical",
	"pg_contention.hot_chain_buffers_warning",
	"pg_contention.dead_ratio_warning",
	"pg_contention.horizon_critical_age",
	"pg_contention.horizon_critical_xid_age",
	"pg_contention.old_snapshot_probe_warning",
	"pg_contention.old_snapshot_probe_critical",
	"pg_contention.old_snapshot_held_warning",
	"pg_contention.old_snapshot_held_critical",
	"pg_contention.subxact_warn_level",
	"pg_contention.overflow_ended_after",
	"hot_standby_feedback",
	"TimeZone",
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"lc_numeric",
	"lc_monetary",
	"lc_time",
};

/* This process's values of finding_settings, as one text. */
static void
settings_text(StringInfo out)
{
	for (int i = 0; i < (int) lengthof(finding_settings); i++)
	{
		const char *value = GetConfigOption(finding_settings[i], true, false);

		appendStringInfo(out, "%s=%s\n", finding_settings[i], value ? value : "");
	}
}

Size
pgc_findings_latest_shmem_size(void)
{
	return add_size(offsetof(LatestShared, data), PGC_LATEST_FINDINGS_BYTES);
}

void
pgc_findings_latest_shmem_init(LWLock *lock)
{
	bool		found;

	latest = ShmemInitStruct("pg_contention latest findings",
							 pgc_findings_latest_shmem_size(), &found);
	if (!found)
		memset(latest, 0, offsetof(LatestShared, data));
	latest->lock = lock;
}

/* pg_contention_reset(): what was evaluated before it is not kept. */
void
pgc_findings_latest_reset(void)
{
	LWLockAcquire(latest->lock, LW_EXCLUSIVE);
	latest->evaluated_at = 0;
	latest->nrows = 0;
	latest->used = 0;
	latest->too_large = 0;
	LWLockRelease(latest->lock);
}

/* The worker could not evaluate: readers evaluate themselves. */
void
pgc_findings_latest_forget(void)
{
	if (latest == NULL)
		return;
	LWLockAcquire(latest->lock, LW_EXCLUSIVE);
	latest->evaluated_at = 0;
	latest->nrows = 0;
	latest->used = 0;
	LWLockRelease(latest->lock);
}

/* Append one text to a row: a byte saying whether it is NULL, then it. */
static void
put_field(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, s ? 1 : 0);
	if (s)
		appendBinaryStringInfo(buf, s, (int) strlen(s) + 1);
}

/*
 * The worker's evaluation at "at": nrows findings, each as the findings
 * view gives it (since 0: NULL).  Encoded here, outside the lock: per row
 * its since, then problem, severity, subject, evidence, advice, details.
 */
void
pgc_findings_latest_publish(TimestampTz at, int nrows, const PgcFindingRow *rows)
{
	StringInfoData buf;
	StringInfoData settings;

	if (latest == NULL)
		return;
	initStringInfo(&buf);
	for (int i = 0; i < nrows; i++)
	{
		const PgcFindingRow *r = &rows[i];

		appendBinaryStringInfo(&buf, (const char *) &r->since, sizeof(TimestampTz));
		put_field(&buf, r->problem);
		put_field(&buf, r->severity);
		put_field(&buf, r->subject);
		put_field(&buf, r->evidence);
		put_field(&buf, r->advice);
		put_field(&buf, r->details);
	}
	initStringInfo(&settings);
	settings_text(&settings);

	LWLockAcquire(latest->lock, LW_EXCLUSIVE);
	if (buf.len > PGC_LATEST_FINDINGS_BYTES || settings.len >= SETTINGS_LEN)
	{
		latest->evaluated_at = 0;
		latest->nrows = 0;
		latest->used = 0;
		latest->too_large++;
	}
	else
	{
		memcpy(latest->data, buf.data, buf.len);
		memcpy(latest->settings, settings.data, settings.len + 1);
		latest->used = buf.len;
		latest->nrows = nrows;
		latest->dbid = MyDatabaseId;
		latest->evaluated_at = at;
	}
	LWLockRelease(latest->lock);
	pfree(buf.data);
	pfree(settings.data);
}

/* For pg_contention_info: evaluations not kept because too large. */
int64
pgc_findings_latest_too_large(void)
{
	int64		n;

	if (latest == NULL)
		return 0;
	LWLockAcquire(latest->lock, LW_SHARED);
	n = latest->too_large;
	LWLockRelease(latest->lock);
	return n;
}

/* Read one field (NULL: SQL NULL) and step past it. */
static const char *
take_field(const char **p)
{
	const char *s;

	if (*(*p)++ == 0)
		return NULL;
	s = *p;
	*p += strlen(s) + 1;
	return s;
}

/*
 * The worker's last evaluation, when it is the caller's answer as to its
 * age, database and settings (see the top of this file; whether the
 * caller may see every text is the reader's to judge): its rows in the
 * caller's memory, *nrows of them (0: it found nothing), and when it was
 * evaluated.  NULL: the caller must evaluate.
 */
PgcFindingRow *
pgc_findings_latest_read(TimestampTz *evaluated_at, int *nrows)
{
	TimestampTz at;
	Oid			dbid;
	int			n;
	Size		used;
	char	   *data;
	char	   *worker_settings;
	StringInfoData mine;
	const char *p;
	PgcFindingRow *rows;

	if (pgc_incident_interval <= 0)
		return NULL;
	data = palloc(PGC_LATEST_FINDINGS_BYTES);
	worker_settings = palloc(SETTINGS_LEN);
	LWLockAcquire(latest->lock, LW_SHARED);
	at = latest->evaluated_at;
	dbid = latest->dbid;
	n = latest->nrows;
	used = latest->used;
	memcpy(data, latest->data, used);
	memcpy(worker_settings, latest->settings, SETTINGS_LEN);
	LWLockRelease(latest->lock);

	if (at == 0 || dbid != MyDatabaseId ||
		GetCurrentTimestamp() - at >
		2 * (TimestampTz) pgc_incident_interval * USECS_PER_SEC)
		return NULL;
	initStringInfo(&mine);
	settings_text(&mine);
	if (strcmp(mine.data, worker_settings) != 0)
		return NULL;

	rows = palloc0(Max(n, 1) * sizeof(PgcFindingRow));
	p = data;
	for (int i = 0; i < n; i++)
	{
		memcpy(&rows[i].since, p, sizeof(TimestampTz));
		p += sizeof(TimestampTz);
		rows[i].problem = take_field(&p);
		rows[i].severity = take_field(&p);
		rows[i].subject = take_field(&p);
		rows[i].evidence = take_field(&p);
		rows[i].advice = take_field(&p);
		rows[i].details = take_field(&p);
	}
	*evaluated_at = at;
	*nrows = n;
	return rows;
}
