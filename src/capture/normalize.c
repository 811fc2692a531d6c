/*-------------------------------------------------------------------------
 *
 * normalize.c
 *		Statement texts with their constants replaced by $n, and the
 *		constants one execution ran with.
 *
 * A statement's text is normalised once, when its entry in the statement
 * hash is created (rare), never per execution: there is no
 * post_parse_analyze hook, so the server's constant locations are not
 * kept.  Instead the statement's slice of the source text is run through
 * the server's own scanner (parser/scanner.h, with the settings
 * pg_stat_statements uses to find its constants' lengths), and each
 * literal token is replaced: numbers (with a unary minus), strings ('',
 * E'', U&'', dollar-quoted), bit and hex strings; not the code of a DO
 * block or a function's body (AS '...'), which are the statement; a
 * PREPARE's text is cut to its statement (PREPARE p(int) AS SELECT ...:
 * SELECT ...), the text its executions run.  As in
 * pg_stat_statements, they are numbered in order after the highest $n
 * already in the text.  Integers the server's jumble does not take as
 * constants are kept: a type's modifier (numeric(10,2), varchar(20)) and
 * an ORDER BY or GROUP BY column position.  The scanner sees tokens, not
 * the grammar, so this is judged from the tokens around them; where it
 * cannot tell (a window's ORDER BY 1, a user type's modifier) it may
 * differ from pg_stat_statements.
 *
 * The texts scanned were parsed by the server, so they scan; but a text
 * cut at max_query_length (a deferred overflow count) or scanned with
 * other standard_conforming_strings than it was parsed with may not.  The
 * scanner reports that with ereport(ERROR) and a syntax error's SQLSTATE:
 * it holds no lock, buffer or other resource, only memory in a context of
 * our own, so that error, and only that one, is caught here (no lock of
 * ours is held either: callers call this outside their locks), and the
 * text past the last whole token is kept as it is.  Any other error is
 * raised again, untouched.
 *
 * The scan stops once what it has seen fills the output: a statement of
 * megabytes costs what max_query_length bytes of it cost.  So $n numbers
 * follow the highest $n in the part shown.
 *
 * Owns no shared state; no locks.
 *
 *-------------------------------------------------------------------------
 */
#include "capture.h"

#include "common/keywords.h"
#include "mb/pg_wchar.h"
#include "nodes/params.h"
#include "parser/scanner.h"
#include "parser/scansup.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* One literal of a statement's slice: where it starts, how long it is. */
typedef struct PgcLiteral
{
	int			start;
	int			len;
} PgcLiteral;

/* What a scan found in a statement's slice. */
typedef struct PgcScan
{
	const char *text;			/* the slice, trimmed (not NUL-terminated) */
	int			len;
	PgcLiteral *literals;		/* in order */
	int			nliterals;
	int			max_param;		/* highest $n seen; 0: none */
	int			body_start;		/* PREPARE ... AS: where its statement starts */
} PgcScan;

/*
 * The statement's slice of source_text, without leading and trailing
 * white space.
 */
static void
statement_slice(const char *source_text, int location, int len,
				const char **start, int *slicelen)
{
	int			textlen = strlen(source_text);
	const char *s;

	if (location < 0 || location > textlen)
	{
		location = 0;
		len = -1;
	}
	if (len <= 0 || len > textlen - location)
		len = textlen - location;
	s = source_text + location;
	while (len > 0 && scanner_isspace(*s))
	{
		s++;
		len--;
	}
	while (len > 0 && scanner_isspace(s[len - 1]))
		len--;
	*start = s;
	*slicelen = len;
}

/* Can a '-' after this token be a binary minus (is it an operand)? */
static bool
token_is_operand(int tok, const char *t)
{
	unsigned char c = (unsigned char) t[0];

	if (tok == ')' || tok == ']')
		return true;
	if (tok < 256)
		return false;			/* another single-character token */
	if (c == '"' || c == '\'' || c == '$' || isdigit(c) || c == '.')
		return true;			/* identifier, literal, parameter */
	if (isalpha(c) || c == '_' || IS_HIGHBIT_SET(c))
	{
		/* A reserved keyword (WHERE, THEN, LIMIT) cannot be a column. */
		int			kw = ScanKeywordLookup(t, &ScanKeywords);

		return (kw < 0 || ScanKeywordCategories[kw] != RESERVED_KEYWORD) &&
			pg_strcasecmp(t, "between") != 0;
	}
	return false;				/* an operator, ::, => */
}

