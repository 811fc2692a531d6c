/*-------------------------------------------------------------------------
 *
 * incidents_store.h
 *		The incidents' store: its shared header and the helpers its files
 *		share, private to the store (incidents.c), its section of the
 *		stores' file (incidents_file.c) and its one writer, the incidents
 *		worker (workers/).  Its readers use its door, incidents.h.
 *
 * The locking rules are incidents.c's (its header comment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_INCIDENTS_STORE_H
#define PGC_INCIDENTS_STORE_H

#include "stores.h"
#include "incidents.h"
#include "../problem_list.h"

/*
 * The problems counted by incidents_opened_total: those an incident
 * follows, in problem_list.h's order, then "other".
 */
#define NUM_COUNTED PGC_NUM_COUNTED

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
extern int severity_from_name(const char *name);
extern void put_text(char *dest, int size, const char *src);
extern bool pack_frozen(const char *text, FrozenText *out);
extern char *log_text(const char *s);
extern int	compare_incident_ids(const void *a, const void *b);
extern int	counted_index(const char *problem);

#endif							/* PGC_INCIDENTS_STORE_H */
