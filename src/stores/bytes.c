/*-------------------------------------------------------------------------
 *
 * bytes.c
 *		Reading and writing the records of the stores' file (persist.c): a
 *		bounded reader over bytes in memory, and a writer that streams to a
 *		file descriptor through a buffer of fixed size while it keeps a
 *		running CRC-32C of everything written.  A text is written as its
 *		length (uint32) and its bytes, without the NUL.
 *
 * Owns no shared state and takes no locks.  It calls nothing else of the
 * extension and reads none of its settings (pg_contention.h only declares
 * it), so it can be tested or fuzzed alone: the reader never reads
 * outside its section, whatever the bytes say, and reads a file through a
 * buffer of fixed size (never the whole file into memory).  The checks
 * (pgc_fix_*) clamp what a loading store finds implausible and count it,
 * and pgc_keep_largest lets a store that is smaller than the file keep
 * the most used of its records in its own memory.
 *
 * Both are sticky on failure and never raise an ERROR: the reader's
 * failed flag, the writer's error (an errno).  After a failure every call
 * does nothing, so callers test once, at the end.  The writer must not
 * raise errors because the postmaster uses it at exit, where an ERROR
 * would become a FATAL.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

#include <unistd.h>

/* ---- reading ---- */

/* heap[] as an array of elem_size bytes: the element at i. */
#define HEAP_ELEM(i)	((char *) heap + (i) * elem_size)

static void
swap_elements(char *a, char *b, Size elem_size)
{
	for (Size k = 0; k < elem_size; k++)
	{
		char		t = a[k];

		a[k] = b[k];
		b[k] = t;
	}
}

/*
 * Keep the max_n largest elements of a stream (by less(a, b): a is the
 * smaller) in heap[], a binary heap with the least at the root, in place:
 * offer each element with the count kept so far, get the new count.  A
 * loader whose store is smaller than the file keeps the file's most used
 * records this way, in the store's own memory.
 */
uint64
pgc_keep_largest(void *heap, uint64 n, uint64 max_n, Size elem_size,
				 const void *elem, bool (*less) (const void *, const void *))
{
	uint64		i;

	if (n < max_n)
	{
		/* Room left: add it, then up while it is less than its parent. */
		memcpy(HEAP_ELEM(n), elem, elem_size);
		for (i = n; i > 0 && less(HEAP_ELEM(i), HEAP_ELEM((i - 1) / 2)); i = (i - 1) / 2)
			swap_elements(HEAP_ELEM(i), HEAP_ELEM((i - 1) / 2), elem_size);
		return n + 1;
	}
	if (n == 0 || !less(HEAP_ELEM(0), elem))
		return n;

	/* It replaces the least, then goes down to its place. */
	memcpy(HEAP_ELEM(0), elem, elem_size);
	for (i = 0;;)
	{
		uint64		least = i;
		uint64		l = 2 * i + 1;
		uint64		r = l + 1;

		if (l < n && less(HEAP_ELEM(l), HEAP_ELEM(least)))
			least = l;
		if (r < n && less(HEAP_ELEM(r), HEAP_ELEM(least)))
			least = r;
		if (least == i)
			return n;
		swap_elements(HEAP_ELEM(i), HEAP_ELEM(least), elem_size);
		i = least;
	}
}

void
pgc_reader_init(PgcReader *reader, const char *data, Size len)
{
	memset(reader, 0, sizeof(PgcReader));
	reader->data = data;
	reader->fd = -1;
	reader->len = len;
	reader->time_limit = DT_NOEND;
}

/*
 * A reader of len bytes of the file open on fd, from offset base, through
 * buffer (bufsize bytes, the caller's until the end): memory does not
 * grow with the file.
 */
void
pgc_reader_init_file(PgcReader *reader, int fd, uint64 base, Size len,
					 char *buffer, Size bufsize)
{
	Assert(bufsize > 0);
	pgc_reader_init(reader, NULL, len);
	reader->fd = fd;
	reader->base = base;
	reader->buf = buffer;
	reader->bufsize = bufsize;
}

