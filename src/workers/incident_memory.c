/*-------------------------------------------------------------------------
 *
 * incident_memory.c
 *		What the incidents worker remembers of its open incidents from one
 *		evaluation to the next, in its own memory: the details of the
 *		findings each was last seen with at warning or above (all of its
 *		key's: sessions that overflowed separately are separate findings).
 *		The store keeps a finding's details at the incident's peak only
 *		(what the report shows); what ended an incident is judged on the
 *		culprits it was last seen with, which may have changed since
 *		(sessions that overflow after the first ones ended, or after a
 *		restart).
 *
 * Owns no shared state and takes no locks: the worker's TopMemoryContext,
 * one entry per open incident (at most pg_contention.max_incidents),
 * dropped when the incident closes or is gone from the store.  Lost when
 * the worker restarts: then the peak's details are used.
 *
 *-------------------------------------------------------------------------
 */
#include "evaluation.h"

#include "utils/memutils.h"

typedef struct LastSeen
{
	int64		id;
	char	   *details;
	TimestampTz seen_at;		/* when the findings were read */
} LastSeen;

static LastSeen *last_seen = NULL;
static int	nlast = 0;
static int	maxlast = 0;

/*
 * Remember the details (of one finding, or an array) it was seen with in
 * findings read by seen_at.
 */
void
incident_memory_note(int64 id, const char *details, TimestampTz seen_at)
{
	int			i;
	char	   *copy;

	if (details == NULL)
		return;
	for (i = 0; i < nlast; i++)
		if (last_seen[i].id == id)
			break;
	if (i == nlast)
	{
		if (nlast == maxlast)
		{
			maxlast = Max(16, maxlast * 2);
			last_seen = last_seen == NULL ?
				MemoryContextAlloc(TopMemoryContext, maxlast * sizeof(LastSeen)) :
				repalloc(last_seen, maxlast * sizeof(LastSeen));
		}
		last_seen[nlast].id = id;
		last_seen[nlast].details = NULL;
		nlast++;
	}
	/*
	 * Always an array: the resolution reads it as the last seen findings.
	 * The copy is made before the old one is freed: an error in between
	 * leaves the entry as it was.
	 */
	copy = details[0] == '[' ?
		MemoryContextStrdup(TopMemoryContext, details) :
		MemoryContextStrdup(TopMemoryContext, psprintf("[%s]", details));
	if (last_seen[i].details != NULL)
		pfree(last_seen[i].details);
	last_seen[i].details = copy;
	last_seen[i].seen_at = seen_at;
}

/*
 * The details an open incident was last seen with, and when; NULL if not
 * known.
 */
const char *
incident_memory_details(int64 id, TimestampTz *seen_at)
{
	for (int i = 0; i < nlast; i++)
		if (last_seen[i].id == id)
		{
			*seen_at = last_seen[i].seen_at;
			return last_seen[i].details;
		}
	return NULL;
}

/* Forget every incident but the open ones that do not close now. */
void
incident_memory_keep_open(const OpenCopy *open, int nopen)
{
	int			kept = 0;

	for (int i = 0; i < nlast; i++)
	{
		bool		stays = false;

		for (int j = 0; j < nopen && !stays; j++)
			stays = open[j].id == last_seen[i].id && !open[j].close;
		if (stays)
			last_seen[kept++] = last_seen[i];
		else if (last_seen[i].details != NULL)
			pfree(last_seen[i].details);
	}
	nlast = kept;
}