/*
 * Is this token a type whose parenthesised modifier the server takes as
 * part of the type, not as a constant: numeric(10,2), varchar(20)?
 * Keywords all (col_name keywords cannot name a function).
 */
static bool
token_is_type_with_modifier(const char *t)
{
	static const char *const types[] = {
		"bit", "char", "character", "dec", "decimal", "float", "interval",
		"nchar", "numeric", "time", "timestamp", "varchar", "varying"
	};

	if (!isalpha((unsigned char) t[0]))
		return false;
	for (int i = 0; i < lengthof(types); i++)
		if (pg_strcasecmp(t, types[i]) == 0)
			return true;
	return false;
}

/* Is this token a number? */
static inline bool
token_is_number(const char *t)
{
	return isdigit((unsigned char) t[0]) ||
		(t[0] == '.' && isdigit((unsigned char) t[1]));
}

/* Is this token a string, bit string or hex string literal? */
static bool
token_is_string(const char *t)
{
	char		c = pg_ascii_tolower((unsigned char) t[0]);

	if (c == '\'')
		return true;
	if ((c == 'e' || c == 'b' || c == 'x') && t[1] == '\'')
		return true;			/* E'', B'', X'' */
	if (c == 'u' && t[1] == '&' && t[2] == '\'')
		return true;			/* U&'' */
	if (c == '$' && !isdigit((unsigned char) t[1]) && t[1] != '\0')
		return true;			/* $$...$$, $tag$...$tag$ */
	return false;
}

/*
 * Scan a statement's slice (scan->text, scan->len) for its literals and
 * its highest $n, stopping once the normalised text of what was seen is
 * at least stop_after bytes.  The literals are allocated in the caller's
 * memory context.
 */
