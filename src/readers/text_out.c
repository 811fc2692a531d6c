/*-------------------------------------------------------------------------
 *
 * text_out.c
 *		Texts from every database of the cluster, returned valid in the
 *		reading database's encoding.
 *
 * The stores keep texts as they were captured: query texts in the encoding
 * of the database the statement ran in (cut at a character boundary of
 * that encoding), whichever database reads them later; a SQL_ASCII
 * database can hand over any byte.  The capture path copies bytes and
 * nothing more; the work is done here, when a view is read:
 *
 * - a text of plain ASCII is valid in every server encoding: as it is;
 * - from the reader's own encoding, from SQL_ASCII, from a database
 *   dropped since (its encoding unknown), or read in SQL_ASCII: every
 *   character valid in the reader's encoding as it is, any other byte as
 *   the text \xNN.  Read in SQL_ASCII, the encoding that must hold is the
 *   client's: the server checks what it sends a client against the
 *   client's encoding when it cannot convert, and fails the whole query
 *   on one invalid byte;
 * - from another encoding: converted (PostgreSQL's default conversion,
 *   without raising an error), invalid bytes and characters the reader's
 *   encoding lacks as \xNN, one per byte of the source; with no
 *   conversion between the two (or on PostgreSQL 13), every byte beyond
 *   ASCII as \xNN.
 *
 * Nothing here raises an error on any input.  Owns no shared state and
 * takes no lock of its own: the source database's encoding is read from
 * pg_database (a shared catalog, readable from every database) through the
 * syscache.
 *
 *-------------------------------------------------------------------------
 */
#include "readers.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_database.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

/* The encoding of database dbid, or -1 when unknown (dropped since). */
static int
database_encoding(Oid dbid)
{
	HeapTuple	tup;
	int			encoding = -1;

	if (dbid == MyDatabaseId)
		return GetDatabaseEncoding();
	if (!OidIsValid(dbid))
		return -1;
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dbid));
	if (HeapTupleIsValid(tup))
	{
		encoding = ((Form_pg_database) GETSTRUCT(tup))->encoding;
		ReleaseSysCache(tup);
	}
	return encoding;
}

static void
append_byte_escape(StringInfo buf, const char *s, int n)
{
	for (int i = 0; i < n; i++)
		appendStringInfo(buf, "\\x%02x", (unsigned char) s[i]);
}

/*
 * s[0..len) into buf: each character valid in encoding as it is, every
 * other byte as \xNN (ascii_only: every byte beyond ASCII).
 */
static void
append_valid(StringInfo buf, const char *s, int len, int encoding,
			 bool ascii_only)
{
	while (len > 0)
	{
		int			l;

		if (ascii_only)
			l = IS_HIGHBIT_SET(*s) ? -1 : 1;
		else
			l = pgc_verify_char(encoding, s, len);
		if (l <= 0)
		{
			append_byte_escape(buf, s, 1);
			s++;
			len--;
			continue;
		}
		appendBinaryStringInfo(buf, s, l);
		s += l;
		len -= l;
	}
}

/* s (valid in source) converted into buf, what cannot be as \xNN. */
static void
append_converted(StringInfo buf, Oid proc, int source, int reader,
				 const char *s, int len)
{
	int			destlen = (len + 1) * MAX_CONVERSION_GROWTH + 1;
	char	   *dest = palloc(destlen);

	while (len > 0)
	{
		int			done = pgc_convert_prefix(proc, source, reader, s, len,
											  dest, destlen);

		appendStringInfoString(buf, dest);
		s += done;
		len -= done;
		if (len > 0 && !IS_HIGHBIT_SET(*s))
		{
			/* ASCII, the same in both (where nothing is converted: PG13) */
			appendStringInfoChar(buf, *s);
			s++;
			len--;
		}
		else if (len > 0)
		{
			/* A character the reader's encoding lacks: its bytes. */
			int			l = Min(pg_encoding_mblen(source, s), len);

			append_byte_escape(buf, s, l);
			s += l;
			len -= l;
		}
	}
	pfree(dest);
}

/*
 * The text s, captured in database source_dbid, as a text datum valid in
 * this database's encoding (see the file's comment).
 */
Datum
pgc_text_datum(const char *s, Oid source_dbid)
{
	int			len = strlen(s);
	int			reader;
	int			source;
	Oid			proc;
	StringInfoData buf;
	bool		ascii = true;

	for (int i = 0; i < len && ascii; i++)
		ascii = !IS_HIGHBIT_SET(s[i]);
	if (ascii)
		return PointerGetDatum(cstring_to_text_with_len(s, len));

	reader = GetDatabaseEncoding();
	source = database_encoding(source_dbid);
	if (reader == PG_SQL_ASCII)
		reader = pg_get_client_encoding();
	initStringInfo(&buf);
	if (source == reader || source < 0 || source == PG_SQL_ASCII ||
		reader == PG_SQL_ASCII || GetDatabaseEncoding() == PG_SQL_ASCII)
	{
		if (pg_verify_mbstr(reader, s, len, true))
			return PointerGetDatum(cstring_to_text_with_len(s, len));
		append_valid(&buf, s, len, reader, false);
	}
	else if (!OidIsValid(proc = FindDefaultConversionProc(source, reader)))
		append_valid(&buf, s, len, reader, true);
	else if (pg_verify_mbstr(source, s, len, true))
		append_converted(&buf, proc, source, reader, s, len);
	else
	{
		/* Its invalid bytes escaped first: the escapes are ASCII. */
		StringInfoData valid;

		initStringInfo(&valid);
		append_valid(&valid, s, len, source, false);
		append_converted(&buf, proc, source, reader, valid.data, valid.len);
		pfree(valid.data);
	}
	return PointerGetDatum(cstring_to_text_with_len(buf.data, buf.len));
}

/* A text only some may read: pgc_text_datum, or "<insufficient privilege>". */
Datum
pgc_masked_text_datum(bool visible, const char *s, Oid source_dbid)
{
	if (!visible)
		return CStringGetTextDatum("<insufficient privilege>");
	return pgc_text_datum(s, source_dbid);
}
