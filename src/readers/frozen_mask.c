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
 * (query id and state NULL) for every other row; a row without a role
 * (frozen before its role was kept, or a damaged one) is another role's.
 * Nothing else of the row is hidden: what the live views show everyone
 * (pids, application names, ages, figures) is shown here too.
 *
 * Owns no shared state and takes no lock: it works on a copy of the
 * frozen document, made by the view's reader.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#define MASKED_TEXT "<insufficient privilege>"

/* The key of an object member, as a JsonbValue. */
static JsonbValue
string_value(const char *s)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = strlen(s);
	return v;
}

/* Is a member's key this name? */
static bool
key_is(const JsonbValue *key, const char *name)
{
	return key->type == jbvString && key->val.string.len == (int) strlen(name) &&
		memcmp(key->val.string.val, name, key->val.string.len) == 0;
}

/*
 * The role of a frozen row: its "userid" member, a whole number in the
 * range of an oid, as a JSON number or string (jsonb writes an oid as a
 * string); InvalidOid if it has none (or not such a number).
 */
static Oid
row_role(JsonbContainer *row)
{
	JsonbValue	key = string_value("userid");
	JsonbValue *v = findJsonbValueFromContainer(row, JB_FOBJECT, &key);
	char	   *digits;
	char	   *end;
	unsigned long long n;

	if (v != NULL && v->type == jbvNumeric)
		digits = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	else if (v != NULL && v->type == jbvString && v->val.string.len > 0 && v->val.string.len < 16)
		digits = pnstrdup(v->val.string.val, v->val.string.len);
	else
		return InvalidOid;
	if (digits[0] < '0' || digits[0] > '9')
		return InvalidOid;
	errno = 0;
	n = strtoull(digits, &end, 10);
	if (errno != 0 || *end != '\0' || n > PG_UINT32_MAX)
		return InvalidOid;
	return (Oid) n;
}

/*
 * Push one frozen row (an object) into state: whole if the reader may see
 * its role's details, else with its text masked and its query id and state
 * NULL.
 */
static void
push_row(JsonbParseState **state, JsonbContainer *row)
{
	bool		visible = pgc_can_see_details(row_role(row));
	JsonbIterator *it = JsonbIteratorInit(row);
	JsonbValue	v;
	JsonbIteratorToken tok;
	const char *replace = NULL; /* the masked member's new value */
	bool		to_null = false;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			replace = NULL;
			to_null = false;
			if (!visible && key_is(&v, "query"))
				replace = MASKED_TEXT;
			else if (!visible && (key_is(&v, "query_id") || key_is(&v, "state")))
				to_null = true;
			pushJsonbValue(state, tok, &v);
		}
		else if (tok == WJB_VALUE && (replace != NULL || to_null))
		{
			JsonbValue	masked;

			if (to_null)
				masked.type = jbvNull;
			else
				masked = string_value(replace);
			pushJsonbValue(state, tok, &masked);
		}
		else
			pushJsonbValue(state, tok, tok == WJB_BEGIN_OBJECT || tok == WJB_END_OBJECT ? NULL : &v);
	}
}

/* Push an array of frozen rows, each masked for the reader. */
static void
push_rows(JsonbParseState **state, JsonbContainer *rows)
{
	uint32		n = JsonContainerSize(rows);

	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	for (uint32 i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(rows, i);

		if (e->type == jbvBinary && JsonContainerIsObject(e->val.binary.data))
			push_row(state, e->val.binary.data);
		/* A row that is no object is not ours: left out. */
	}
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
}

/*
 * The frozen document (a JSON object: "statements", "holders", "history"
 * and flags) as the current user may read it, as text.  The caller checked
 * it is valid JSON.
 */
char *
pgc_mask_frozen(const char *frozen)
{
	Jsonb	   *doc = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(frozen)));
	JsonbParseState *state = NULL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbValue *result = NULL;
	JsonbIteratorToken tok;
	bool		rows_next = false;
	Jsonb	   *masked;

	if (!JB_ROOT_IS_OBJECT(doc))
		return pstrdup("{}");
	it = JsonbIteratorInit(&doc->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			rows_next = key_is(&v, "statements") || key_is(&v, "holders");
			result = pushJsonbValue(&state, tok, &v);
		}
		else if (tok == WJB_VALUE && rows_next && v.type == jbvBinary &&
				 JsonContainerIsArray(v.val.binary.data))
			push_rows(&state, v.val.binary.data);
		else
			result = pushJsonbValue(&state, tok,
									tok == WJB_BEGIN_OBJECT || tok == WJB_END_OBJECT ? NULL : &v);
	}
	masked = JsonbValueToJsonb(result);
	return JsonbToCString(NULL, &masked->root, VARSIZE(masked));
}
