/*-------------------------------------------------------------------------
 *
 * compat.c
 *		Version-specific code that is more than a macro (see compat.h).
 *
 * PostgreSQL 13 has no compute_query_id, so statements carry queryId 0
 * unless pg_stat_statements is loaded.  Here a post_parse_analyze hook
 * gives them a query id from a hash of the statement's own text (not
 * normalised: different constants make different ids), leaving any id
 * set by another module alone.  On PostgreSQL 14 and later this file
 * compiles to an empty initialiser, and the server's query ids are used.
 *
 * Owns no shared state; takes no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#ifdef PGC_NEED_TEXT_QUERY_ID

#include "common/hashfn.h"
#include "parser/analyze.h"

static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;

static void
pgc_post_parse_analyze(ParseState *pstate, Query *query)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query);

	if (query->queryId == 0 && pstate->p_sourcetext != NULL)
	{
		const char *text = pstate->p_sourcetext;
		int			location = query->stmt_location;
		int			len = query->stmt_len;

		if (location < 0)
		{
			location = 0;
			len = strlen(text);
		}
		else if (len <= 0)
			len = strlen(text + location);
		query->queryId = hash_bytes_extended((const unsigned char *) text + location,
											 len, 0);
		if (query->queryId == 0)
			query->queryId = 1;
	}
}

void
pgc_compat_init(void)
{
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = pgc_post_parse_analyze;
}

#else

void
pgc_compat_init(void)
{
	pgc_enable_query_id();
}

#endif
