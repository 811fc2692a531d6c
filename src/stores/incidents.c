/*-------------------------------------------------------------------------
 *
 * incidents.c
 *		The incident store: the incidents the worker keeps
 *		(workers/incidents_worker.c writes them), their texts cut and their
 *		frozen evidence compressed, its size, fill and evictions, its reset.
 *		Its section of the stores' file is incidents_file.c; the view
 *		pg_contention_incidents reads it (readers/incidents_view.c).
 *
 * Owns the incident store (ShmemInitStruct "pg_contention incidents": a
 * header, then max_incidents fixed-size slots, each with its texts cut at
 * fixed sizes and its frozen evidence compressed, see FrozenText) and its
 * LWLock.
 *
 * Locking: the worker is the only writer of incidents (reset empties the
 * store, the postmaster loads it before any process exists).  The worker
 * evaluates without the lock, copies the open incidents' keys under the
 * lock in shared mode, and takes it exclusively once per evaluation to
 * apply what it found (memcpy of bounded texts, nothing that can ERROR).
 * Readers copy the slots under the lock in shared mode and build rows
 * after releasing it.  A reset bumps reset_generation under the lock,
 * exclusively, so the worker drops an evaluation that straddled it.
 *
 *-------------------------------------------------------------------------
 */
#include "incidents_store.h"
#include "stores.h"

#include "common/pg_lzcompress.h"
#include "mb/pg_wchar.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

IncidentsShared *pgc_incidents = NULL;
Incident   *pgc_incident_slots = NULL;

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

	pgc_incidents = ShmemInitStruct("pg_contention incidents",
								pgc_incidents_shmem_size(), &found);
	pgc_incident_slots = (Incident *) ((char *) pgc_incidents + MAXALIGN(sizeof(IncidentsShared)));
	if (!found)
	{
		memset(pgc_incidents, 0, pgc_incidents_shmem_size());
		pgc_incidents->next_id = 1;
	}
	pgc_incidents->lock = lock;
}

void
pgc_incidents_reset(void)
{
	LWLockAcquire(pgc_incidents->lock, LW_EXCLUSIVE);
	memset(pgc_incident_slots, 0, mul_size(pgc_max_incidents, sizeof(Incident)));
	pgc_incidents->next_id = 1;
	pgc_incidents->evictions = 0;
	pgc_incidents->not_opened = 0;
	pgc_incidents->open_evictions = 0;
	memset(pgc_incidents->opened, 0, sizeof(pgc_incidents->opened));
	pgc_incidents->reset_generation++;
	LWLockRelease(pgc_incidents->lock);
}


int
counted_index(const char *problem)
{
	const PgcProblem *p = pgc_problem(problem);

	if (p != NULL && p - pgc_problems < PGC_NUM_COUNTED_PROBLEMS)
		return p - pgc_problems;
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
	LWLockAcquire(pgc_incidents->lock, LW_SHARED);
	for (int i = 0; i < pgc_max_incidents; i++)
		if (pgc_incident_slots[i].id != 0)
			(*used)++;
	*evictions = pgc_incidents->evictions;
	*not_opened = pgc_incidents->not_opened;
	*open_evictions = pgc_incidents->open_evictions;
	memcpy(opened, pgc_incidents->opened, sizeof(opened));
	LWLockRelease(pgc_incidents->lock);

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < (int) NUM_COUNTED; i++)
	{
		if (opened[i][0] == 0 && opened[i][1] == 0)
			continue;
		appendStringInfo(&buf, "%s\"%s\": {\"warning\": " INT64_FORMAT ", \"critical\": " INT64_FORMAT "}",
						 first ? "" : ", ",
						 i < PGC_NUM_COUNTED_PROBLEMS ? pgc_problems[i].name : "other",
						 opened[i][0], opened[i][1]);
		first = false;
	}
	appendStringInfoChar(&buf, '}');
	*opened_json = buf.data;
}

/* ---- texts ---- */

const char *
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

int
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
void
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
bool
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
void
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
char *
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

/*
 * Is s one JSON value that jsonb_in reads without an error in any
 * database?  Core's parser, with \u escapes of ASCII characters only
 * (decoded as in a SQL_ASCII database: a higher one is an error) and
 * exponents of at most 4 digits (what the stored texts have: jsonb's
 * output and escape_json's), nested at most JSON_MAX_DEPTH deep.  The
 * depth is counted first, without recursion: the parser recurses once per
 * level and raises an ERROR past the stack's limit, which in the
 * postmaster loading a damaged file would stop the server.  What loading
 * checks before a text may reach jsonb_in in a view.
 */
#define JSON_MAX_DEPTH	32

