/*-------------------------------------------------------------------------
 *
 * normalize.c
 *		Statement texts with their constants replaced by $n, and the
 *		constants one execution ran with.
 *
 * Owns no shared state; no locks.
 *
 * (First version: texts are copied unchanged and no constants are
 * reported; see issue 23, item 4.)
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "mb/pg_wchar.h"

void
pgc_normalize_query(const char *source_text, int location, int len,
					char *out, int outsize)
{
	int			textlen = strlen(source_text);

	if (location < 0 || location > textlen)
		location = 0;
	if (len < 0 || location + len > textlen)
		len = textlen - location;
	if (outsize <= 0)
		return;
	len = Min(len, outsize - 1);
	len = pg_mbcliplen(source_text + location, len, len);
	memcpy(out, source_text + location, len);
	out[len] = '\0';
}

void
pgc_execution_literals(QueryDesc *queryDesc, char *out)
{
	out[0] = '\0';
}
