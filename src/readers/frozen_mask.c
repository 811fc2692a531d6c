/*-------------------------------------------------------------------------
 *
 * frozen_mask.c
 *		An incident's frozen statements and holders as one reader may see
 *		them: the rule of the live views (pg_stat_activity,
 *		pg_stat_statements), applied to each frozen row by the role it
 *		came from, whenever it was frozen.
 *
 * The incidents worker freezes every role's statements and horizon
 * holders unmasked (it is a superuser).  A reader without
 * pg_read_all_stats sees the statement text, query id and state of the
 * rows of roles it has the privileges of, and "<insufficient privilege>"
 * (query id and state null) for every other row; a row without a role
 * (frozen before its role was kept, or a damaged one) is another role's,
 * and an element of those arrays that is no row is null.  Nothing else of
 * the row is hidden: what the live views show everyone (pids, application
 * names, ages, figures) is shown here too.
 *
 * The masking is done in the pass that checks the document (json_valid's
 * parser, which the view runs on every document it shows): the parser
 * gives where each masked value lies in the text, and the text is copied
 * with those values replaced.  The document is not read into a jsonb and
 * written out again.
 *
 * Owns no shared state and takes no lock: it works on a copy of the
 * frozen document, made by the view's reader.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "miscadmin.h"
#include "../stores/incidents.h"

#define MASKED_TEXT "\"<insufficient privilege>\""

/* A value of the text to replace: bytes [start, end), and with what. */
typedef struct MaskedValue
{
	int			start;
	int			end;
	const char *with;
} MaskedValue;

/* What a member of a row is to the mask. */
typedef enum RowMember
{
	MEMBER_OTHER,
	MEMBER_ROLE,				/* "userid" */
	MEMBER_TEXT,				/* "query" */
	MEMBER_NULLED				/* "query_id", "state" */
} RowMember;

typedef struct MaskState
{
	bool		ok;				/* first: json_valid_with's check clears it */
	JsonLexContext *lex;		/* while parsing: positions in text */
	const char *text;
	MemoryContext cxt;			/* where values is allocated */
	int			depth;			/* 1: in the document's object */
	bool		rows_member;	/* the document's member being read is rows */
	bool		in_rows;		/* in "statements" or "holders" */
	bool		element_is_row; /* the element being read is an object */
	int			element_start;
	int			row_first;		/* the row's first value in values */
	Oid			row_role;
	RowMember	member;			/* of the row, being read */
	int			member_start;
	MaskedValue *values;
	int			nvalues;
	int			allocated;
} MaskState;

static int
position(const MaskState *m, const char *p)
{
	return (int) (p - m->text);
}

static void
mask_value(MaskState *m, int start, int end, const char *with)
{
	if (m->nvalues == m->allocated)
	{
		m->allocated = Max(16, 2 * m->allocated);
		m->values = m->values == NULL ?
			MemoryContextAlloc(m->cxt, m->allocated * sizeof(MaskedValue)) :
			repalloc(m->values, m->allocated * sizeof(MaskedValue));
	}
	m->values[m->nvalues].start = start;
	m->values[m->nvalues].end = end;
	m->values[m->nvalues++].with = with;
}

/*
 * A row's role: its "userid" value's text, a whole number in the range of
 * an oid, bare or quoted (jsonb writes an oid as a string); InvalidOid for
 * anything else.
 */
static Oid
role_of(const char *value, int len)
{
	char		digits[16];
	char	   *end;
	unsigned long long n;

	if (len >= 2 && value[0] == '"' && value[len - 1] == '"')
	{
		value++;
		len -= 2;
	}
	if (len <= 0 || len >= (int) sizeof(digits) || value[0] < '0' || value[0] > '9')
		return InvalidOid;
	memcpy(digits, value, len);
	digits[len] = '\0';
	errno = 0;
	n = strtoull(digits, &end, 10);
	if (errno != 0 || *end != '\0' || n > PG_UINT32_MAX)
		return InvalidOid;
	return (Oid) n;
}

