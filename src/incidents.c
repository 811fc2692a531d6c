/*-------------------------------------------------------------------------
 *
 * incidents.c
 *		Incidents: the findings, evaluated by the server itself every
 *		pg_contention.incident_interval by a background worker ("pg_contention
 *		incidents", connected to pg_contention.incident_database), opened
 *		when a finding reaches warning or critical for a subject, escalated
 *		when its severity rises, closed when it has been gone (or below
 *		warning) for pg_contention.incident_close_after, with their evidence
 *		frozen at open and at the peak.  The view pg_contention_incidents,
 *		the store's section of the stores' file, and the LOG lines.
 *
 * Owns the incident store (ShmemInitStruct "pg_contention incidents": a
 * header, then max_incidents fixed-size slots, each with its texts cut at
 * fixed sizes and its frozen evidence compressed, see FrozenText) and its
 * LWLock.
 *
 * Locking: the worker is the only writer of incidents (reset empties the
 * store, the postmaster loads it before any process exists).  The worker
 * evaluates without the lock (SPI, in its own transaction): it copies the
 * open incidents' keys under the lock in shared mode, runs the queries,
 * then takes the lock exclusively once to apply what it found (memcpy of
 * bounded texts, nothing that can ERROR), and LOGs after releasing it.  A
 * reset between the copy and the apply is seen through reset_generation:
 * that evaluation's updates are dropped.  Readers copy the slots under
 * the lock in shared mode and build rows after releasing it.  The
 * sampler reads worker_pid without the lock (an aligned int written by
 * the worker alone) to leave the worker's own samples out.
 *
 * What the worker runs is kept out of the stores it reads: it turns
 * pg_contention.track_statements off for itself (no statement counted;
 * jit too: compiling its queries costs more than running them),
 * the sampler skips its pid, and pg_contention_horizon leaves out the
 * process that reads it.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <limits.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "common/pg_lzcompress.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "commands/dbcommands.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

PGDLLEXPORT void pgc_incidents_main(Datum main_arg);

/* Severities as stored: 0 none (NULL), then info, warning, critical. */
#define SEV_NONE		0
#define SEV_INFO		1
#define SEV_WARNING		2
#define SEV_CRITICAL	3

/* Text sizes of one slot (with the NUL): the per-incident bound. */
#define PROBLEM_LEN		64
#define KEY_LEN			256
#define SUBJECT_LEN		1024
#define EVIDENCE_LEN	2048
#define ADVICE_LEN		1024
#define RESOLUTION_LEN	512
#define FINDING_LEN		4096
#define FROZEN_LEN		(PGC_INCIDENT_FROZEN_BYTES)

/*
 * The frozen evidence as a slot keeps it: compressed (pglz).  Its 60
 * seconds of history, rows of the same keys, shrink about tenfold
 * (37,644 bytes to 3,277 on a pgbench run); statements' and holders'
 * texts less.  Evidence that does not fit is frozen again, smaller
 * (freeze()).  10 kB instead of 48 kB a slot: 3.7 MB of shared memory
 * at the default 100 incidents.
 */
#define FROZEN_STORED_LEN	(10 * 1024)

typedef struct FrozenText
{
	int32		len;			/* the text's length, < FROZEN_LEN; 0: none */
	int32		stored;			/* bytes in data: len if kept as is, else
								 * fewer, compressed */
	char		data[FROZEN_STORED_LEN];
} FrozenText;

/* The problems counted by incidents_opened_total; the last is "other". */
static const char *const counted_problems[] = {
	"subxact_overflow", "subtrans_slru_contention", "subxact_near_overflow",
	"dead_tuple_index_scan", "hot_chain_scan", "xmin_horizon_held",
	"old_snapshot_threshold_spinlock", "other"
};

#define NUM_COUNTED lengthof(counted_problems)

/*
 * One incident.  id 0: a free slot.  The fixed part (up to problem) is a
 * record's fixed part in the file; the texts follow it there one by one.
 */
typedef struct Incident
{
	int64		id;
	TimestampTz opened;
	TimestampTz peak;
	TimestampTz closed;			/* 0 while open */
	TimestampTz last_seen;		/* last evaluation at warning or above */
	Oid			dbid;			/* the database the texts came from */
	Oid			culprit;		/* the role the finding names (InvalidOid: none);
								 * it grants no reading (see the view) */
	int32		open_severity;
	int32		peak_severity;
	int32		severity;		/* at the last evaluation that saw it */
	int32		padding;
	int32		members;		/* findings it gathered at the peak (one
								 * holder's dead entries in many indexes) */
	int32		padding2;
	char		problem[PROBLEM_LEN];
	char		key[KEY_LEN];
	char		subject[SUBJECT_LEN];	/* at the peak */
	char		evidence[EVIDENCE_LEN];
	char		advice[ADVICE_LEN];
	char		open_subject[SUBJECT_LEN];
	char		open_evidence[EVIDENCE_LEN];
	char		last_evidence[EVIDENCE_LEN];	/* the last seen */
	char		resolution[RESOLUTION_LEN];
	char		finding[FINDING_LEN];	/* its details jsonb, at the peak */
	FrozenText	frozen;			/* {"statements":..,"holders":..,"history":..} */
} Incident;

typedef struct IncidentsShared
{
	LWLock	   *lock;
	int			worker_pid;		/* 0: not running */
	uint64		reset_generation;
	int64		next_id;
	int64		evictions;		/* closed incidents evicted */
	int64		not_opened;		/* subjects refused: no slot for them */
	int64		open_evictions; /* open incidents evicted for another
								 * role's (take_room) */
	int64		opened[NUM_COUNTED][2]; /* [problem][warning, critical] */
} IncidentsShared;

static IncidentsShared *incidents = NULL;
static Incident *slots = NULL;

/* ---- shared memory ---- */

Size
pgc_incidents_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(IncidentsShared)),
					mul_size(pgc_max_incidents, sizeof(Incident)));
}

void
pgc_incidents_shmem_init(LWLock *lock)
{
	bool		found;

	incidents = ShmemInitStruct("pg_contention incidents",
								pgc_incidents_shmem_size(), &found);
	slots = (Incident *) ((char *) incidents + MAXALIGN(sizeof(IncidentsShared)));
	if (!found)
	{
		memset(incidents, 0, pgc_incidents_shmem_size());
		incidents->next_id = 1;
	}
	incidents->lock = lock;
}

void
pgc_incidents_reset(void)
{
	LWLockAcquire(incidents->lock, LW_EXCLUSIVE);
	memset(slots, 0, mul_size(pgc_max_incidents, sizeof(Incident)));
	incidents->next_id = 1;
	incidents->evictions = 0;
	incidents->not_opened = 0;
	incidents->open_evictions = 0;
	memset(incidents->opened, 0, sizeof(incidents->opened));
	incidents->reset_generation++;
	LWLockRelease(incidents->lock);
}

/* The worker's pid, for the sampler: an aligned int only the worker writes. */
int
pgc_incidents_worker_pid(void)
{
	if (incidents == NULL)
		return 0;
	return *((volatile int *) &incidents->worker_pid);
}

static int
counted_index(const char *problem)
{
	for (int i = 0; i < (int) NUM_COUNTED - 1; i++)
		if (strcmp(problem, counted_problems[i]) == 0)
			return i;
	return NUM_COUNTED - 1;
}

/*
 * For pg_contention_info: capacity, fill, evictions, and the incidents
 * opened since the reset by problem and severity as a jsonb text
 * ({"xmin_horizon_held": {"warning": 2, "critical": 0}, ...}: only the
 * problems with any).
 */
void
pgc_incidents_info(int *used, int64 *evictions, int64 *not_opened,
				   int64 *open_evictions, char **opened_json)
{
	int64		opened[NUM_COUNTED][2];
	StringInfoData buf;
	bool		first = true;

	*used = 0;
	LWLockAcquire(incidents->lock, LW_SHARED);
	for (int i = 0; i < pgc_max_incidents; i++)
		if (slots[i].id != 0)
			(*used)++;
	*evictions = incidents->evictions;
	*not_opened = incidents->not_opened;
	*open_evictions = incidents->open_evictions;
	memcpy(opened, incidents->opened, sizeof(opened));
	LWLockRelease(incidents->lock);

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < (int) NUM_COUNTED; i++)
	{
		if (opened[i][0] == 0 && opened[i][1] == 0)
			continue;
		appendStringInfo(&buf, "%s\"%s\": {\"warning\": " INT64_FORMAT ", \"critical\": " INT64_FORMAT "}",
						 first ? "" : ", ", counted_problems[i], opened[i][0], opened[i][1]);
		first = false;
	}
	appendStringInfoChar(&buf, '}');
	*opened_json = buf.data;
}

/* ---- texts ---- */

static const char *
severity_name(int severity)
{
	switch (severity)
	{
		case SEV_INFO:
			return "info";
		case SEV_WARNING:
			return "warning";
		case SEV_CRITICAL:
			return "critical";
	}
	return NULL;
}

static int
severity_from_name(const char *name)
{
	if (name == NULL)
		return SEV_NONE;
	if (strcmp(name, "critical") == 0)
		return SEV_CRITICAL;
	if (strcmp(name, "warning") == 0)
		return SEV_WARNING;
	return SEV_INFO;
}