static void
scan_statement(PgcScan *scan, int stop_after)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext scratch;
	int			allocated = 16;
	volatile int scanned_to = 0;	/* end of the last whole token */
	int			literal_bytes = 0;
	volatile int holdoff = InterruptHoldoffCount;
	volatile int cancel_holdoff = QueryCancelHoldoffCount;

	scan->literals = palloc(allocated * sizeof(PgcLiteral));
	scan->nliterals = 0;
	scan->max_param = 0;
	scan->body_start = 0;
	if (scan->len == 0)
		return;

	scratch = AllocSetContextCreate(caller, "pg_contention normalise",
									ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(scratch);
	PG_TRY();
	{
		core_yy_extra_type yyextra;
		core_yyscan_t yyscanner;
		core_YYSTYPE yylval;
		YYLTYPE		yylloc;
		char	   *copy = pnstrdup(scan->text, scan->len);
		bool		prev_operand = false;
		bool		prev_uescape = false;
		int			minus_at = -1;	/* a unary minus just before */
		int			depth = 0;	/* of parentheses and brackets */
		int			typmod_depth = -1;	/* inside numeric(10,2): its depth */
		int			by_depth = -1;	/* in an ORDER BY or GROUP BY list */
		bool		prev_type = false;	/* a type that takes a modifier */
		bool		prev_order_group = false;
		bool		position_next = false;	/* ORDER BY 1: a column position */
		bool		prev_as = false;
		int			national_at = -1;	/* N'...': the N just before */
		bool		is_do = false;	/* a DO block: its code is the text */
		bool		is_prepare = false; /* PREPARE name (types) AS statement */
		bool		first = true;

		/* As pg_stat_statements' fill_in_constant_lengths sets it up. */
		yyscanner = scanner_init(copy, &yyextra, &ScanKeywords,
								 ScanKeywordTokens);
		yyextra.escape_string_warning = false;

		for (;;)
		{
			int			tok = core_yylex(&yylval, &yylloc, yyscanner);
			const char *t;
			int			toklen;
			bool		literal = false;

			if (tok == 0)
				break;
			/* Flex leaves a NUL after the current token in scanbuf. */
			t = yyextra.scanbuf + yylloc;
			toklen = strlen(t);

			if (tok == '(' || tok == '[')
			{
				depth++;
				if (prev_type && typmod_depth < 0)
					typmod_depth = depth;
			}
			else if (tok == ')' || tok == ']')
			{
				if (depth == typmod_depth)
					typmod_depth = -1;
				if (depth == by_depth)
					by_depth = -1;
				depth--;
			}

			if (token_is_number(t))
				literal = typmod_depth < 0 &&
					!(position_next && strspn(t, "0123456789") == toklen);
			else if (token_is_string(t))
				literal = !prev_uescape && !prev_as;	/* UESCAPE '!', AS 'body' */
			if (first)
			{
				is_do = pg_strcasecmp(t, "do") == 0;
				is_prepare = pg_strcasecmp(t, "prepare") == 0;
			}
			else if (is_prepare && scan->body_start == 0 && prev_as && depth == 0)
				scan->body_start = yylloc;
			first = false;
			if (is_do)
				literal = false;
			else if (t[0] == '$' && isdigit((unsigned char) t[1]))
				scan->max_param = Max(scan->max_param, yylval.ival);

			if (literal)
			{
				int			start = yylloc;

				if (minus_at >= 0 && token_is_number(t))
					start = minus_at;
				else if (national_at >= 0 && national_at + 1 == yylloc)
					start = national_at;
				if (scan->nliterals == allocated)
				{
					MemoryContextSwitchTo(caller);
					allocated *= 2;
					scan->literals = repalloc(scan->literals,
											  allocated * sizeof(PgcLiteral));
					MemoryContextSwitchTo(scratch);
				}
				scan->literals[scan->nliterals].start = start;
				scan->literals[scan->nliterals].len = yylloc + toklen - start;
				scan->nliterals++;
				literal_bytes += yylloc + toklen - start;
			}

			/*
			 * Integers the server's jumble does not count as constants: a
			 * type's modifier, an ORDER BY or GROUP BY column position.
			 */
			if (tok == ';')
				by_depth = -1;
			else if (by_depth == depth && tok >= 256 && isalpha((unsigned char) t[0]) &&
					 !token_is_operand(tok, t) && pg_strcasecmp(t, "asc") != 0 &&
					 pg_strcasecmp(t, "desc") != 0)
				by_depth = -1;	/* LIMIT, HAVING: past the list */
			position_next = (prev_order_group && pg_strcasecmp(t, "by") == 0) ||
				(tok == ',' && by_depth == depth);
			if (prev_order_group && pg_strcasecmp(t, "by") == 0)
				by_depth = depth;
			prev_order_group = pg_strcasecmp(t, "order") == 0 ||
				pg_strcasecmp(t, "group") == 0;
			prev_type = token_is_type_with_modifier(t);

			minus_at = (tok == '-' && !prev_operand) ? yylloc : -1;
			national_at = (toklen == 1 && (t[0] == 'n' || t[0] == 'N')) ? yylloc : -1;
			prev_operand = token_is_operand(tok, t);
			prev_uescape = pg_strcasecmp(t, "uescape") == 0;
			prev_as = pg_strcasecmp(t, "as") == 0;
			scanned_to = yylloc + toklen;

			/* What is shown cannot reach further (each $n is 2 bytes or more). */
			if (scanned_to - literal_bytes + 2 * scan->nliterals >= stop_after)
				break;
		}
		scanner_finish(yyscanner);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/*
		 * A text that does not scan (see the header comment): keep what was
		 * found before the token that failed, the rest is shown as it is.
		 * Only the scanner's own complaint, a syntax error raised with
		 * nothing but our memory in hand, is caught; anything else (out of
		 * memory, a cancel) goes on up as it came.  The holdoff counts,
		 * which error raising resets for the handler, are the caller's
		 * again.
		 */
		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_SYNTAX_ERROR)
		{
			FreeErrorData(edata);
			PG_RE_THROW();
		}
		FreeErrorData(edata);
		FlushErrorState();
		InterruptHoldoffCount = holdoff;
		QueryCancelHoldoffCount = cancel_holdoff;
		while (scan->nliterals > 0 &&
			   scan->literals[scan->nliterals - 1].start +
			   scan->literals[scan->nliterals - 1].len > scanned_to)
			scan->nliterals--;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(scratch);
}

/* Append n bytes of s to out[*pos], cut at a character to fit outsize. */
static bool
append(char *out, int outsize, int *pos, const char *s, int n)
{
	int			room = outsize - 1 - *pos;

	if (n > room)
	{
		n = pg_mbcliplen(s, n, room);
		memcpy(out + *pos, s, n);
		*pos += n;
		return false;
	}
	memcpy(out + *pos, s, n);
	*pos += n;
	return true;
}