/* Fill the buffer from pos; false (and failed) on a read error. */
static bool
fill_buffer(PgcReader *reader)
{
	Size		want = Min(reader->bufsize, reader->len - reader->pos);
	Size		done = 0;

	while (done < want)
	{
		ssize_t		n = pg_pread(reader->fd, reader->buf + done, want - done,
								 (off_t) (reader->base + reader->pos + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			reader->failed = true;
			reader->buf_len = 0;
			return false;
		}
		done += n;
	}
	reader->buf_pos = reader->pos;
	reader->buf_len = done;
	return true;
}

bool
pgc_read_bytes(PgcReader *reader, void *dest, Size n)
{
	char	   *out = dest;

	if (reader->failed || n > reader->len - reader->pos)
	{
		reader->failed = true;
		return false;
	}
	if (reader->fd < 0)
	{
		memcpy(dest, reader->data + reader->pos, n);
		reader->pos += n;
		return true;
	}
	while (n > 0)
	{
		Size		chunk;

		if (reader->pos < reader->buf_pos ||
			reader->pos >= reader->buf_pos + reader->buf_len)
		{
			if (!fill_buffer(reader))
				return false;
		}
		chunk = Min(n, reader->buf_pos + reader->buf_len - reader->pos);
		memcpy(out, reader->buf + (reader->pos - reader->buf_pos), chunk);
		out += chunk;
		reader->pos += chunk;
		n -= chunk;
	}
	return true;
}

/* Go to pos (at most len); false (and failed) beyond the end. */
bool
pgc_reader_seek(PgcReader *reader, Size pos)
{
	if (reader->failed || pos > reader->len)
	{
		reader->failed = true;
		return false;
	}
	reader->pos = pos;
	return true;
}

/*
 * A text written as its length and bytes, into dest (destsize bytes,
 * always NUL-terminated).  A text longer than a smaller max_query_length
 * now allows is cut, and the cut moved back off UTF-8 continuation bytes:
 * the postmaster reading it has no database encoding to ask.  A length
 * beyond the section fails the reader; only destsize bytes are ever read.
 */
bool
pgc_read_text(PgcReader *reader, char *dest, int destsize)
{
	uint32		len;
	Size		start;
	Size		copy;

	Assert(destsize > 0);
	if (!pgc_read_bytes(reader, &len, sizeof(len)) ||
		len > reader->len - reader->pos)
	{
		reader->failed = true;
		return false;
	}
	start = reader->pos;
	copy = Min((Size) len, (Size) (destsize - 1));
	/* One byte more when cut: is the first byte left out a continuation? */
	if (!pgc_read_bytes(reader, dest, copy < len ? copy + 1 : copy))
		return false;
	if (copy < len)
		while (copy > 0 && ((unsigned char) dest[copy] & 0xC0) == 0x80)
			copy--;
	dest[copy] = '\0';
	return pgc_reader_seek(reader, start + len);
}

/* ---- checking what was read ---- */

/*
 * Each returns whether the value was plausible and counts in reader->fixed
 * the ones it clamped (or the caller skips).  A counter is in
 * [0, PGC_COUNTER_MAX]; a timestamp is 0 (none) or after 2000-01-01 and
 * no later than time_limit.
 */
bool
pgc_fix_counter(PgcReader *reader, int64 *value)
{
	if (*value >= 0 && *value <= PGC_COUNTER_MAX)
		return true;
	*value = *value < 0 ? 0 : PGC_COUNTER_MAX;
	reader->fixed++;
	return false;
}

bool
pgc_fix_int32(PgcReader *reader, int32 *value, int32 min, int32 max)
{
	if (*value >= min && *value <= max)
		return true;
	*value = *value < min ? min : max;
	reader->fixed++;
	return false;
}

/* An implausible time becomes 0 (none). */
bool
pgc_fix_time(PgcReader *reader, TimestampTz *value)
{
	if (*value == 0 || (*value > 0 && *value <= reader->time_limit))
		return true;
	*value = 0;
	reader->fixed++;
	return false;
}

/* A fixed-size string read from the file always ends within its size. */
void
pgc_fix_string(char *value, Size size)
{
	value[size - 1] = '\0';
}

/* ---- writing ---- */

/* buffer: bufsize bytes the caller allocated and keeps until the end. */
void
pgc_writer_init(PgcWriter *writer, int fd, char *buffer, Size bufsize)
{
	Assert(bufsize > 0);
	writer->fd = fd;
	writer->buf = buffer;
	writer->bufsize = bufsize;
	writer->used = 0;
	writer->flushed = 0;
	writer->error = 0;
	INIT_CRC32C(writer->crc);
}

/* Mark the writer failed (first error wins); errno_value must be nonzero. */
void
pgc_writer_fail(PgcWriter *writer, int errno_value)
{
	if (writer->error == 0)
		writer->error = errno_value;
}

/* Hand the buffer to the kernel; a short write with no errno is ENOSPC. */
bool
pgc_writer_flush(PgcWriter *writer)
{
	Size		done = 0;

	if (writer->error != 0)
		return false;
	while (done < writer->used)
	{
		ssize_t		n;

		errno = 0;
		n = write(writer->fd, writer->buf + done, writer->used - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			pgc_writer_fail(writer, errno != 0 ? errno : ENOSPC);
			return false;
		}
		done += n;
	}
	writer->flushed += writer->used;
	writer->used = 0;
	return true;
}

void
pgc_write_bytes(PgcWriter *writer, const void *data, Size n)
{
	const char *src = data;

	if (writer->error != 0)
		return;
	COMP_CRC32C(writer->crc, src, n);
	while (n > 0)
	{
		Size		chunk = Min(n, writer->bufsize - writer->used);

		memcpy(writer->buf + writer->used, src, chunk);
		writer->used += chunk;
		src += chunk;
		n -= chunk;
		if (writer->used == writer->bufsize && !pgc_writer_flush(writer))
			return;
	}
}

void
pgc_write_text(PgcWriter *writer, const char *text)
{
	uint32		len = (uint32) strlen(text);

	pgc_write_bytes(writer, &len, sizeof(len));
	pgc_write_bytes(writer, text, len);
}

/* Bytes written so far, the buffered ones included: the file's offset. */
uint64
pgc_writer_position(const PgcWriter *writer)
{
	return writer->flushed + writer->used;
}

/* The CRC-32C of everything written so far. */
pg_crc32c
pgc_writer_crc(const PgcWriter *writer)
{
	pg_crc32c	crc = writer->crc;

	FIN_CRC32C(crc);
	return crc;
}