static PGC_JSON_ACTION
mask_object_start(void *state)
{
	MaskState  *m = state;

	if (++m->depth == 3 && m->in_rows)
	{
		m->element_is_row = true;
		m->row_first = m->nvalues;
		m->row_role = InvalidOid;
	}
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_object_end(void *state)
{
	MaskState  *m = state;

	/* A row of a role the reader may see: nothing of it is masked. */
	if (m->depth == 3 && m->in_rows && pgc_can_see_details(m->row_role))
		m->nvalues = m->row_first;
	m->depth--;
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_array_start(void *state)
{
	MaskState  *m = state;

	if (++m->depth == 2 && m->rows_member)
		m->in_rows = true;
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_array_end(void *state)
{
	MaskState  *m = state;

	if (m->depth == 2)
		m->in_rows = false;
	m->depth--;
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_element_start(void *state, bool isnull)
{
	MaskState  *m = state;

	if (m->depth == 2 && m->in_rows)
	{
		m->element_is_row = false;
		m->element_start = position(m, m->lex->token_start);
	}
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_element_end(void *state, bool isnull)
{
	MaskState  *m = state;

	/* An element that is no row is no one's: null. */
	if (m->depth == 2 && m->in_rows && !m->element_is_row && !isnull)
		mask_value(m, m->element_start, position(m, m->lex->prev_token_terminator), "null");
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_field_start(void *state, char *fname, bool isnull)
{
	MaskState  *m = state;

	if (m->depth == 1)
		m->rows_member = strcmp(fname, "statements") == 0 || strcmp(fname, "holders") == 0;
	else if (m->depth == 3 && m->in_rows)
	{
		m->member = strcmp(fname, "userid") == 0 ? MEMBER_ROLE :
			strcmp(fname, "query") == 0 ? MEMBER_TEXT :
			strcmp(fname, "query_id") == 0 || strcmp(fname, "state") == 0 ? MEMBER_NULLED :
			MEMBER_OTHER;
		/* The parser stands on the member's value. */
		m->member_start = position(m, m->lex->token_start);
	}
	PGC_JSON_ACTION_DONE;
}

static PGC_JSON_ACTION
mask_field_end(void *state, char *fname, bool isnull)
{
	MaskState  *m = state;
	int			end;

	if (m->depth != 3 || !m->in_rows || m->member == MEMBER_OTHER)
		PGC_JSON_ACTION_DONE;
	/* The parser has read past the member's value. */
	end = position(m, m->lex->prev_token_terminator);
	if (m->member == MEMBER_ROLE)
		m->row_role = role_of(m->text + m->member_start, end - m->member_start);
	else
		mask_value(m, m->member_start, end, m->member == MEMBER_TEXT ? MASKED_TEXT : "null");
	m->member = MEMBER_OTHER;
	PGC_JSON_ACTION_DONE;
}

/*
 * The frozen document (a JSON object: "statements", "holders", "history"
 * and flags) as the current user may read it; NULL when it is not JSON
 * that json_valid accepts.
 */
char *
pgc_mask_frozen(const char *frozen)
{
	MaskState	m = {0};
	JsonSemAction sem = {0};
	StringInfoData out;
	int			copied = 0;

	m.ok = true;
	m.text = frozen;
	m.cxt = CurrentMemoryContext;
	sem.semstate = &m;
	sem.object_start = mask_object_start;
	sem.object_end = mask_object_end;
	sem.array_start = mask_array_start;
	sem.array_end = mask_array_end;
	sem.array_element_start = mask_element_start;
	sem.array_element_end = mask_element_end;
	sem.object_field_start = mask_field_start;
	sem.object_field_end = mask_field_end;
	if (!json_valid_with(frozen, &sem, &m.lex))
		return NULL;

	/* The values come in the text's order, none inside another. */
	initStringInfo(&out);
	for (int i = 0; i < m.nvalues; i++)
	{
		appendBinaryStringInfo(&out, frozen + copied, m.values[i].start - copied);
		appendStringInfoString(&out, m.values[i].with);
		copied = m.values[i].end;
	}
	appendStringInfoString(&out, frozen + copied);
	return out.data;
}
