/*-------------------------------------------------------------------------
 *
 * incidents_store.h
 *		The incidents' store: its slots' layout and the helpers its files
 *		share, private to the store (incidents.c), its section of the
 *		stores' file (incidents_file.c), its SQL reader
 *		(readers/incidents_view.c) and the worker that writes it
 *		(workers/incidents_worker.c, workers/incident_plan.c).
 *
 * The locking rules are incidents.c's (its header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_INCIDENTS_STORE_H
#define PGC_INCIDENTS_STORE_H

#include "stores.h"
#include "../problem_list.h"

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

/*
 * The problems counted by incidents_opened_total: those an incident
 * follows, in problem_list.h's order, then "other".
 */
#define NUM_COUNTED PGC_NUM_COUNTED

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

typedef struct IncidentsShared
{
	LWLock	   *lock;
	uint64		reset_generation;
	int64		next_id;
	int64		evictions;		/* closed incidents evicted */
	int64		not_opened;		/* subjects refused: no slot for them */
	int64		open_evictions; /* open incidents evicted for another
								 * role's (take_room) */
	int64		opened[NUM_COUNTED][2]; /* [problem][warning, critical] */
	/* The worker's state, for readers who must not take silence for calm. */
	TimestampTz last_evaluated; /* its last evaluation that read findings */
	TimestampTz waiting_since;	/* 0: not waiting for the extension */
	char		waiting_database[NAMEDATALEN];	/* where it waits */
	/* A reader asks a waiting worker to look again (and waits for it). */
	uint64		look_requests;
	uint64		looks_done;		/* the requests its last look answered */
} IncidentsShared;

/* The store's header and slots (incidents.c). */
extern IncidentsShared *pgc_incidents;
extern Incident *pgc_incident_slots;

/* incidents.c: what the store's files share */
extern const char *severity_name(int severity);
extern int severity_from_name(const char *name);
extern void put_text(char *dest, int size, const char *src);
extern bool pack_frozen(const char *text, FrozenText *out);
extern void unpack_frozen(const FrozenText *in, char *dest);
extern char *log_text(const char *s);
extern bool json_valid(const char *s);
extern int	compare_incident_ids(const void *a, const void *b);
extern int	counted_index(const char *problem);

#endif							/* PGC_INCIDENTS_STORE_H */
