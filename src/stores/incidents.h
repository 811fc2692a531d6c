/*-------------------------------------------------------------------------
 *
 * incidents.h
 *		The incidents' store's door: an incident as its readers see it
 *		(a slot's copy), and how they read the store and the worker's
 *		state (stores/incidents.c).  The store's shared header is
 *		incidents_store.h's, for the store's own files and its writer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_INCIDENTS_H
#define PGC_INCIDENTS_H

#include "pg_contention.h"

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
/* Bytes of one incident's frozen statements, holders and history (JSON). */
#define FROZEN_LEN		(48 * 1024)

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

/* The restarts an incident keeps the times of (the latest; all counted). */
#define INCIDENT_RESTARTS 8

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
	int32		restarts;		/* server starts while it was open */
	TimestampTz restarted[INCIDENT_RESTARTS];	/* the latest of them */
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

/* The helpers a reader of a copy needs (incidents.c). */
extern const char *severity_name(int severity);
extern void unpack_frozen(const FrozenText *in, char *dest);
extern bool json_valid(const char *s);
extern bool json_valid_with(const char *s, JsonSemAction *sem, JsonLexContext **lex_out);

/*
 * The incidents (only_id: that one; 0: every one), newest first, copied
 * under the store's lock; without their frozen document unless
 * with_details.
 */
extern Incident *pgc_incidents_copy(int64 only_id, bool with_details, int *n);

/* The worker's state, for readers who must not take silence for calm. */
typedef struct PgcIncidentsWorkerState
{
	TimestampTz last_evaluated; /* its last evaluation that read findings */
	TimestampTz waiting_since;	/* 0: not waiting for the extension */
	char		waiting_database[NAMEDATALEN];
} PgcIncidentsWorkerState;

extern void pgc_incidents_worker_state(PgcIncidentsWorkerState *state);

/* Ask a waiting worker to look again; has it answered that request? */
extern uint64 pgc_incidents_request_look(void);
extern bool pgc_incidents_look_answered(uint64 request, PgcIncidentsWorkerState *state);

#endif							/* PGC_INCIDENTS_H */
