/*-------------------------------------------------------------------------
 *
 * evaluation.h
 *		What the incidents worker's files share: a finding of one
 *		evaluation, the copies of the open and recently closed incidents it
 *		judges them against, and the planning of openings
 *		(incident_plan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_WORKERS_EVALUATION_H
#define PGC_WORKERS_EVALUATION_H

#include "../stores/incidents_store.h"
#include "workers.h"

/*
 * The keys of the incidents of which there is one at a time (key.sql): a
 * cluster-wide problem's, and a standby's overflow (the primary's).
 */
#define CLUSTER_KEY		"cluster"
#define PRIMARY_KEY		"the primary"
#define ONE_AT_A_TIME(key) (strcmp((key), CLUSTER_KEY) == 0 || strcmp((key), PRIMARY_KEY) == 0)

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
	bool		grouped;		/* pg_contention_findings made it of its
								 * cause's findings (details.touched_count) */
	char	   *seen_details;	/* a JSON array: the details of its key's
								 * findings at warning or above */
	/* What the evaluation decided. */
	int64		match_id;		/* the open incident it belongs to, or 0 */
	bool		open;			/* opens a new incident */
	bool		escalate;		/* raises match_id's peak */
	bool		refused;		/* would open, but no slot is its to take */
	int64		evict_id;		/* opens in this open incident's slot */
	FrozenText *frozen;
} Found;

/* A closed incident, as the evaluation copied it. */
typedef struct ClosedCopy
{
	char		problem[PROBLEM_LEN];
	char		key[KEY_LEN];
	TimestampTz closed;
} ClosedCopy;

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

/* incidents_worker.c: the evaluation's context, and the extension's schema (quoted) */
extern MemoryContext pgc_eval_context;
extern char *pgc_ext_schema;
extern char *pgc_eval_index_states;

/* incident_queries.c */
extern FrozenText *incident_freeze(const Found *f);
extern char *incident_resolve(const OpenCopy *o);

/* incident_memory.c */
extern void incident_memory_note(int64 id, const char *details, TimestampTz seen_at);
extern const char *incident_memory_details(int64 id, TimestampTz *seen_at);
extern void incident_memory_keep_open(const OpenCopy *open, int nopen);

/* incident_plan.c */
extern int group_findings(Found *found, int nfound);
extern OpenCopy *continues_incident(const Found *f, OpenCopy *open, int nopen);
extern void plan_openings(Found *found, int nfound, OpenCopy *open, int nopen, int room);

#endif							/* PGC_WORKERS_EVALUATION_H */
