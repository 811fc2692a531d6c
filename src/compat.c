/*-------------------------------------------------------------------------
 *
 * compat.c
 *		Version-specific code that is more than a macro (see compat.h).
 *
 * PostgreSQL 13 has no compute_query_id, so statements carry queryId 0
 * unless pg_stat_statements is loaded.  Here a post_parse_analyze hook
 * gives them a query id from a hash of the statement's own text (not
 * normalised: different constants make different ids), leaving any id
 * set by another module alone; utility statements, whose PlannedStmt does
 * not carry the id there, get the same hash.  On PostgreSQL 14 and later this file
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

/* A query id from the statement's own slice of the source text. */
static uint64
text_query_id(const char *text, int location, int len)
{
	uint64		id;

	if (location < 0)
	{
		location = 0;
		len = 0;
	}
	if (len <= 0)
		len = strlen(text + location);
	id = hash_bytes_extended((const unsigned char *) text + location, len, 0);
	return id != 0 ? id : 1;
}

static void
pgc_post_parse_analyze(ParseState *pstate, Query *query)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query);

	if (query->queryId == 0 && pstate->p_sourcetext != NULL)
		query->queryId = text_query_id(pstate->p_sourcetext,
									   query->stmt_location,
									   query->stmt_len);
}

/* PG13 does not carry the query id into a utility statement's PlannedStmt. */
int64
pgc_utility_query_id(PlannedStmt *pstmt, const char *query_string)
{
	if (pstmt->queryId == 0 && query_string != NULL)
		return (int64) text_query_id(query_string, pstmt->stmt_location,
									 pstmt->stmt_len);
	return (int64) pstmt->queryId;
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

int64
pgc_utility_query_id(PlannedStmt *pstmt, const char *query_string)
{
	return (int64) pstmt->queryId;
}

#endif