static bool
json_depth_within(const char *s, int max_depth)
{
	int			depth = 0;
	bool		in_string = false;

	for (const char *p = s; *p != '\0'; p++)
	{
		if (in_string)
		{
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == '"')
				in_string = false;
		}
		else if (*p == '"')
			in_string = true;
		else if (*p == '{' || *p == '[')
		{
			if (++depth > max_depth)
				return false;
		}
		else if (*p == '}' || *p == ']')
			depth--;
	}
	return true;
}

static PGC_JSON_ACTION
json_check_scalar(void *state, char *token, JsonTokenType tokentype)
{
	if (tokentype == JSON_TOKEN_NUMBER && token != NULL)
	{
		const char *e = strpbrk(token, "eE");

		if (e != NULL)
		{
			e++;
			if (*e == '+' || *e == '-')
				e++;
			if (strlen(e) > 4)
				*((bool *) state) = false;
		}
	}
	PGC_JSON_ACTION_DONE;
}

bool
json_valid(const char *s)
{
	bool		ok = true;
	JsonSemAction sem = {0};

	sem.semstate = &ok;
	return json_valid_with(s, &sem, NULL);
}

/*
 * json_valid, running the caller's actions of sem in the same pass (its
 * scalar action is the check's own); *lex_out as pgc_json_parse's.  sem's
 * state begins with a bool, true, which the check clears on a number it
 * refuses.
 */
bool
json_valid_with(const char *s, JsonSemAction *sem, JsonLexContext **lex_out)
{
	bool		ok;
	MemoryContext cxt;
	MemoryContext old;

	if (!json_depth_within(s, JSON_MAX_DEPTH))
		return false;
	sem->scalar = json_check_scalar;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_contention JSON check",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	ok = pgc_json_parse(s, strlen(s), PG_SQL_ASCII, sem, lex_out) == JSON_SUCCESS;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return ok && *((bool *) sem->semstate);
}

/* Incidents by id (the file's load keeps the largest). */
int
compare_incident_ids(const void *a, const void *b)
{
	int64		ia = ((const Incident *) a)->id;
	int64		ib = ((const Incident *) b)->id;

	return (ia > ib) - (ia < ib);
}

/* Incidents by id, the newest (largest) first. */
static int
compare_incidents_newest_first(const void *a, const void *b)
{
	int64		ia = ((const Incident *) a)->id;
	int64		ib = ((const Incident *) b)->id;

	return (ia < ib) - (ia > ib);
}

/*
 * The incidents for a reader (only_id: that one; 0: every one), newest
 * first: the slots copied under the lock in shared mode (bounded:
 * max_incidents), without their frozen document unless with_details, and
 * sorted after it is released.
 */
Incident *
pgc_incidents_copy(int64 only_id, bool with_details, int *n)
{
	Incident   *copy;
	int			used = 0;

	copy = palloc_extended(mul_size(pgc_max_incidents, sizeof(Incident)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_incidents->lock, LW_SHARED);
	for (int i = 0; i < pgc_max_incidents; i++)
		if (pgc_incident_slots[i].id != 0 &&
			(only_id == 0 || pgc_incident_slots[i].id == only_id))
			memcpy(&copy[used++], &pgc_incident_slots[i],
				   with_details ? sizeof(Incident) : offsetof(Incident, frozen));
	LWLockRelease(pgc_incidents->lock);
	qsort(copy, used, sizeof(Incident), compare_incidents_newest_first);
	*n = used;
	return copy;
}

/* The worker's state into *state; caller holds the lock. */
static void
copy_worker_state(PgcIncidentsWorkerState *state)
{
	state->last_evaluated = pgc_incidents->last_evaluated;
	state->waiting_since = pgc_incidents->waiting_since;
	strlcpy(state->waiting_database, pgc_incidents->waiting_database, NAMEDATALEN);
}

/* The worker's state, under the lock in shared mode. */
void
pgc_incidents_worker_state(PgcIncidentsWorkerState *state)
{
	LWLockAcquire(pgc_incidents->lock, LW_SHARED);
	copy_worker_state(state);
	LWLockRelease(pgc_incidents->lock);
}

/* Ask the worker, waiting for the extension, to look again now. */
uint64
pgc_incidents_request_look(void)
{
	uint64		request;

	LWLockAcquire(pgc_incidents->lock, LW_EXCLUSIVE);
	request = ++pgc_incidents->look_requests;
	LWLockRelease(pgc_incidents->lock);
	return request;
}

/* Has its last look answered request?  And its state after it. */
bool
pgc_incidents_look_answered(uint64 request, PgcIncidentsWorkerState *state)
{
	bool		done;

	LWLockAcquire(pgc_incidents->lock, LW_SHARED);
	done = pgc_incidents->looks_done >= request;
	copy_worker_state(state);
	LWLockRelease(pgc_incidents->lock);
	return done;
}
