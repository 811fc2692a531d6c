/*-------------------------------------------------------------------------
 *
 * problem_list.h
 *		The problems pg_contention finds: the one list that every place
 *		naming them reads.  The server exposes it as pg_contention_problems()
 *		(readers/problems.c), which the findings' order, the metrics and the
 *		incidents' SQL read; the incidents store counts the opened incidents
 *		by its position; the client includes it for the report.
 *
 * Plain C (no server or libpq header): the client includes it too.  Owns
 * no state.
 *
 * The incidents file keeps the opened incidents' counts of the list's
 * first PGC_NUM_COUNTED_PROBLEMS problems in this order, then one for any
 * other: a new problem goes after them (counted as "other"); counting it
 * by name means raising that number, a new version of the file's
 * incidents section (stores/incidents_file.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_PROBLEM_LIST_H
#define PGC_PROBLEM_LIST_H

#include <stdbool.h>
#include <string.h>

typedef struct PgcProblem
{
	const char *name;			/* as in pg_contention_findings.problem */
	int			rank;			/* the findings' order within a severity */
	bool		incidents;		/* an incident can follow it: it reaches
								 * warning */
	bool		horizon;		/* about a held xmin horizon: the report
								 * draws the horizon's age first */
} PgcProblem;

static const PgcProblem pgc_problems[] = {
	{"subxact_overflow", 1, true, false},
	{"subtrans_slru_contention", 2, true, false},
	{"subxact_near_overflow", 6, false, false},	/* info only */
	{"dead_tuple_index_scan", 3, true, true},
	{"hot_chain_scan", 4, true, true},
	{"xmin_horizon_held", 0, true, true},
	{"old_snapshot_threshold_spinlock", 5, true, false},
	/* A stopped sampler says how far to trust the rest: first. */
	{"sampler_stale", -1, false, false},
};

#define PGC_NUM_PROBLEMS ((int) (sizeof(pgc_problems) / sizeof(pgc_problems[0])))

/*
 * The incidents file keeps a count for each of the first seven problems
 * (subxact_near_overflow's stays zero), then one for any other.
 */
#define PGC_NUM_COUNTED_PROBLEMS 7
#define PGC_NUM_COUNTED (PGC_NUM_COUNTED_PROBLEMS + 1)

/* The problem named so, or NULL. */
static inline const PgcProblem *
pgc_problem(const char *name)
{
	if (name == NULL)
		return NULL;
	for (int i = 0; i < PGC_NUM_PROBLEMS; i++)
		if (strcmp(pgc_problems[i].name, name) == 0)
			return &pgc_problems[i];
	return NULL;
}

#endif							/* PGC_PROBLEM_LIST_H */