char *
pgc_savepoint_pattern(const char *source_text, int location, int len)
{
	const char *stmt = source_text + Max(location, 0);
	int			last_start = -1;
	int			last_end = -1;

	if (len <= 0)
		len = strlen(stmt);
	for (int i = 0; i < len; i++)
	{
		if (stmt[i] >= '0' && stmt[i] <= '9')
		{
			if (i == 0 || stmt[i - 1] < '0' || stmt[i - 1] > '9')
				last_start = i;
			last_end = i + 1;
		}
	}
	if (last_start < 0)
		return pnstrdup(stmt, len);
	return psprintf("%.*s<n>%.*s", last_start, stmt, len - last_end, stmt + last_end);
}

void
pgc_normalize_query(const char *source_text, int location, int len,
					char *out, int outsize)
{
	PgcScan		scan;
	int			pos = 0;
	int			from = 0;
	bool		room = true;

	if (outsize <= 0)
		return;
	out[0] = '\0';
	if (source_text == NULL)
		return;
	statement_slice(source_text, location, len, &scan.text, &scan.len);
	scan_statement(&scan, outsize - 1);

	/*
	 * A prepared statement's executions carry the PREPARE's text (before
	 * PostgreSQL 18): the statement is its body, as a driver's Parse
	 * message sends it, so that a DBA's PREPARE and the application's
	 * protocol-level statement of the same query id read alike.
	 */
	from = scan.body_start;

	for (int i = 0; i < scan.nliterals && room; i++)
	{
		char		param[16];
		int			n;

		room = append(out, outsize, &pos, scan.text + from,
					  scan.literals[i].start - from);
		n = snprintf(param, sizeof(param), "$%d", scan.max_param + 1 + i);
		if (room)
			room = append(out, outsize, &pos, param, n);
		from = scan.literals[i].start + scan.literals[i].len;
	}
	if (room)
		append(out, outsize, &pos, scan.text + from, scan.len - from);
	out[pos] = '\0';
	pfree(scan.literals);
}

/*
 * Append "s" to out (PGC_LITERALS_LEN bytes, *pos used); once it does not
 * fit, end out with "..." at a character boundary and return false.
 */
static bool
append_literal_text(char *out, int *pos, const char *s, int n)
{
	const int	limit = PGC_LITERALS_LEN - 1;

	if (*pos + n <= limit)
	{
		memcpy(out + *pos, s, n);
		*pos += n;
		out[*pos] = '\0';
		return true;
	}
	if (*pos + 3 <= limit)
	{
		int			fit = pg_mbcliplen(s, n, limit - 3 - *pos);

		memcpy(out + *pos, s, fit);
		*pos += fit;
	}
	else
		*pos = pg_mbcliplen(out, *pos, limit - 3);
	memcpy(out + *pos, "...", 3);
	*pos += 3;
	out[*pos] = '\0';
	return false;
}

void
pgc_execution_literals(QueryDesc *queryDesc, char *out)
{
	int			pos = 0;
	bool		room = true;
	PlannedStmt *stmt = queryDesc->plannedstmt;

	out[0] = '\0';

	/*
	 * Bind parameters (extended protocol, EXECUTE): the server's own log
	 * format, "$1 = '42', $2 = NULL".  NULL where it cannot be built (a
	 * parameter fetch hook, PL/pgSQL's) or in an aborted transaction.
	 */
	if (queryDesc->params != NULL && queryDesc->params->numParams > 0)
	{
		char	   *params = BuildParamLogString(queryDesc->params, NULL,
												 PGC_LITERALS_LEN);

		if (params != NULL)
		{
			room = append_literal_text(out, &pos, params, strlen(params));
			pfree(params);
		}
	}

	/* The literals of the text, numbered as its normalised text numbers them. */
	if (room && queryDesc->sourceText != NULL)
	{
		PgcScan		scan;

		statement_slice(queryDesc->sourceText,
						stmt ? stmt->stmt_location : -1,
						stmt ? stmt->stmt_len : 0, &scan.text, &scan.len);
		scan_statement(&scan, pgc_max_query_length - 1);
		for (int i = 0; i < scan.nliterals && room; i++)
		{
			char		head[24];
			int			n;

			n = snprintf(head, sizeof(head), "%s$%d = ", pos > 0 ? ", " : "",
						 scan.max_param + 1 + i);
			room = append_literal_text(out, &pos, head, n);
			if (room)
				room = append_literal_text(out, &pos,
										   scan.text + scan.literals[i].start,
										   scan.literals[i].len);
		}
		pfree(scan.literals);
	}
}
