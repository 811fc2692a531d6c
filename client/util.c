/*-------------------------------------------------------------------------
 *
 * util.c
 *		Growing strings, HTML and JSON escaping, and numbers as a DBA reads
 *		them, for the pg_contention client.
 *
 * Every string from the server is untrusted (query texts, names, error
 * messages): it reaches the output only through the functions here, which
 * show control characters (C0, DEL, C1), bidirectional controls and bytes
 * that are not UTF-8 visibly escaped ("\x1b", "\u202e", "\xff"), and
 * count widths in screen columns (wcwidth: LC_CTYPE is the user's).  In a
 * locale whose character set is not UTF-8, everything beyond ASCII is
 * shown as \uXXXX: such a terminal could take bytes of UTF-8 for its own
 * control codes (0x9b is CSI on an 8-bit terminal).
 *
 * Allocation failure ends the program with a message (exit 3): the client
 * holds a few hundred kilobytes at most.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <langinfo.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

static const char *progname = "pg_contention";

void
progname_set(const char *name)
{
	const char *slash = strrchr(name, '/');

	progname = slash ? slash + 1 : name;
}

const char *
progname_get(void)
{
	return progname;
}

void
fatal(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_UNKNOWN);
}

void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

char *
xstrdup(const char *s)
{
	size_t		n = strlen(s ? s : "");
	char	   *p = xmalloc(n + 1);

	memcpy(p, s ? s : "", n + 1);
	return p;
}

void
buf_init(Buf *b)
{
	b->cap = 256;
	b->len = 0;
	b->data = xmalloc(b->cap);
	b->data[0] = '\0';
}

void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_reset(Buf *b)
{
	b->len = 0;
	b->data[0] = '\0';
}

static void
buf_reserve(Buf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return;
	while (b->len + more + 1 > b->cap)
		b->cap *= 2;
	b->data = realloc(b->data, b->cap);
	if (b->data == NULL)
		fatal("out of memory");
}

void
buf_appendn(Buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
buf_append(Buf *b, const char *s)
{
	buf_appendn(b, s, strlen(s));
}

void
buf_printf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_reserve(b, (size_t) n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
}

/* ---- server text: what a character is, and how it is shown ---- */

static bool ascii_only = true;	/* until text_init() says otherwise */

/* After setlocale(): UTF-8 out only if the locale's character set is. */
void
text_init(void)
{
	ascii_only = strcmp(nl_langinfo(CODESET), "UTF-8") != 0;
}

/*
 * The code point of the well-formed UTF-8 sequence at s, its length in
 * *len; -1 (and *len = 1) for a byte that does not start one: a stray
 * continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or a
 * sequence cut short (by the string's end too).
 */