/* Copy src into a slot's field of size "size", cut at a character boundary. */
static void
put_text(char *dest, int size, const char *src)
{
	int			len;

	if (src == NULL)
		src = "";
	len = strlen(src);
	if (len >= size)
		len = pg_mbcliplen(src, len, size - 1);
	memcpy(dest, src, len);
	dest[len] = '\0';
}

/*
 * Keep a frozen document (shorter than FROZEN_LEN) in a slot's form:
 * compressed when that makes it smaller, else as it is.  False when it
 * fits neither way, or no memory was left for the work (out then holds
 * none).  Nothing here can ERROR: the postmaster loads with it.
 */
static bool
pack_frozen(const char *text, FrozenText *out)
{
	int32		len = strlen(text);
	char	   *buf = NULL;
	int32		stored = -1;

	out->len = 0;
	out->stored = 0;
	if (len == 0)
		return true;
	if (len >= FROZEN_LEN)
		return false;
	if (len > FROZEN_STORED_LEN / 4)
		buf = palloc_extended(PGLZ_MAX_OUTPUT(len), MCXT_ALLOC_NO_OOM);
	if (buf != NULL)
		stored = pglz_compress(text, len, buf, PGLZ_strategy_default);
	if (stored > 0 && stored < len && stored <= FROZEN_STORED_LEN)
		memcpy(out->data, buf, stored);
	else if (len <= FROZEN_STORED_LEN)
		memcpy(out->data, text, stored = len);
	else
		stored = -1;
	if (buf != NULL)
		pfree(buf);
	if (stored < 0)
		return false;
	out->len = len;
	out->stored = stored;
	return true;
}

/*
 * A slot's frozen document as text, into dest (at least FROZEN_LEN
 * bytes); "" if it has none.  The slot is this store's own writing, but
 * its lengths are checked before use all the same.
 */
static void
unpack_frozen(const FrozenText *in, char *dest)
{
	dest[0] = '\0';
	if (in->len <= 0 || in->len >= FROZEN_LEN ||
		in->stored <= 0 || in->stored > Min(in->len, FROZEN_STORED_LEN))
		return;
	if (in->stored == in->len)
		memcpy(dest, in->data, in->len);
	else if (pglz_decompress(in->data, in->stored, dest, in->len, true) != in->len)
	{
		dest[0] = '\0';		/* it wrote some of it */
		return;
	}
	dest[in->len] = '\0';
}

/*
 * A text for a LOG line: on one line (control characters written as
 * \xNN), at most 200 bytes, cut at a character boundary.
 */
static char *
log_text(const char *s)
{
	StringInfoData buf;
	int			len = strlen(s);

	if (len > 200)
		len = pg_mbcliplen(s, len, 200);
	initStringInfo(&buf);
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c < 0x20 || c == 0x7f)
			appendStringInfo(&buf, "\\x%02x", c);
		else
			appendStringInfoChar(&buf, (char) c);
	}
	if (len < (int) strlen(s))
		appendStringInfoString(&buf, "...");
	return buf.data;
}

static void
append_json_time(StringInfo buf, TimestampTz t)
{
	char		out[MAXDATELEN + 1];

	if (t == 0)
	{
		appendStringInfoString(buf, "null");
		return;
	}
	appendStringInfoChar(buf, '"');
	appendStringInfoString(buf, JsonEncodeDateTime(out, TimestampTzGetDatum(t),
												   TIMESTAMPTZOID, NULL));
	appendStringInfoChar(buf, '"');
}

/* A stored text in the reader's encoding, as a C string. */
static char *
reader_text(const char *s, Oid dbid)
{
	return TextDatumGetCString(pgc_text_datum(s, dbid));
}

static bool json_valid(const char *s);

/* A composed text of an incident, or MASKED_TEXT for a reader without privileges. */
#define MASKED_TEXT "<insufficient privilege>"

static char *
composed_text(bool privileged, const char *s, Oid dbid)
{
	return privileged ? reader_text(s, dbid) : pstrdup(MASKED_TEXT);
}

/*
 * The details document of an incident (a copy, out of the lock): the
 * frozen texts spliced into the contract's shape, each first made valid
 * in the reader's encoding.  The texts that are JSON (finding, frozen)
 * are checked again after that (a conversion may write a byte it cannot
 * show as \xNN, which is no JSON escape): one that fails is left out.
 *
 * For a reader without pg_read_all_stats (privileged false): the
 * subjects and evidence masked (the worker composed them from every
 * role's statements), the finding's own details too ({"masked": true}:
 * they hold query ids and the worst execution's constants), and each
 * frozen statement and holder masked by the role it came from
 * (pgc_mask_frozen).
 */
static char *
details_text(const Incident *inc, bool privileged)
{
	StringInfoData buf;
	char	   *finding = reader_text(inc->finding, inc->dbid);
	char	   *as_kept = palloc(FROZEN_LEN);
	char	   *frozen;

	unpack_frozen(&inc->frozen, as_kept);
	frozen = reader_text(as_kept, inc->dbid);
	pfree(as_kept);

	if (finding[0] != '\0' && !json_valid(finding))
		finding = "";
	if (frozen[0] != '{' || frozen[1] == '}' || !json_valid(frozen))
		frozen = "";
	if (!privileged)
	{
		if (finding[0] != '\0')
			finding = "{\"masked\": true}";
		if (frozen[0] != '\0')
			frozen = pgc_mask_frozen(frozen);
	}

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"key\": ");
	escape_json(&buf, reader_text(inc->key, inc->dbid));
	appendStringInfo(&buf, ", \"finding\": %s", finding[0] ? finding : "null");
	appendStringInfoString(&buf, ", \"opened\": {\"at\": ");
	append_json_time(&buf, inc->opened);
	appendStringInfo(&buf, ", \"severity\": \"%s\", \"subject\": ",
					 severity_name(inc->open_severity));
	escape_json(&buf, composed_text(privileged, inc->open_subject, inc->dbid));
	appendStringInfoString(&buf, ", \"evidence\": ");
	escape_json(&buf, composed_text(privileged, inc->open_evidence, inc->dbid));
	appendStringInfoString(&buf, "}, \"peak\": {\"at\": ");
	append_json_time(&buf, inc->peak);
	appendStringInfo(&buf, ", \"severity\": \"%s\", \"subject\": ",
					 severity_name(inc->peak_severity));
	escape_json(&buf, composed_text(privileged, inc->subject, inc->dbid));
	appendStringInfoString(&buf, ", \"evidence\": ");
	escape_json(&buf, composed_text(privileged, inc->evidence, inc->dbid));
	appendStringInfoString(&buf, "}, \"closed\": ");
	if (inc->closed != 0)
	{
		appendStringInfoString(&buf, "{\"at\": ");
		append_json_time(&buf, inc->closed);
		appendStringInfoString(&buf, ", \"evidence\": ");
		escape_json(&buf, composed_text(privileged, inc->last_evidence, inc->dbid));
		appendStringInfoChar(&buf, '}');
	}
	else
		appendStringInfoString(&buf, "null");
	/* frozen is an object: its members follow ours. */
	if (frozen[0] != '\0')
		appendStringInfo(&buf, ", %s", frozen + 1);
	else
		appendStringInfoString(&buf, ", \"statements\": [], \"holders\": [], \"history\": [], \"truncated\": true}");
	/* Said once at the top, for the reports: the reader's view is masked. */
	if (!privileged)
	{
		buf.data[--buf.len] = '\0';
		appendStringInfoString(&buf, ", \"masked\": true}");
	}
	return buf.data;
}

/*
 * Is s one JSON value (RFC 8259, as jsonb_in reads it), nested at most
 * 32 deep, with \u escapes of ASCII characters only and exponents of at
 * most 4 digits (what the stored texts have: jsonb's output and
 * escape_json's)?  Iterative: a damaged file's text cannot exhaust the stack.
 * What loading checks before a text may reach jsonb_in in a view.
 */
