/*-------------------------------------------------------------------------
 *
 * normalize_view.c
 *		pg_contention_normalize(text): a text normalised as the statement
 *		store keeps statements (capture/normalize.c does the work).
 *
 * Owns no shared state and takes no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(pg_contention_normalize);

/*
 * pg_contention_normalize(text): a text normalised as the statement store
 * keeps statements (new in 1.4).  Who pays (pg_contention_victims) finds
 * the statements of pg_contention's own SQL-language functions in their
 * bodies normalised by it: a statement's text in the store is normalised.
 * A constant of one byte can become "$" and ten digits: the output has
 * room for that, so nothing is cut.
 */
Datum
pg_contention_normalize(PG_FUNCTION_ARGS)
{
	text	   *in = PG_GETARG_TEXT_PP(0);
	int			len = VARSIZE_ANY_EXHDR(in);
	char	   *source;
	char	   *out;
	Size		outsize;

	if ((Size) len > (MaxAllocSize - 1) / 11)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("text too long to normalise: %d bytes", len),
				 errhint("Pass at most %d bytes.", (int) ((MaxAllocSize - 1) / 11))));
	source = text_to_cstring(in);
	outsize = (Size) len * 11 + 1;
	out = palloc(outsize);
	pgc_normalize_query(source, 0, -1, out, (int) outsize);
	PG_RETURN_TEXT_P(cstring_to_text(out));
}