static int
utf8_decode(const char *str, int *len)
{
	const unsigned char *s = (const unsigned char *) str;
	int			n,
				cp,
				min;

	*len = 1;
	if (s[0] < 0x80)
		return s[0];
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
	{
		n = 2;
		cp = s[0] & 0x1F;
		min = 0x80;
	}
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
	{
		n = 3;
		cp = s[0] & 0x0F;
		min = 0x800;
	}
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
	{
		n = 4;
		cp = s[0] & 0x07;
		min = 0x10000;
	}
	else
		return -1;
	for (int i = 1; i < n; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return -1;			/* the NUL terminator stops here too */
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	*len = n;
	return cp;
}

/*
 * Characters that are never shown as themselves: C1 controls, and those
 * that reorder or break the text around them (bidirectional embeddings,
 * overrides, isolates and marks; the line and paragraph separators).
 */
static bool
is_hidden_control(int cp)
{
	return (cp >= 0x80 && cp <= 0x9F) ||
		cp == 0x061C || cp == 0x200E || cp == 0x200F ||
		(cp >= 0x2028 && cp <= 0x202E) ||
		(cp >= 0x2066 && cp <= 0x2069);
}

static int
escape_code_point(char *out, int cp)
{
	return snprintf(out, 16, cp > 0xFFFF ? "\\U%08x" : "\\u%04x", cp);
}

/*
 * One unit of server text as a terminal or a plain-text file shows it:
 * into out (NUL-terminated, at most 16 bytes) the character itself, or an
 * escape in plain ASCII; into *width its screen columns.  Returns the bytes
 * of s it stands for (at least 1; s must not be at its end).  An escape is
 * one unit: a cut line never ends inside one, or inside a character.
 */
static int
text_unit(const char *s, char *out, int *width)
{
	unsigned char c = (unsigned char) *s;
	int			len;
	int			cp;
	int			w;

	if (c < 0x20 || c == 0x7F)
	{
		*width = snprintf(out, 16, "\\x%02x", c);
		return 1;
	}
	if (c < 0x80)
	{
		out[0] = (char) c;
		out[1] = '\0';
		*width = 1;
		return 1;
	}
	cp = utf8_decode(s, &len);
	if (cp < 0)
	{
		*width = snprintf(out, 16, "\\x%02x", c);
		return 1;
	}
	w = (ascii_only || is_hidden_control(cp)) ? -1 : wcwidth((wchar_t) cp);
	if (w < 0)
	{
		/* Also what this locale cannot print (unassigned, say). */
		*width = escape_code_point(out, cp);
		return len;
	}
	memcpy(out, s, len);
	out[len] = '\0';
	*width = w;
	return len;
}

/*
 * Append server text as text_unit() shows it.  keep_lines: newlines and
 * tabs stay (a multi-line report); no_pipe: "|" becomes "\x7c" (the
 * monitoring-plugin format starts performance data at one).
 */
static void
buf_text_with(Buf *b, const char *s, bool keep_lines, bool no_pipe)
{
	char		out[16];
	int			w;

	while (s && *s)
	{
		if (keep_lines && (*s == '\n' || *s == '\t'))
		{
			buf_appendn(b, s++, 1);
			continue;
		}
		if (no_pipe && *s == '|')
		{
			buf_append(b, "\\x7c");
			s++;
			continue;
		}
		s += text_unit(s, out, &w);
		buf_append(b, out);
	}
}

void
buf_text(Buf *b, const char *s)
{
	buf_text_with(b, s, false, false);
}

void
buf_text_lines(Buf *b, const char *s)
{
	buf_text_with(b, s, true, false);
}

void
buf_text_plugin(Buf *b, const char *s)
{
	buf_text_with(b, s, false, true);
}

/* A malloc'd copy of s as buf_text() shows it. */
char *
text_shown(const char *s)
{
	Buf			b;

	buf_init(&b);
	buf_text(&b, s);
	return b.data;
}

/*
 * Text into HTML element content or a quoted attribute: the markup
 * characters as entities, controls and bytes that are not UTF-8 escaped
 * as buf_text() does (newlines and tabs stay: HTML shows them as spaces,
 * or as themselves in a <pre>).  Other characters are themselves: the page
 * is UTF-8.  The caller isolates server text from the page's direction
 * (buf_html_isolated()).
 */
void
buf_html(Buf *b, const char *s)
{
	char		out[16];
	int			len;
	int			cp;

	while (s && *s)
	{
		unsigned char c = (unsigned char) *s;

		switch (c)
		{
			case '&':
				buf_append(b, "&amp;");
				break;
			case '<':
				buf_append(b, "&lt;");
				break;
			case '>':
				buf_append(b, "&gt;");
				break;
			case '"':
				buf_append(b, "&quot;");
				break;
			case '\'':
				buf_append(b, "&#39;");
				break;
			case '\n':
			case '\t':
				buf_appendn(b, s, 1);
				break;
			default:
				if (c < 0x20 || c == 0x7F)
					buf_printf(b, "\\x%02x", c);
				else if (c < 0x80)
					buf_appendn(b, s, 1);
				else if ((cp = utf8_decode(s, &len)) < 0)
					buf_printf(b, "\\x%02x", c);
				else
				{
					if (is_hidden_control(cp))
					{
						escape_code_point(out, cp);
						buf_append(b, out);
					}
					else
						buf_appendn(b, s, len);
					s += len;
					continue;
				}
		}
		s++;
	}
}

/* Server text in HTML, in a <bdi>: its direction cannot leak around it. */
void
buf_html_isolated(Buf *b, const char *s)
{
	buf_append(b, "<bdi>");
	buf_html(b, s);
	buf_append(b, "</bdi>");
}

/*
 * The characters of a JSON string literal: controls, DEL, C1 and the
 * bidirectional controls as \uXXXX (the same string, and safe to print); a
 * byte that is not UTF-8 as the text "\xff" (JSON is UTF-8: such a byte
 * has no escape).  quote_backslash: '"' and '\' escaped too (a string we
 * write); without it, a document the server wrote: its white space stays.
 */
static void
buf_json_chars(Buf *b, const char *s, bool quote_backslash)
{
	int			len;
	int			cp;

	while (*s)
	{
		unsigned char ch = (unsigned char) *s;

		if (quote_backslash && (ch == '"' || ch == '\\'))
		{
			buf_appendn(b, "\\", 1);
			buf_appendn(b, s, 1);
		}
		else if (!quote_backslash && (ch == '\n' || ch == '\t' || ch == '\r'))
			buf_appendn(b, s, 1);	/* the document's white space */
		else if (ch == '\n')
			buf_append(b, "\\n");
		else if (ch == '\t')
			buf_append(b, "\\t");
		else if (ch == '\r')
			buf_append(b, "\\r");
		else if (ch < 0x20 || ch == 0x7F)
			buf_printf(b, "\\u%04x", ch);
		else if (ch < 0x80)
			buf_appendn(b, s, 1);
		else if ((cp = utf8_decode(s, &len)) < 0)
			buf_printf(b, "\\\\x%02x", ch);
		else
		{
			if (is_hidden_control(cp))
				buf_printf(b, "\\u%04x", cp);
			else
				buf_appendn(b, s, len);
			s += len;
			continue;
		}
		s++;
	}
}

/* A JSON string literal, quotes included; NULL becomes null. */
void
buf_json_string(Buf *b, const char *s)
{
	if (s == NULL)
	{
		buf_append(b, "null");
		return;
	}
	buf_append(b, "\"");
	buf_json_chars(b, s, true);
	buf_append(b, "\"");
}

/*
 * A JSON document the server wrote (jsonb output: its structure is ASCII,
 * anything else is inside its strings, where our escapes are valid); NULL
 * becomes null.  A database in SQL_ASCII can hand over bytes that are not
 * UTF-8.
 */
void
buf_json_raw(Buf *b, const char *json)
{
	if (json == NULL)
	{
		buf_append(b, "null");
		return;
	}
	buf_json_chars(b, json, false);
}

/*
 * Formatted numbers come from a small ring of static buffers, so a few can
 * be used in one printf.
 */
#define RING 8
static char ring[RING][64];
static int	ring_next = 0;

static char *
ring_buffer(void)
{
	char	   *p = ring[ring_next];

	ring_next = (ring_next + 1) % RING;
	return p;
}

char *
fmt_count(double value)
{
	char	   *out = ring_buffer();
	char		digits[40];
	int			n,
				o = 0;
	bool		negative = value < 0;

	if (isnan(value))
		return strcpy(out, "-");
	snprintf(digits, sizeof(digits), "%.0f", fabs(value));
	n = (int) strlen(digits);
	if (negative)
		out[o++] = '-';
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
	return out;
}

char *
fmt_compact(double value)
{
	char	   *out = ring_buffer();
	double		a = fabs(value);

	if (isnan(value))
		snprintf(out, 64, "-");
	else if (a >= 1e9)
		snprintf(out, 64, "%.1fG", value / 1e9);
	else if (a >= 1e6)
		snprintf(out, 64, "%.1fM", value / 1e6);
	else if (a >= 1e4)
		snprintf(out, 64, "%.0fk", value / 1e3);
	else if (a >= 1e3)
		snprintf(out, 64, "%.1fk", value / 1e3);
	else if (a >= 10 || value == floor(value))
		snprintf(out, 64, "%.0f", value);
	else
		snprintf(out, 64, "%.1f", value);
	return out;
}

char *
fmt_duration(double s)
{
	char	   *out = ring_buffer();
	long		t;

	if (isnan(s) || s < 0)
		return strcpy(out, "-");
	t = (long) (s + 0.5);
	if (t < 60)
		snprintf(out, 64, "%ld s", t);
	else if (t < 600)
		snprintf(out, 64, t % 60 ? "%ld min %ld s" : "%ld min", t / 60, t % 60);
	else if (t < 3600)
		snprintf(out, 64, "%ld min", (t + 30) / 60);
	else if (t < 86400)
		snprintf(out, 64, "%ld h %ld min", t / 3600, (t / 60) % 60);
	else
		snprintf(out, 64, "%ld d %ld h", t / 86400, (t / 3600) % 24);
	return out;
}

char *
fmt_clock(double epoch)
{
	char	   *out = ring_buffer();
	time_t		t = (time_t) epoch;
	struct tm	tm;

	if (isnan(epoch) || localtime_r(&t, &tm) == NULL)
		return strcpy(out, "-");
	strftime(out, 64, "%H:%M:%S", &tm);
	return out;
}

/*
 * White space (newlines, tabs, carriage returns, runs of spaces) to one
 * space, in place; other controls stay for the output to show escaped.
 */
void
one_line(char *s)
{
	char	   *w = s;
	bool		space = false;

	if (s == NULL)
		return;
	for (char *r = s; *r; r++)
	{
		if (*r == '\n' || *r == '\t' || *r == '\r' || *r == ' ')
		{
			if (!space && w != s)
				*w++ = ' ';
			space = true;
			continue;
		}
		space = false;
		*w++ = *r;
	}
	if (w > s && w[-1] == ' ')
		w--;
	*w = '\0';
}

/* Screen columns of s as buf_text() shows it. */
int
display_width(const char *s)
{
	char		out[16];
	int			n = 0;
	int			w;

	while (s && *s)
	{
		s += text_unit(s, out, &w);
		n += w;
	}
	return n;
}

/*
 * Append s as buf_text() shows it, cut to width screen columns (ending in
 * "~" when cut; never inside a character or an escape), padded with spaces
 * to width when pad.
 */
void
buf_fit(Buf *b, const char *s, int width, bool pad)
{
	int			shown = 0;
	const char *p = s ? s : "";
	bool		cut = display_width(p) > width;
	int			room = cut ? width - 1 : width;
	char		out[16];
	int			w;

	if (width <= 0)
		return;
	while (*p)
	{
		int			n = text_unit(p, out, &w);

		if (shown + w > room)
			break;
		buf_append(b, out);
		shown += w;
		p += n;
	}
	if (cut)
	{
		buf_append(b, "~");
		shown++;
	}
	while (pad && shown++ < width)
		buf_append(b, " ");
}

/* The time of day, in seconds since the epoch. */
double
wall_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
