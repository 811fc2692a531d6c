/*-------------------------------------------------------------------------
 *
 * incident_plan.c
 *		The incidents worker's plan for one evaluation: its findings
 *		grouped by cause, each matched with the open incident it continues,
 *		and the slots decided (who opens, who is refused, whose open
 *		incident gives way) before anything is frozen.
 *
 * Owns no shared state: it works on the worker's copies, taken under the
 * store's lock (stores/incidents.c).
 *
 *-------------------------------------------------------------------------
 */
#include "evaluation.h"
#include "workers.h"

#include "utils/json.h"

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

/* How many of a key's findings the worker remembers an incident by. */
#define SEEN_KEPT		16

/*
 * The details of a key's findings at warning or above whose cause goes
 * on, as one JSON array, the kept finding's first: what the incident is
 * seen with now, all of its culprits (sessions that overflowed apart are
 * findings apart).  At most SEEN_KEPT; the kept finding's alone when it
 * is the only one, or when none is at warning.
 */
static char *
seen_details(Found **members, int n, const Found *best)
{
	StringInfoData list;
	int			listed = 0;
	bool		best_listed = best->severity >= SEV_WARNING && !best->cause_gone &&
		best->details != NULL;

	initStringInfo(&list);
	appendStringInfoChar(&list, '[');
	if (best_listed)
	{
		appendStringInfoString(&list, best->details);
		listed++;
	}
	for (int k = 0; k < n && listed < SEEN_KEPT; k++)
	{
		const Found *f = members[k];

		if (f == best || f->severity < SEV_WARNING || f->cause_gone ||
			f->details == NULL)
			continue;
		if (listed++ > 0)
			appendStringInfoString(&list, ", ");
		appendStringInfoString(&list, f->details);
	}
	appendStringInfoChar(&list, ']');
	if (listed == 0 || (listed == 1 && best_listed))
	{
		pfree(list.data);
		return best->details;
	}
	return list.data;
}

/*
 * One finding per problem and key: an incident is one problem with one
 * cause, so the findings that share a key (one holder's dead entries in
 * many indexes, one session's temporary indexes) become the most severe of
 * them (the first of the findings' order among equals), which names how
 * many there are, in its subject ("and 104 more indexes") and in its
 * details ("touched": the first TOUCHED_LISTED, "touched_count"; a single
 * index finding lists its index too, for continues_incident), since
 * the earliest of them, its cause gone when every one's is.  The findings
 * group the indexes of one cause already (details.cause, the key): such a
 * finding stands for its touched_count.  The work of an evaluation then
 * grows with the causes, not with the indexes.  Returns the count left in
 * found (in the findings' order).
 */
int
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
		int			members;
		bool		all_gone = true;

		for (j = i + 1; j < nfound && strcmp(order[j]->problem, best->problem) == 0 &&
			 strcmp(order[j]->key, best->key) == 0; j++)
			;
		/*
		 * Alone under its key: nothing to group, or grouped already (the
		 * findings group the indexes of one cause, and say so in its
		 * subject and details).
		 */
		if (j - i == 1 && (best->touched == NULL || best->grouped))
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
		best->seen_details = seen_details(order + i, j - i, best);
		for (int k = i; k < j; k++)
		{
			Found	   *f = order[k];

			if (f != best)
				drop[f - found] = true;
			if (f->since != 0 && (best->since == 0 || f->since < best->since))
				best->since = f->since;
		}
		members = 0;
		for (int k = i; k < j; k++)
			members += order[k]->grouped ? order[k]->members : 1;
		best->members = members;
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
OpenCopy *
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

/*
 * Open incidents of a role (InvalidOid: of none) once the plan is applied,
 * but the ones of which there is one at a time: never evicted, they do not
 * make their role (none) look like the one that holds the most.
 */
static int
role_holds(Oid role, const OpenCopy *open, int nopen, const Found *found, int nfound)
{
	int			n = 0;

	for (int j = 0; j < nopen; j++)
		n += (!open[j].evicted && open[j].culprit == role && !ONE_AT_A_TIME(open[j].key));
	for (int i = 0; i < nfound; i++)
		n += (found[i].open && found[i].culprit == role && !ONE_AT_A_TIME(found[i].key));
	return n;
}

/*
 * Room for a new incident of role "role" in a store whose every slot holds
 * an open incident: the slot of the role that holds the most, when it
 * holds more than one over what "role" would hold with it, so that one
 * role (or one kind of incident without a role) cannot keep the store full
 * against every other: its least severe, newest open incident gives its
 * slot (between roles that hold as many, the least severe, newest of
 * theirs).  NULL when no role holds that much more.  Never two roles back
 * and forth: the one that gave a slot holds no more than the other after
 * it.  An incident of which there is one at a time (a cluster-wide
 * problem's) is never refused for room: it takes the slot so chosen,
 * whatever its role holds, and never gives its own.
 */
static OpenCopy *
take_room(Oid role, bool one_at_a_time, OpenCopy *open, int nopen, const Found *found, int nfound)
{
	int			mine = role_holds(role, open, nopen, found, nfound);
	OpenCopy   *victim = NULL;
	int			most = 0;

	for (int j = 0; j < nopen; j++)
	{
		int			n;

		if (open[j].evicted || ONE_AT_A_TIME(open[j].key) ||
			(!one_at_a_time && open[j].culprit == role))
			continue;
		n = role_holds(open[j].culprit, open, nopen, found, nfound);
		if (victim == NULL || n > most ||
			(n == most && (open[j].peak_severity < victim->peak_severity ||
						   (open[j].peak_severity == victim->peak_severity &&
							open[j].id > victim->id))))
		{
			most = n;
			victim = &open[j];
		}
	}
	if (victim == NULL || (!one_at_a_time && most <= mine + 1))
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
void
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
		else if ((victim = take_room(f->culprit, ONE_AT_A_TIME(f->key),
									 open, nopen, found, nfound)) != NULL)
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
