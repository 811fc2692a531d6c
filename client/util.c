/*-------------------------------------------------------------------------
 *
 * util.c
 *		Growing strings, HTML and JSON escaping, and numbers as a DBA reads
 *		them, for the pg_contention client.
 *
 * Allocation failure ends the program with a message (exit 3): the client
 * holds a few hundred kilobytes at most.
 *
 *-------------------------------------------------------------------------
 */
#include "client.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Text into HTML element content or a quoted attribute. */
void
buf_html(Buf *b, const char *s)
{
	for (; s && *s; s++)
	{
		switch (*s)
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
			default:
				buf_appendn(b, s, 1);
		}
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
	for (; *s; s++)
	{
		unsigned char ch = (unsigned char) *s;

		if (ch == '"' || ch == '\\')
		{
			buf_appendn(b, "\\", 1);
			buf_appendn(b, s, 1);
		}
		else if (ch == '\n')
			buf_append(b, "\\n");
		else if (ch == '\t')
			buf_append(b, "\\t");
		else if (ch == '\r')
			buf_append(b, "\\r");
		else if (ch < 0x20)
			buf_printf(b, "\\u%04x", ch);
		else
			buf_appendn(b, s, 1);
	}
	buf_append(b, "\"");
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
		/* Nor any other control character (a terminal's escapes). */
		*w++ = ((unsigned char) *r < 0x20 || *r == 0x7f) ? '?' : *r;
	}
	if (w > s && w[-1] == ' ')
		w--;
	*w = '\0';
}

int
display_width(const char *s)
{
	int			n = 0;

	for (; s && *s; s++)
		if (((unsigned char) *s & 0xC0) != 0x80)
			n++;
	return n;
}

/*
 * Append s cut to width code points (ending in "~" when cut), padded with
 * spaces to width when pad.
 */
void
buf_fit(Buf *b, const char *s, int width, bool pad)
{
	int			shown = 0;
	const char *p = s ? s : "";
	bool		cut = display_width(p) > width;
	int			room = cut ? width - 1 : width;

	if (width <= 0)
		return;
	while (*p && shown < room)
	{
		const char *start = p++;

		while (((unsigned char) *p & 0xC0) == 0x80)
			p++;
		buf_appendn(b, start, (size_t) (p - start));
		shown++;
	}
	if (cut)
	{
		buf_append(b, "~");
		shown++;
	}
	while (pad && shown++ < width)
		buf_append(b, " ");
}