static bool
json_valid(const char *s)
{
	char		stack[32];		/* '{' or '[' */
	int			depth = 0;
	bool		expect_value = true;	/* else a ',' or a closer */
	bool		expect_key = false;
	const char *p = s;

#define SKIP_WS() while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++

	for (;;)
	{
		SKIP_WS();
		if (expect_value)
		{
			if (*p == '{' || *p == '[')
			{
				if (depth == lengthof(stack))
					return false;
				stack[depth++] = *p++;
				SKIP_WS();
				if ((stack[depth - 1] == '{' && *p == '}') ||
					(stack[depth - 1] == '[' && *p == ']'))
				{
					p++;
					depth--;
					expect_value = false;
				}
				else
					expect_key = (stack[depth - 1] == '{');
				if (expect_key)
				{
					if (*p != '"')
						return false;
				}
				if (!expect_value)
					goto after_value;
				continue;
			}
			if (*p == '"')
			{
				p++;
				while (*p != '"')
				{
					if (*p == '\0' || (unsigned char) *p < 0x20)
						return false;
					if (*p == '\\')
					{
						p++;
						if (*p == 'u')
						{
							unsigned int code = 0;

							for (int i = 1; i <= 4; i++)
							{
								char		c = p[i];

								if (!isxdigit((unsigned char) c))
									return false;
								code = code * 16 + (isdigit((unsigned char) c) ? c - '0' :
													(tolower((unsigned char) c) - 'a' + 10));
							}
							/* ASCII only: others fail in a non-UTF-8 database. */
							if (code == 0 || code >= 0x80)
								return false;
							p += 4;
						}
						else if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0')
							return false;
					}
					p++;
				}
				p++;
				if (expect_key)
				{
					SKIP_WS();
					if (*p++ != ':')
						return false;
					expect_key = false;
					continue;	/* the member's value */
				}
			}
			else if (strncmp(p, "true", 4) == 0)
				p += 4;
			else if (strncmp(p, "false", 5) == 0)
				p += 5;
			else if (strncmp(p, "null", 4) == 0)
				p += 4;
			else if (*p == '-' || isdigit((unsigned char) *p))
			{
				if (*p == '-')
					p++;
				if (!isdigit((unsigned char) *p))
					return false;
				if (*p == '0')
					p++;
				else
					while (isdigit((unsigned char) *p))
						p++;
				if (*p == '.')
				{
					p++;
					if (!isdigit((unsigned char) *p))
						return false;
					while (isdigit((unsigned char) *p))
						p++;
				}
				if (*p == 'e' || *p == 'E')
				{
					p++;
					if (*p == '+' || *p == '-')
						p++;
					if (!isdigit((unsigned char) *p))
						return false;
					/* At most 4 digits: within numeric's range. */
					for (int i = 0; isdigit((unsigned char) *p); i++, p++)
						if (i == 4)
							return false;
				}
			}
			else
				return false;
			expect_value = false;
		}
after_value:
		SKIP_WS();
		if (depth == 0)
			return *p == '\0';
		if (*p == ',')
		{
			p++;
			expect_value = true;
			if (stack[depth - 1] == '{')
			{
				SKIP_WS();
				if (*p != '"')
					return false;
				expect_key = true;
			}
			continue;
		}
		if ((stack[depth - 1] == '{' && *p == '}') ||
			(stack[depth - 1] == '[' && *p == ']'))
		{
			p++;
			depth--;
			goto after_value;
		}
		return false;
	}
#undef SKIP_WS
}

/* ---- the view ---- */

static int
compare_incident_ids(const void *a, const void *b)
{
	int64		ia = ((const Incident *) a)->id;
	int64		ib = ((const Incident *) b)->id;

	return (ia > ib) - (ia < ib);
}


PG_FUNCTION_INFO_V1(pg_contention_incidents);

