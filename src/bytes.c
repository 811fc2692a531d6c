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
 * outside [data, data + len), whatever the bytes say.
 *
 * Both are sticky on failure and never raise an ERROR: the reader's
 * failed flag, the writer's error (an errno).  After a failure every call
 * does nothing, so callers test once, at the end.  The writer must not
 * raise errors because the postmaster uses it at exit, where an ERROR
 * would become a FATAL.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <unistd.h>

/* ---- reading ---- */

void
pgc_reader_init(PgcReader *reader, const char *data, Size len)
{
	reader->data = data;
	reader->len = len;
	reader->pos = 0;
	reader->failed = false;
}

bool
pgc_read_bytes(PgcReader *reader, void *dest, Size n)
{
	if (reader->failed || n > reader->len - reader->pos)
	{
		reader->failed = true;
		return false;
	}
	memcpy(dest, reader->data + reader->pos, n);
	reader->pos += n;
	return true;
}

/*
 * A text written as its length and bytes, into dest (destsize bytes,
 * always NUL-terminated).  A text longer than a smaller max_query_length
 * now allows is cut, and the cut moved back off UTF-8 continuation bytes:
 * the postmaster reading it has no database encoding to ask.
 */
bool
pgc_read_text(PgcReader *reader, char *dest, int destsize)
{
	uint32		len;
	const char *src;
	Size		copy;

	Assert(destsize > 0);
	if (!pgc_read_bytes(reader, &len, sizeof(len)) ||
		len > reader->len - reader->pos)
	{
		reader->failed = true;
		return false;
	}
	src = reader->data + reader->pos;
	copy = Min((Size) len, (Size) (destsize - 1));
	if (copy < len)
		while (copy > 0 && ((unsigned char) src[copy] & 0xC0) == 0x80)
			copy--;
	memcpy(dest, src, copy);
	dest[copy] = '\0';
	reader->pos += len;
	return true;
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