static const PgcResultColumn incidents_columns[] = {
	{"id", INT8OID, PGC_SQL_V(1, 4)},
	{"problem", TEXTOID, PGC_SQL_V(1, 4)},
	{"peak_severity", TEXTOID, PGC_SQL_V(1, 4)},
	{"subject", TEXTOID, PGC_SQL_V(1, 4)},
	{"opened", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"peak", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"closed", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
	{"evidence", TEXTOID, PGC_SQL_V(1, 4)},
	{"resolution", TEXTOID, PGC_SQL_V(1, 4)},
	{"details", JSONBOID, PGC_SQL_V(1, 4)},
	{"severity", TEXTOID, PGC_SQL_V(1, 4)},
	{"advice", TEXTOID, PGC_SQL_V(1, 4)},
	{"last_seen", TIMESTAMPTZOID, PGC_SQL_V(1, 4)},
};
static const PgcResultShape incidents_shape = {
	"pg_contention_incidents", incidents_columns, lengthof(incidents_columns)
};

#define INCIDENT_COLS lengthof(incidents_columns)

/*
 * pg_contention_incidents(with_details, incident): every incident kept
 * (incident 0), else the one with that id, newest first.  Masked as the
 * live views mask, by the role each text came from: the subject, evidence
 * and advice (composed by the worker from every role's statements) are
 * shown to roles with pg_read_all_stats only, others get "<insufficient
 * privilege>"; in details, each frozen statement and holder is shown to
 * its own role too (details_text).  Being the role the finding names
 * grants nothing about other roles.  The problem, severity, times and the
 * resolution (pids, slot names, prepared transactions' gids: what the
 * live views show everyone) are shown to all.  details, the costly column
 * (its frozen document unpacked, checked and parsed: about 3 ms for a
 * full one), is NULL without with_details, for the readers that count or
 * list incidents.
 */
Datum
pg_contention_incidents(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	Incident   *copy;
	int			n = 0;
	bool		with_details = PG_NARGS() < 1 || PG_GETARG_BOOL(0);
	int64		only_id = PG_NARGS() > 1 ? PG_GETARG_INT64(1) : 0;
	bool		privileged;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &incidents_shape, &tupdesc);
	privileged = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	/*
	 * Slots are copied under the lock (bounded: max_incidents), without
	 * their frozen document when details are not asked for.
	 */
	copy = palloc_extended(mul_size(pgc_max_incidents, sizeof(Incident)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(incidents->lock, LW_SHARED);
	for (int i = 0; i < pgc_max_incidents; i++)
		if (slots[i].id != 0 && (only_id == 0 || slots[i].id == only_id))
			memcpy(&copy[n++], &slots[i],
				   with_details ? sizeof(Incident) : offsetof(Incident, frozen));
	LWLockRelease(incidents->lock);

	/* Newest first. */
	qsort(copy, n, sizeof(Incident), compare_incident_ids);
	for (int k = n - 1; k >= 0; k--)
	{
		Incident   *inc = &copy[k];
		Datum		values[INCIDENT_COLS] = {0};
		bool		nulls[INCIDENT_COLS] = {0};
		const char *sev;

		values[0] = Int64GetDatum(inc->id);
		values[1] = pgc_text_datum(inc->problem, inc->dbid);
		values[2] = CStringGetTextDatum(severity_name(inc->peak_severity));
		values[3] = pgc_masked_text_datum(privileged, inc->subject, inc->dbid);
		values[4] = TimestampTzGetDatum(inc->opened);
		values[5] = TimestampTzGetDatum(inc->peak);
		values[6] = TimestampTzGetDatum(inc->closed);
		nulls[6] = (inc->closed == 0);
		values[7] = pgc_masked_text_datum(privileged, inc->evidence, inc->dbid);
		if (inc->closed == 0 || inc->resolution[0] == '\0')
			nulls[8] = true;
		else
			values[8] = pgc_text_datum(inc->resolution, inc->dbid);
		if (!with_details)
			nulls[9] = true;
		else
		{
			/* In the reader's encoding, masked for the reader, then parsed. */
			values[9] = DirectFunctionCall1(jsonb_in,
											CStringGetDatum(details_text(inc, privileged)));
		}
		sev = inc->closed == 0 ? severity_name(inc->severity) : NULL;
		if (sev)
			values[10] = CStringGetTextDatum(sev);
		else
			nulls[10] = true;
		values[11] = pgc_masked_text_datum(privileged, inc->advice, inc->dbid);
		values[12] = TimestampTzGetDatum(inc->last_seen);
		nulls[12] = (inc->last_seen == 0);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

/* ---- the file ---- */

uint32
pgc_incidents_record_size(void)
{
	return (uint32) offsetof(Incident, problem);
}

/* The most bytes a record can take in the file: its texts at their bounds. */
uint64
pgc_incidents_record_max(void)
{
	return offsetof(Incident, frozen) + FROZEN_LEN + 11 * sizeof(uint32);
}

/* frozen: FROZEN_LEN bytes to put the frozen document's text in. */
static void
write_incident_texts(PgcWriter *writer, const Incident *inc, char *frozen)
{
	pgc_write_text(writer, inc->problem);
	pgc_write_text(writer, inc->key);
	pgc_write_text(writer, inc->subject);
	pgc_write_text(writer, inc->evidence);
	pgc_write_text(writer, inc->advice);
	pgc_write_text(writer, inc->open_subject);
	pgc_write_text(writer, inc->open_evidence);
	pgc_write_text(writer, inc->last_evidence);
	pgc_write_text(writer, inc->resolution);
	pgc_write_text(writer, inc->finding);
	unpack_frozen(&inc->frozen, frozen);
	pgc_write_text(writer, frozen);
}

/*
 * The section: the next id, the eviction counters and the opened
 * counters, then each incident (fixed part and texts).  One slot at a
 * time is copied under the lock in shared mode and written after
 * releasing it; a reset in between ends the section with what was copied.
 */
void
pgc_incidents_save(PgcWriter *writer, bool take_locks, uint64 *count)
{
	Incident   *one;
	char	   *frozen;
	int64		head[4];
	int64		opened[NUM_COUNTED][2];
	uint64		resets;

	*count = 0;
	one = palloc_extended(sizeof(Incident), MCXT_ALLOC_NO_OOM);
	frozen = palloc_extended(FROZEN_LEN, MCXT_ALLOC_NO_OOM);
	if (one == NULL || frozen == NULL)
	{
		pgc_writer_fail(writer, ENOMEM);
		if (one)
			pfree(one);
		if (frozen)
			pfree(frozen);
		return;
	}
	if (take_locks)
		LWLockAcquire(incidents->lock, LW_SHARED);
	head[0] = incidents->next_id;
	head[1] = incidents->evictions;
	head[2] = incidents->not_opened;
	head[3] = incidents->open_evictions;
	memcpy(opened, incidents->opened, sizeof(opened));
	resets = incidents->reset_generation;
	if (take_locks)
		LWLockRelease(incidents->lock);
	pgc_write_bytes(writer, head, sizeof(head));
	pgc_write_bytes(writer, opened, sizeof(opened));

	for (int i = 0; i < pgc_max_incidents && !pgc_writer_failed(writer); i++)
	{
		bool		have = false;

		if (take_locks)
			LWLockAcquire(incidents->lock, LW_SHARED);
		if (incidents->reset_generation != resets)
		{
			if (take_locks)
				LWLockRelease(incidents->lock);
			break;
		}
		if (slots[i].id != 0)
		{
			memcpy(one, &slots[i], sizeof(Incident));
			have = true;
		}
		if (take_locks)
			LWLockRelease(incidents->lock);
		if (!have)
			continue;
		pgc_write_bytes(writer, one, offsetof(Incident, problem));
		write_incident_texts(writer, one, frozen);
		(*count)++;
	}
	pfree(one);
	pfree(frozen);
}

/*
 * Fill the empty store from the section, keeping the newest
 * max_incidents.  Postmaster only, before any other process: no lock.
 * Nothing read is trusted: ids must be positive and unique (others are
 * skipped), times plausible (an incident without its opening time is
 * skipped), severities in range, texts terminated and cut to their
 * fields, the JSON texts valid JSON (else dropped); the next id stays
 * above every id kept.  Each fix is counted in reader->fixed.
 */
void
pgc_incidents_load(PgcReader *reader, uint64 count, uint64 *kept)
{
	int64		head[4];
	int64		opened[NUM_COUNTED][2];
	Incident   *all;
	char	   *frozen;
	int			n = 0;
	int64		max_id = 0;

	*kept = 0;
	if (!pgc_read_bytes(reader, head, sizeof(head)) ||
		!pgc_read_bytes(reader, opened, sizeof(opened)))
		return;
	for (int i = 0; i < (int) lengthof(head); i++)
		pgc_fix_counter(reader, &head[i]);
	for (int i = 0; i < (int) NUM_COUNTED; i++)
		for (int j = 0; j < 2; j++)
			pgc_fix_counter(reader, &opened[i][j]);

	/* The newest max_incidents by id: read all, keep the largest ids. */
	all = palloc_extended(mul_size(pgc_max_incidents + 1, sizeof(Incident)),
						  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	frozen = palloc_extended(FROZEN_LEN, MCXT_ALLOC_NO_OOM);
	if (all == NULL || frozen == NULL)
	{
		if (all)
			pfree(all);
		return;
	}
	for (uint64 r = 0; r < count && !reader->failed; r++)
	{
		Incident   *inc = &all[n];
		bool		dup = false;

		memset(inc, 0, sizeof(Incident));
		if (!pgc_read_bytes(reader, inc, offsetof(Incident, problem)) ||
			!pgc_read_text(reader, inc->problem, PROBLEM_LEN) ||
			!pgc_read_text(reader, inc->key, KEY_LEN) ||
			!pgc_read_text(reader, inc->subject, SUBJECT_LEN) ||
			!pgc_read_text(reader, inc->evidence, EVIDENCE_LEN) ||
			!pgc_read_text(reader, inc->advice, ADVICE_LEN) ||
			!pgc_read_text(reader, inc->open_subject, SUBJECT_LEN) ||
			!pgc_read_text(reader, inc->open_evidence, EVIDENCE_LEN) ||
			!pgc_read_text(reader, inc->last_evidence, EVIDENCE_LEN) ||
			!pgc_read_text(reader, inc->resolution, RESOLUTION_LEN) ||
			!pgc_read_text(reader, inc->finding, FINDING_LEN) ||
			!pgc_read_text(reader, frozen, FROZEN_LEN))
			break;
		if (inc->id <= 0 || inc->id > PGC_COUNTER_MAX ||
			!pgc_fix_time(reader, &inc->opened) || inc->opened == 0 ||
			inc->problem[0] == '\0')
		{
			reader->fixed++;
			continue;
		}
		for (int i = 0; i < n; i++)
			dup |= (all[i].id == inc->id);
		if (dup)
		{
			reader->fixed++;
			continue;
		}
		pgc_fix_time(reader, &inc->peak);
		pgc_fix_time(reader, &inc->closed);
		pgc_fix_time(reader, &inc->last_seen);
		if (inc->peak == 0)
			inc->peak = inc->opened;
		pgc_fix_int32(reader, &inc->open_severity, SEV_WARNING, SEV_CRITICAL);
		pgc_fix_int32(reader, &inc->peak_severity, SEV_WARNING, SEV_CRITICAL);
		pgc_fix_int32(reader, &inc->severity, SEV_NONE, SEV_CRITICAL);
		pgc_fix_int32(reader, &inc->members, 0, INT_MAX);
		inc->padding = 0;
		inc->padding2 = 0;
		if (inc->finding[0] != '\0' && !json_valid(inc->finding))
		{
			inc->finding[0] = '\0';
			reader->fixed++;
		}
		if (frozen[0] != '\0' && (frozen[0] != '{' || !json_valid(frozen)))
		{
			frozen[0] = '\0';
			reader->fixed++;
		}
		/*
		 * One too large for a slot even compressed (the build before kept
		 * 48 kB as they came): none, the view says "truncated", and the
		 * load counts it among what it changed.
		 */
		if (!pack_frozen(frozen, &inc->frozen))
			reader->fixed++;
		max_id = Max(max_id, inc->id);
		n++;
		if (n > pgc_max_incidents)
		{
			/* Drop the smallest id: the last slot is free again. */
			qsort(all, n, sizeof(Incident), compare_incident_ids);
			memmove(&all[0], &all[1], (n - 1) * sizeof(Incident));
			n--;
		}
	}
	for (int i = 0; i < n; i++)
		memcpy(&slots[i], &all[i], sizeof(Incident));
	*kept = n;
	incidents->next_id = Max(head[0], max_id + 1);
	incidents->evictions = head[1];
	incidents->not_opened = head[2];
	incidents->open_evictions = head[3];
	memcpy(incidents->opened, opened, sizeof(opened));
	pfree(all);
	pfree(frozen);
}

/* ---- the worker ---- */

/* A finding of one evaluation, in the worker's evaluation context. */
typedef struct Found
{
	char	   *problem;
	int			severity;
	char	   *subject;
	char	   *evidence;
	char	   *advice;
	char	   *details;
	char	   *key;
	Oid			culprit;
	TimestampTz since;			/* 0: unknown */
	bool		cause_gone;		/* what it describes is over (key.sql) */
	char	   *touched;		/* what it is about within its key, or NULL */
	int			members;		/* findings of its key it stands for */
	/* What the evaluation decided. */
	int64		match_id;		/* the open incident it belongs to, or 0 */
	bool		open;			/* opens a new incident */
	bool		escalate;		/* raises match_id's peak */
	bool		refused;		/* would open, but no slot is its to take */
	int64		evict_id;		/* opens in this open incident's slot */
	FrozenText *frozen;
} Found;

/*
 * The subjects refused at the last evaluation ("problem key"), this
 * worker's own: a subject is counted and LOGged when it is first refused,
 * not at every evaluation while it stays so.
 */
static char **refused_keys = NULL;
static int	n_refused = 0;

static bool
refused_before(const Found *f)
{
	for (int i = 0; i < n_refused; i++)
	{
		const char *sep = strchr(refused_keys[i], ' ');

		if (sep && strncmp(refused_keys[i], f->problem, sep - refused_keys[i]) == 0 &&
			f->problem[sep - refused_keys[i]] == '\0' && strcmp(sep + 1, f->key) == 0)
			return true;
	}
	return false;
}

/* Remember this evaluation's refused subjects for the next one. */
static void
remember_refused(const Found *found, int nfound)
{
	for (int i = 0; i < n_refused; i++)
		pfree(refused_keys[i]);
	if (refused_keys)
		pfree(refused_keys);
	refused_keys = NULL;
	n_refused = 0;
	for (int i = 0; i < nfound; i++)
	{
		if (!found[i].refused)
			continue;
		if (refused_keys == NULL)
			refused_keys = MemoryContextAlloc(TopMemoryContext, nfound * sizeof(char *));
		refused_keys[n_refused++] = MemoryContextStrdup(TopMemoryContext,
														psprintf("%s %s", found[i].problem, found[i].key));
	}
}

/* A closed incident, as the evaluation copied it. */
typedef struct ClosedCopy
{
	char		problem[PROBLEM_LEN];
	char		key[KEY_LEN];
	TimestampTz closed;
} ClosedCopy;

/*
 * A finding whose cause is gone (its overflowing sessions ended) but that
 * its window still shows: was it already an incident, closed while the
 * window kept showing it (closed after the finding's start)?  Then it
 * opens none again.  With no start known, any closed one of its key.
 */
static bool
covered_by_closed(const Found *f, const ClosedCopy *closed, int nclosed)
{
	for (int i = 0; i < nclosed; i++)
		if (strcmp(closed[i].problem, f->problem) == 0 &&
			strncmp(closed[i].key, f->key, KEY_LEN - 1) == 0 &&
			(f->since == 0 || closed[i].closed >= f->since))
			return true;
	return false;
}

/* An open incident, as the evaluation copied it. */
typedef struct OpenCopy
{
	int64		id;
	char		problem[PROBLEM_LEN];
	char		key[KEY_LEN];
	int			peak_severity;
	Oid			culprit;
	TimestampTz opened;
	TimestampTz last_seen;
	bool		seen;			/* at warning or above this time */
	bool		close;
	bool		evicted;		/* gives its slot to another role's */
	char	   *finding;		/* for the resolution query */
	char	   *resolution;
} OpenCopy;

static volatile sig_atomic_t evaluating = false;
static MemoryContext eval_context = NULL;
static char *ext_schema = NULL; /* quoted, in TopMemoryContext */
static SPIPlanPtr findings_plan = NULL; /* read_findings' query, kept */
static bool told_missing = false;
static char last_failure[256];	/* the last evaluation's error, LOGged once */

/*
 * SIGTERM: leave at the next loop; an evaluation under way is cancelled
 * (its ERROR is caught), so that the worker exits promptly.
 */
static void
incidents_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	ShutdownRequestPending = true;
	if (evaluating)
	{
		QueryCancelPending = true;
		InterruptPending = true;
	}
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * SIGINT (pg_cancel_backend(), and the statement timeout the worker arms,
 * whose handler signals the process itself): cancel an evaluation under
 * way; between evaluations there is nothing to cancel.
 */
static void
incidents_sigint(SIGNAL_ARGS)
{
	if (evaluating)
		StatementCancelHandler(postgres_signal_arg);
}

static void
incidents_exit(int code, Datum arg)
{
	LWLockAcquire(incidents->lock, LW_EXCLUSIVE);
	if (incidents->worker_pid == MyProcPid)
		incidents->worker_pid = 0;
	LWLockRelease(incidents->lock);
}

static char *
spi_text(HeapTuple tuple, TupleDesc desc, int col)
{
	char	   *s = SPI_getvalue(tuple, desc, col);

	return s ? s : pstrdup("");
}

/*
 * The extension's schema in this database, with the functions this
 * library calls (1.4), quoted; NULL when not installed (or older).
 */
static char *
find_schema(void)
{
	int			rc;

	rc = SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension AS e"
					 " JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace"
					 " WHERE e.extname = 'pg_contention'"
					 " AND pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname)"
					 " || '.pg_contention_incident_evidence(text,jsonb,integer)') IS NOT NULL",
					 true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed == 0)
		return NULL;
	return MemoryContextStrdup(TopMemoryContext,
							   spi_text(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

/* Forget the extension's schema and the plan that names it. */
static void
forget_schema(void)
{
	if (findings_plan)
		SPI_freeplan(findings_plan);
	findings_plan = NULL;
	if (ext_schema)
		pfree(ext_schema);
	ext_schema = NULL;
}

/*
 * Read the findings: every one into *rows (what pg_contention_findings
 * gives, for findings_latest.c), and those an incident can follow (a key,
 * and not sampler_stale: a sampler that stopped is said by the findings
 * and the metrics, it is no incident) with their keys into *found.  Both
 * in eval_context; returns the count of *found.
 */
static int
read_findings(Found **found, PgcFindingRow **rows, int *nrows)
{
	int			rc;
	int			n;
	int			nfound = 0;

	/*
	 * Planned once and kept: parsing and planning it at every evaluation
	 * was a large part of the evaluation's cost.  (The key function is
	 * not inlined into it: its search_path is pinned; its body is
	 * planned once per evaluation.)  The plan cache plans it again when a function it
	 * calls changes (ALTER EXTENSION UPDATE); a dropped or moved extension
	 * makes it fail, and a failed evaluation forgets it (forget_schema).
	 */
	if (findings_plan == NULL)
	{
		char	   *sql;
		SPIPlanPtr	plan;

		sql = psprintf("SELECT f.problem, f.severity, f.subject, f.evidence, f.advice, k.finding::text,"
					   " k.key, k.culprit, f.since, k.cause_gone, f.details::text, k.touched"
					   " FROM %s.pg_contention_findings() AS f"
					   " CROSS JOIN LATERAL %s.pg_contention_incident_key(f.problem, f.details) AS k",
					   ext_schema, ext_schema);
		plan = SPI_prepare(sql, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		findings_plan = plan;
	}
	rc = SPI_execute_plan(findings_plan, NULL, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %d", rc);
	n = (int) SPI_processed;
	*found = MemoryContextAllocZero(eval_context, Max(n, 1) * sizeof(Found));
	*rows = MemoryContextAllocZero(eval_context, Max(n, 1) * sizeof(PgcFindingRow));
	*nrows = n;
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		PgcFindingRow *r = &(*rows)[i];
		Found	   *f;
		MemoryContext old = MemoryContextSwitchTo(eval_context);
		bool		isnull;
		Datum		culprit;
		Datum		value;
		char	   *key;

		r->problem = SPI_getvalue(tup, desc, 1);
		r->severity = SPI_getvalue(tup, desc, 2);
		r->subject = SPI_getvalue(tup, desc, 3);
		r->evidence = SPI_getvalue(tup, desc, 4);
		r->advice = SPI_getvalue(tup, desc, 5);
		r->details = SPI_getvalue(tup, desc, 11);
		value = SPI_getbinval(tup, desc, 9, &isnull);
		r->since = isnull ? 0 : DatumGetTimestampTz(value);

		key = SPI_getvalue(tup, desc, 7);
		if (key == NULL || r->problem == NULL ||
			strcmp(r->problem, "sampler_stale") == 0)
		{
			MemoryContextSwitchTo(old);
			continue;
		}
		f = &(*found)[nfound++];
		f->problem = spi_text(tup, desc, 1);
		f->severity = severity_from_name(r->severity);
		f->subject = spi_text(tup, desc, 3);
		f->evidence = spi_text(tup, desc, 4);
		f->advice = spi_text(tup, desc, 5);
		f->details = spi_text(tup, desc, 6);
		f->key = key;
		culprit = SPI_getbinval(tup, desc, 8, &isnull);
		f->culprit = isnull ? InvalidOid : DatumGetObjectId(culprit);
		f->since = r->since;
		value = SPI_getbinval(tup, desc, 10, &isnull);
		f->cause_gone = !isnull && DatumGetBool(value);
		f->touched = SPI_getvalue(tup, desc, 12);
		f->members = 1;
		MemoryContextSwitchTo(old);
	}
	return nfound;
}

/*
 * One text-returning query with text arguments (NULL: SQL NULL), for one
 * incident, in a subtransaction of its own: an ERROR in it (a function the
 * query calls failing on that incident's details, a lock_timeout) is one
 * LOG line and a NULL result, and the evaluation goes on with the other
 * incidents.  A cancel (statement_timeout, pg_cancel_backend()) ends the
 * whole evaluation, as it asks.
 */
static char *
query_text(const char *what, int64 id, const char *sql,
		   int nargs, Oid *types, Datum *args, const char *argnulls)
{
	MemoryContext caller_context = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;
	char	   *volatile result = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller_context);
	PG_TRY();
	{
		int			rc = SPI_execute_with_args(sql, nargs, types, args, argnulls, true, 1);
		char	   *s;

		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed: %d", rc);
		if (SPI_processed > 0)
		{
			s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			if (s)
				result = MemoryContextStrdup(eval_context, s);
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(eval_context);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller_context);
		CurrentResourceOwner = caller_owner;
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		if (id > 0)
			ereport(LOG,
					(errmsg("pg_contention incidents: the %s of incident " INT64_FORMAT " failed: %s",
							what, id, log_text(edata->message))));
		else
			ereport(LOG,
					(errmsg("pg_contention incidents: the %s of a new incident failed: %s",
							what, log_text(edata->message))));
		FreeErrorData(edata);
		result = NULL;
	}
	PG_END_TRY();
	return result;
}

/*
 * The frozen statements, holders and history of a finding at its peak, in
 * a slot's form.  At most FROZEN_LEN bytes of text, which a slot keeps
 * compressed; what does not fit even so (long statements and holders'
 * queries, which compress less than the history) is frozen again with a
 * smaller bound, and at last with one a slot keeps as it is: the
 * function drops the oldest history first, then all but the first
 * statement and holder, and says "truncated".
 */
static FrozenText *
freeze(const Found *f)
{
	static const int32 bounds[] = {FROZEN_LEN - 1, FROZEN_LEN / 2, FROZEN_STORED_LEN};
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		args[3];
	char	   *sql;
	FrozenText *frozen = MemoryContextAlloc(eval_context, sizeof(FrozenText));

	sql = psprintf("SELECT %s.pg_contention_incident_evidence($1, $2::jsonb, $3)::text", ext_schema);
	args[0] = CStringGetTextDatum(f->problem);
	args[1] = CStringGetTextDatum(f->details);
	for (int i = 0; i < lengthof(bounds); i++)
	{
		char	   *s;

		args[2] = Int32GetDatum(bounds[i]);
		s = query_text("evidence", f->match_id, sql, 3, types, args, NULL);
		if (s == NULL)			/* it failed, and said why in the log */
		{
			(void) pack_frozen("{\"statements\": [], \"holders\": [], \"history\": [], \"unavailable\": true}",
							   frozen);
			return frozen;
		}
		/* The function keeps within the bound; whatever it did not: dropped. */
		if ((int) strlen(s) > bounds[i] || s[0] != '{')
			break;
		if (pack_frozen(s, frozen))
			return frozen;
	}
	(void) pack_frozen("{\"statements\": [], \"holders\": [], \"history\": [], \"truncated\": true}",
					   frozen);
	return frozen;
}

/* Findings ordered by problem and key, then as the findings gave them. */
static int
compare_found(const void *a, const void *b)
{
	const Found *fa = *(Found *const *) a;
	const Found *fb = *(Found *const *) b;
	int			c = strcmp(fa->problem, fb->problem);

	if (c == 0)
		c = strcmp(fa->key, fb->key);
	return c != 0 ? c : (fa > fb) - (fa < fb);
}

/* How many of a key's findings an incident names, beyond their count. */
#define TOUCHED_LISTED	10

/*
 * One finding per problem and key: an incident is one problem with one
 * cause, so the findings that share a key (one holder's dead entries in
 * many indexes, one session's temporary indexes) become the most severe of
 * them (the first of the findings' order among equals), which names how
 * many there are, in its subject ("and 104 more indexes") and in its
 * details ("touched": the first TOUCHED_LISTED, "touched_count"; a single
 * index finding lists its index too, for continues_incident), since
 * the earliest of them, its cause gone when every one's is.  The work of
 * an evaluation then grows with the causes, not with the indexes.  Returns
 * the count left in found (in the findings' order).
 */
static int
group_findings(Found *found, int nfound)
{
	Found	  **order;
	bool	   *drop;
	int			kept = 0;

	if (nfound == 0)
		return 0;
	order = palloc(nfound * sizeof(Found *));
	drop = palloc0(nfound * sizeof(bool));
	for (int i = 0; i < nfound; i++)
		order[i] = &found[i];
	qsort(order, nfound, sizeof(Found *), compare_found);
	for (int i = 0, j; i < nfound; i = j)
	{
		Found	   *best = order[i];
		StringInfoData list;
		int			listed = 0;
		bool		all_gone = true;

		for (j = i + 1; j < nfound && strcmp(order[j]->problem, best->problem) == 0 &&
			 strcmp(order[j]->key, best->key) == 0; j++)
			;
		if (j - i == 1 && best->touched == NULL)
			continue;
		initStringInfo(&list);
		for (int k = i; k < j; k++)
		{
			Found	   *f = order[k];

			if (f->severity > best->severity)
				best = f;
			all_gone &= f->cause_gone;
			if (f->touched && listed < TOUCHED_LISTED)
			{
				appendStringInfoString(&list, listed++ ? ", " : "[");
				escape_json(&list, f->touched);
			}
		}
		for (int k = i; k < j; k++)
		{
			Found	   *f = order[k];

			if (f != best)
				drop[f - found] = true;
			if (f->since != 0 && (best->since == 0 || f->since < best->since))
				best->since = f->since;
		}
		best->members = j - i;
		best->cause_gone = all_gone;
		if (j - i > 1)
			best->subject = psprintf("%s (and %d more %s)", best->subject, j - i - 1,
									 best->touched == NULL ? (j - i == 2 ? "finding" : "findings") :
									 (j - i == 2 ? "index" : "indexes"));
		/* The list in the details, when it fits what a slot keeps whole. */
		if (listed > 0)
			appendStringInfoChar(&list, ']');
		if (best->details[0] == '{' && best->details[1] != '}' &&
			strlen(best->details) + list.len + 64 < FINDING_LEN)
		{
			int			len = strlen(best->details);

			best->details = psprintf("%.*s, \"touched_count\": %d%s%s}",
									 len - 1, best->details, j - i,
									 listed > 0 ? ", \"touched\": " : "", listed > 0 ? list.data : "");
		}
	}
	for (int i = 0; i < nfound; i++)
		if (!drop[i])
		{
			if (kept != i)
				found[kept] = found[i];
			kept++;
		}
	return kept;
}

/*
 * An open incident that a finding with no incident of its own key goes on:
 * one of the same problem that lists what the finding is about (its
 * index) among what it touched.  The key of an index's dead entries
 * follows their cause: "held by" the holder while one holds them, the
 * index (or its owner's temporary indexes) once it ended and until vacuum
 * removes them; the incident is the same from the hold to the fix, as its
 * advice (end the holder, then VACUUM) is one.  NULL when none.
 */
static OpenCopy *
continues_incident(const Found *f, OpenCopy *open, int nopen)
{
	char	   *needle;

	if (f->touched == NULL)
		return NULL;
	needle = psprintf("\"%s\"", f->touched);
	for (int j = 0; j < nopen; j++)
		if (strcmp(open[j].problem, f->problem) == 0 && open[j].finding != NULL &&
			strstr(open[j].finding, needle) != NULL)
			return &open[j];
	return NULL;
}

/* At most this many incidents are frozen (opened or escalated) at one evaluation. */
#define FREEZES_PER_EVALUATION	8

/* Open incidents of a role (InvalidOid: of none) once the plan is applied. */
static int
role_holds(Oid role, const OpenCopy *open, int nopen, const Found *found, int nfound)
{
	int			n = 0;

	for (int j = 0; j < nopen; j++)
		n += (!open[j].evicted && open[j].culprit == role);
	for (int i = 0; i < nfound; i++)
		n += (found[i].open && found[i].culprit == role);
	return n;
}

/*
 * Room for a new incident of role "role" in a store whose every slot holds
 * an open incident: the slot of the role that holds the most, when it
 * holds more than one over what "role" would hold with it, so that one
 * role (or one kind of incident without a role) cannot keep the store full
 * against every other: its least severe, newest open incident gives its
 * slot.  NULL when no role holds that much more.  Never two roles back and
 * forth: the one that gave a slot holds no more than the other after it.
 */
static OpenCopy *
take_room(Oid role, OpenCopy *open, int nopen, const Found *found, int nfound)
{
	int			mine = role_holds(role, open, nopen, found, nfound);
	OpenCopy   *victim = NULL;
	int			most = 0;

	for (int j = 0; j < nopen; j++)
	{
		int			n;

		if (open[j].evicted || open[j].culprit == role)
			continue;
		n = role_holds(open[j].culprit, open, nopen, found, nfound);
		if (n > most || (n == most && victim != NULL && open[j].culprit == victim->culprit &&
						 (open[j].peak_severity < victim->peak_severity ||
						  (open[j].peak_severity == victim->peak_severity &&
						   open[j].id > victim->id))))
		{
			most = n;
			victim = &open[j];
		}
	}
	if (victim == NULL || most <= mine + 1)
		return NULL;
	victim->evicted = true;
	return victim;
}

/*
 * Decide, before anything is frozen, what this evaluation opens and
 * escalates: at most FREEZES_PER_EVALUATION of them, most severe first
 * (the findings' order); the rest wait for the next evaluation (an
 * escalation stays due; an opening is tried again).  An opening takes a
 * free slot, else the oldest closed one's, else another role's (take_room),
 * else it is refused: nothing is frozen for it.  room: the free and closed
 * slots.
 */
static void
plan_openings(Found *found, int nfound, OpenCopy *open, int nopen, int room)
{
	int			budget = FREEZES_PER_EVALUATION;

	for (int i = 0; i < nfound; i++)
	{
		Found	   *f = &found[i];
		OpenCopy   *victim;

		if (f->escalate)
		{
			if (budget > 0)
				budget--;
			else
				f->escalate = false;
			continue;
		}
		if (!f->open)
			continue;
		if (budget == 0)
		{
			f->open = false;
			continue;
		}
		f->open = false;		/* not counted by take_room's role_holds */
		if (room > 0)
			room--;
		else if ((victim = take_room(f->culprit, open, nopen, found, nfound)) != NULL)
			f->evict_id = victim->id;
		else
		{
			f->refused = true;
			continue;
		}
		f->open = true;
		budget--;
	}
}

/* What ended it, as far as the server can tell now; NULL if it cannot. */
static char *
resolve(const OpenCopy *o)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};
	char	   *sql;

	sql = psprintf("SELECT %s.pg_contention_incident_resolution($1, $2::jsonb, $3)", ext_schema);
	args[0] = CStringGetTextDatum(o->problem);
	args[1] = CStringGetTextDatum(o->finding[0] ? o->finding : "{}");
	args[2] = TimestampTzGetDatum(o->opened);
	return query_text("resolution", o->id, sql, 3, types, args, nulls);
}

/*
 * A free slot, or the oldest closed incident's (evicted, counted); NULL
 * when every slot holds an open incident.  An open incident is never
 * evicted: its finding is still there, so it would open again at the next
 * evaluation and evict another, a new "opened" line every interval.
 */
static Incident *
take_slot(void)
{
	Incident   *oldest_closed = NULL;

	for (int i = 0; i < pgc_max_incidents; i++)
	{
		Incident   *s = &slots[i];

		if (s->id == 0)
			return s;
		if (s->closed != 0 && (oldest_closed == NULL || s->id < oldest_closed->id))
			oldest_closed = s;
	}
	if (oldest_closed)
		incidents->evictions++;
	return oldest_closed;
}

static Incident *
find_slot(int64 id)
{
	for (int i = 0; i < pgc_max_incidents; i++)
		if (slots[i].id == id)
			return &slots[i];
	return NULL;
}

typedef struct LogLine
{
	int64		id;
	int			kind;			/* 0 opened, 1 escalated, 2 closed, 3 refused,
								 * 4 evicted while open */
	int			severity;
	const char *problem;
	const char *text;			/* subject, or the resolution */
	TimestampTz opened;
	TimestampTz at;
	char		closed_problem[PROBLEM_LEN];	/* a closed or evicted one's, copied */
	Oid			role;			/* an evicted one's, and how many it held */
	int			role_holds;
	int			count;			/* refused: how many (one line for them) */
	const char *role_name;		/* role_text(role), named in the transaction */
} LogLine;

/* A culprit role for a LOG line: "role NAME", or what stands for none. */
static const char *
role_text(Oid role)
{
	char	   *name;

	if (!OidIsValid(role))
		return "no role (the cluster, an index)";
	name = GetUserNameFromId(role, true);
	return name ? psprintf("role %s", log_text(name)) : psprintf("role %u (dropped)", role);
}

/* "4 min", "1 h 5 min", "12 s": how long an incident lasted. */
static char *
duration_text(TimestampTz from, TimestampTz to)
{
	int64		s = Max((to - from) / USECS_PER_SEC, 0);

	if (s < 60)
		return psprintf(INT64_FORMAT " s", s);
	if (s < 3600)
		return psprintf(INT64_FORMAT " min", s / 60);
	return psprintf(INT64_FORMAT " h " INT64_FORMAT " min", s / 3600, (s % 3600) / 60);
}

/*
 * One evaluation: read the findings, decide what opens, escalates and
 * closes, freeze and resolve in the same transaction, then apply it all
 * to the store under its lock at once.  An ERROR in one incident's
 * evidence or resolution costs that incident its part (query_text); any
 * other ERROR aborts the whole evaluation (the caller LOGs it): the store
 * is unchanged.
 */
static void
evaluate(void)
{
	Found	   *found;
	int			nfound;
	PgcFindingRow *rows = NULL;
	int			nrows = 0;
	OpenCopy   *open;
	int			nopen = 0;
	ClosedCopy *closed;
	int			nclosed = 0;
	uint64		generation;
	TimestampTz now;
	LogLine    *lines = NULL;	/* allocated before the apply: no palloc */
	int			nlines = 0;		/* under the lock */
	LogLine    *refused_line = NULL;
	bool		applied;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_contention incidents: evaluating the findings");
	/* Bounded: a lock it waits for or a slow evaluation is an ERROR. */
	SPI_execute("SET LOCAL lock_timeout = '1s'", false, 0);
	enable_timeout_after(STATEMENT_TIMEOUT, 30000);

	if (ext_schema == NULL)
	{
		ext_schema = find_schema();
		if (ext_schema == NULL)
		{
			if (!told_missing)
				ereport(LOG,
						(errmsg("pg_contention incidents: the extension pg_contention %s is not installed in database \"%s\"; incidents wait for it",
								PGC_VERSION, get_database_name(MyDatabaseId)),
						 errhint("Run CREATE EXTENSION pg_contention (or ALTER EXTENSION pg_contention UPDATE) in that database, or set pg_contention.incident_database.")));
			told_missing = true;
		}
		else if (told_missing)
		{
			ereport(LOG,
					(errmsg("pg_contention incidents: found the extension in schema %s", ext_schema)));
			told_missing = false;
		}
	}

	if (ext_schema != NULL)
	{
		now = GetCurrentTimestamp();
		nfound = read_findings(&found, &rows, &nrows);
		nfound = group_findings(found, nfound);

		/* The open incidents, copied. */
		open = MemoryContextAllocZero(eval_context, Max(pgc_max_incidents, 1) * sizeof(OpenCopy));
		closed = MemoryContextAllocZero(eval_context, Max(pgc_max_incidents, 1) * sizeof(ClosedCopy));
		LWLockAcquire(incidents->lock, LW_SHARED);
		generation = incidents->reset_generation;
		for (int i = 0; i < pgc_max_incidents; i++)
		{
			Incident   *s = &slots[i];
			OpenCopy   *o;

			if (s->id == 0)
				continue;
			if (s->closed != 0)
			{
				memcpy(closed[nclosed].problem, s->problem, PROBLEM_LEN);
				memcpy(closed[nclosed].key, s->key, KEY_LEN);
				closed[nclosed++].closed = s->closed;
				continue;
			}
			o = &open[nopen++];
			o->id = s->id;
			memcpy(o->problem, s->problem, PROBLEM_LEN);
			memcpy(o->key, s->key, KEY_LEN);
			o->peak_severity = s->peak_severity;
			o->culprit = s->culprit;
			o->opened = s->opened;
			o->last_seen = s->last_seen;
			o->finding = MemoryContextStrdup(eval_context, s->finding);
		}
		LWLockRelease(incidents->lock);

		/* Match. */
		for (int i = 0; i < nfound; i++)
		{
			Found	   *f = &found[i];

			for (int j = 0; j <= nopen; j++)
			{
				OpenCopy   *o = j < nopen ? &open[j] : NULL;

				/*
				 * An open incident of its problem and key; after them all,
				 * one it goes on (its key moved with its cause), if any.
				 */
				if (o != NULL && (strcmp(o->problem, f->problem) != 0 ||
								  strncmp(o->key, f->key, KEY_LEN - 1) != 0))
					continue;
				if (o == NULL && (o = continues_incident(f, open, nopen)) == NULL)
					break;
				f->match_id = o->id;
				/* Its cause gone, it counts as gone: it closes. */
				if (f->severity >= SEV_WARNING && !f->cause_gone)
				{
					o->seen = true;
					f->escalate = f->severity > o->peak_severity;
					o->peak_severity = Max(o->peak_severity, f->severity);
				}
				break;
			}
			/* (One finding per key: group_findings.) */
			if (f->match_id == 0 && f->severity >= SEV_WARNING)
				f->open = !(f->cause_gone && covered_by_closed(f, closed, nclosed));
		}

		/*
		 * What opens and escalates now, before anything is frozen: bounded
		 * work whatever the number of findings, nothing frozen for a
		 * finding that gets no slot.  The worker is the store's only
		 * writer: the slots counted here are the same at the apply below
		 * (a reset in between drops the whole evaluation).
		 */
		plan_openings(found, nfound, open, nopen, pgc_max_incidents - nopen);
		for (int i = 0; i < nfound; i++)
			if (found[i].open || found[i].escalate)
				found[i].frozen = freeze(&found[i]);
		for (int j = 0; j < nopen; j++)
		{
			OpenCopy   *o = &open[j];

			if (!o->seen && now - o->last_seen >= (TimestampTz) pgc_incident_close_after * USECS_PER_SEC)
			{
				o->close = true;
				o->resolution = resolve(o);
			}
		}

		/*
		 * Apply, at once, with nothing that can ERROR under the lock: the
		 * LOG lines (at most two per finding, an eviction and an opening,
		 * and one per open incident) are allocated before, where they
		 * outlive SPI's memory.
		 */
		lines = MemoryContextAllocZero(eval_context, (2 * nfound + nopen + 1) * sizeof(LogLine));
		MemoryContextSwitchTo(eval_context);
		LWLockAcquire(incidents->lock, LW_EXCLUSIVE);
		if (incidents->reset_generation == generation)
		{
			for (int i = 0; i < nfound; i++)
			{
				Found	   *f = &found[i];
				Incident   *s = NULL;
				LogLine    *line = NULL;

				if (f->open && f->evict_id != 0 && (s = find_slot(f->evict_id)) != NULL)
				{
					/* An open incident gives its slot to another role's. */
					incidents->open_evictions++;
					line = &lines[nlines++];
					line->kind = 4;
					line->id = s->id;
					line->severity = s->peak_severity;
					memcpy(line->closed_problem, s->problem, PROBLEM_LEN);
					line->problem = line->closed_problem;
					line->role = s->culprit;
					line->role_holds = 0;
					for (int k = 0; k < pgc_max_incidents; k++)
						line->role_holds += (slots[k].id != 0 && slots[k].closed == 0 &&
											 slots[k].culprit == s->culprit);
					line = NULL;
				}
				else if (f->open)
					s = take_slot();
				if (f->refused || (f->open && s == NULL))
				{
					/*
					 * Counted once while it stays refused; one LOG line
					 * for all refused at an evaluation, naming the first.
					 */
					f->refused = true;
					if (!refused_before(f))
					{
						incidents->not_opened++;
						if (refused_line != NULL)
						{
							refused_line->count++;
							continue;
						}
						line = refused_line = &lines[nlines++];
						line->kind = 3;
						line->count = 1;
						line->problem = f->problem;
						line->severity = f->severity;
						line->text = f->subject;
						line->role = f->culprit;
						line->role_holds = 0;
						for (int k = 0; k < pgc_max_incidents; k++)
							line->role_holds += (slots[k].id != 0 && slots[k].closed == 0 &&
												 slots[k].culprit == f->culprit);
					}
					continue;
				}
				if (f->open)
				{
					memset(s, 0, sizeof(Incident));
					s->id = incidents->next_id++;
					s->dbid = MyDatabaseId;
					s->culprit = f->culprit;
					s->opened = now;
					s->open_severity = f->severity;
					put_text(s->problem, PROBLEM_LEN, f->problem);
					put_text(s->key, KEY_LEN, f->key);
					put_text(s->open_subject, SUBJECT_LEN, f->subject);
					put_text(s->open_evidence, EVIDENCE_LEN, f->evidence);
					incidents->opened[counted_index(f->problem)][f->severity == SEV_CRITICAL]++;
				}
				else if (f->match_id != 0)
					s = find_slot(f->match_id);
				if (s == NULL)
					continue;
				s->severity = f->severity;
				put_text(s->last_evidence, EVIDENCE_LEN, f->evidence);
				if (f->severity >= SEV_WARNING && (!f->cause_gone || f->open))
					s->last_seen = now;
				if (f->open || f->escalate)
				{
					s->peak = now;
					s->peak_severity = f->severity;
					s->members = f->members;
					if (OidIsValid(f->culprit))
						s->culprit = f->culprit;
					put_text(s->subject, SUBJECT_LEN, f->subject);
					put_text(s->evidence, EVIDENCE_LEN, f->evidence);
					put_text(s->advice, ADVICE_LEN, f->advice);
					/* Only whole documents: a cut one would not parse. */
					if (strlen(f->details) < FINDING_LEN)
						put_text(s->finding, FINDING_LEN, f->details);
					else
						put_text(s->finding, FINDING_LEN, "{\"truncated\": true}");
					memcpy(&s->frozen, f->frozen,
						   offsetof(FrozenText, data) + f->frozen->stored);
					line = &lines[nlines++];
					line->kind = f->open ? 0 : 1;
				}
				if (line)
				{
					line->problem = f->problem;
					line->id = s->id;
					line->severity = f->severity;
					line->text = f->subject;
				}
			}
			for (int j = 0; j < nopen; j++)
			{
				Incident   *s;
				LogLine    *line;

				if (!open[j].close || (s = find_slot(open[j].id)) == NULL)
					continue;
				s->closed = now;
				s->severity = SEV_NONE;
				put_text(s->resolution, RESOLUTION_LEN, open[j].resolution);
				line = &lines[nlines++];
				line->id = s->id;
				line->kind = 2;
				line->severity = s->peak_severity;
				memcpy(line->closed_problem, s->problem, PROBLEM_LEN);
				line->problem = line->closed_problem;
				line->text = open[j].resolution;
				line->opened = s->opened;
				line->at = now;
			}
		}
		applied = (incidents->reset_generation == generation);
		LWLockRelease(incidents->lock);
		/* The roles' names, while there is a transaction to read them in. */
		for (int i = 0; i < nlines; i++)
			if (lines[i].kind >= 3)
				lines[i].role_name = role_text(lines[i].role);
		if (applied)
		{
			remember_refused(found, nfound);
			/* What check reads instead of evaluating again. */
			pgc_findings_latest_publish(now, nrows, rows);
		}
	}
	else
		pgc_findings_latest_forget();

	/* Opened, escalated or closed: into the stores' file soon (crash). */
	if (nlines > 0)
		pgc_sampler_request_save();

	disable_timeout(STATEMENT_TIMEOUT, false);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(eval_context);
	pgstat_report_activity(STATE_IDLE, NULL);

	for (int i = 0; i < nlines; i++)
	{
		LogLine    *line = &lines[i];

		/* Not an incident's opening or closing: said whatever incident_log is. */
		if (line->kind == 3)
			ereport(LOG,
					(line->count == 1 ?
					 errmsg("pg_contention: incident not opened: all %d incident slots hold open incidents, %d of them of %s: %s %s: %s",
							pgc_max_incidents, line->role_holds, line->role_name,
							severity_name(line->severity), log_text(line->problem), log_text(line->text)) :
					 errmsg("pg_contention: %d incidents not opened: all %d incident slots hold open incidents; the first, of %s, which holds %d of them: %s %s: %s",
							line->count, pgc_max_incidents, line->role_name, line->role_holds,
							severity_name(line->severity), log_text(line->problem), log_text(line->text)),
					 errhint("Raise pg_contention.max_incidents (it takes a restart); an open incident gives its slot only to a role that holds fewer.")));
		else if (line->kind == 4)
			ereport(LOG,
					(errmsg("pg_contention: incident " INT64_FORMAT " evicted while open, for an incident of a role that held fewer: %s %s, of %s, which held %d of the %d incident slots",
							line->id, severity_name(line->severity), log_text(line->problem),
							line->role_name, line->role_holds, pgc_max_incidents),
					 errhint("Raise pg_contention.max_incidents (it takes a restart); the evicted incident opens again when there is room.")));
		else if (!pgc_incident_log)
			continue;
		else if (line->kind == 2)
			ereport(LOG,
					(errmsg("pg_contention: incident " INT64_FORMAT " closed after %s: %s",
							line->id, duration_text(line->opened, line->at),
							line->text ? log_text(line->text) : "the finding is gone")));
		else
			ereport(LOG,
					(errmsg("pg_contention: incident " INT64_FORMAT " %s: %s %s: %s",
							line->id, line->kind == 0 ? "opened" : "escalated",
							severity_name(line->severity), log_text(line->problem),
							log_text(line->text))));
	}
}

void
pgc_incidents_main(Datum main_arg)
{
	TimestampTz next;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, incidents_sigterm);
	pqsignal(SIGINT, incidents_sigint);
	BackgroundWorkerUnblockSignals();

	if (pgc_shared == NULL || incidents == NULL)
	{
		ereport(LOG,
				(errmsg("pg_contention incidents not started: the library was not preloaded as \"pg_contention\""),
				 errhint("List it as pg_contention in shared_preload_libraries.")));
		proc_exit(0);
	}

	BackgroundWorkerInitializeConnection(pgc_incident_database, NULL, 0);
	pgstat_report_appname("pg_contention incidents");
	/* Its own statements are not the workload's: counted nowhere. */
	SetConfigOption("pg_contention.track_statements", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "pg_contention incidents", PGC_USERSET, PGC_S_OVERRIDE);

	/*
	 * It runs as the bootstrap superuser: no name in its queries may be
	 * resolved in a schema another role can write (a planted operator with
	 * an exact match for an argument's type would run as superuser).  The
	 * extension's own objects are named with its schema, the rest resolve
	 * in pg_catalog; the functions it calls pin the same path themselves.
	 * A session setting, not an override: that would silence their SET
	 * clauses.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION);
	/*
	 * No JIT: its queries cross jit_above_cost by their estimates
	 * (functions of a thousand rows), not by their work, and compiling
	 * them costs ten times what running them does, at every evaluation.
	 */
	SetConfigOption("jit", "off", PGC_USERSET, PGC_S_OVERRIDE);

	eval_context = AllocSetContextCreate(TopMemoryContext,
										 "pg_contention incidents",
										 ALLOCSET_DEFAULT_SIZES);
	before_shmem_exit(incidents_exit, (Datum) 0);
	LWLockAcquire(incidents->lock, LW_EXCLUSIVE);
	incidents->worker_pid = MyProcPid;
	LWLockRelease(incidents->lock);

	next = GetCurrentTimestamp();
	for (;;)
	{
		TimestampTz now;
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			next = Min(next, GetCurrentTimestamp() +
					   (TimestampTz) pgc_incident_interval * USECS_PER_SEC);
		}

		now = GetCurrentTimestamp();
		if (pgc_incident_interval > 0 && now >= next)
		{
			MemoryContext old = CurrentMemoryContext;

			next = now + (TimestampTz) pgc_incident_interval * USECS_PER_SEC;
			evaluating = true;
			PG_TRY();
			{
				MemoryContextSwitchTo(eval_context);
				evaluate();
				last_failure[0] = '\0';
			}
			PG_CATCH();
			{
				ErrorData  *edata;

				/*
				 * The evaluation failed (a timeout, a cancel, a dropped
				 * extension, any ERROR): LOG it and try again next
				 * interval.  Nothing of it reached the store.
				 */
				evaluating = false;
				MemoryContextSwitchTo(old);
				HOLD_INTERRUPTS();
				edata = CopyErrorData();
				FlushErrorState();
				disable_all_timeouts(false);
				QueryCancelPending = false;
				AbortCurrentTransaction();
				LWLockReleaseAll();
				RESUME_INTERRUPTS();
				pgc_findings_latest_forget();
				pgstat_report_activity(STATE_IDLE, NULL);
				/* The same failure again and again is LOGged once. */
				if (!ShutdownRequestPending &&
					strncmp(last_failure, edata->message, sizeof(last_failure) - 1) != 0)
					ereport(LOG,
							(errcode(edata->sqlerrcode),
							 errmsg("pg_contention incidents: the evaluation failed: %s",
									edata->message),
							 errdetail("It is tried again every pg_contention.incident_interval; the same failure is not logged again.")));
				strlcpy(last_failure, edata->message, sizeof(last_failure));
				FreeErrorData(edata);
				/* The extension may be gone or updated: look again. */
				forget_schema();
			}
			PG_END_TRY();
			evaluating = false;
			/* A cancel that came as it ended has nothing left to cancel. */
			QueryCancelPending = false;
			MemoryContextSwitchTo(old);
			MemoryContextReset(eval_context);
		}

		if (pgc_incident_interval > 0)
		{
			TimestampTz wait_us = next - GetCurrentTimestamp();

			sleep_ms = wait_us > 0 ? (long) ((wait_us + 999) / 1000) : 0;
		}
		else
			sleep_ms = -1;
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
						 (sleep_ms >= 0 ? WL_TIMEOUT : 0),
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* Register the worker; called from _PG_init while preloading. */
void
pgc_incidents_register(void)
{
	if (pgc_incident_interval <= 0)
		return;
	/* A missing database is a FATAL at connection: retry, not in a loop. */
	pgc_register_worker("pgc_incidents_main", "pg_contention incidents", 10);
}
