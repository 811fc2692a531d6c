/*-------------------------------------------------------------------------
 *
 * persist.c
 *		The stores' file: events, statements (with their index counters),
 *		the wait profile and the history are written to
 *		pg_stat/pg_contention.stat at shutdown by the postmaster and every
 *		pg_contention.save_interval by the sampler, and read back when the
 *		postmaster creates shared memory: at start, and after a crash.
 *
 * The file: a header (magic, format version, PostgreSQL major version,
 * when it was written, the last reset, the stores' sizes then), then one
 * section per store (its id, the size of its fixed record part, the record
 * count, its bytes), then a CRC-32C of everything before it.  Each store writes and reads its
 * own records (pgc_*_save, pgc_*_load); a record is the store's fixed part
 * and, for events and statements, the text's length and bytes.  It is
 * written to a temporary name, flushed and renamed, so a crash while
 * writing leaves the previous file.  A file that is missing, short,
 * corrupt, or of another format or major version is ignored with one LOG
 * line; a section with records of another size is skipped; a store
 * smaller than the file keeps what fits, and says so.  Nothing here can
 * stop the server from starting.
 *
 * Owns the "when saved, when loaded" header (ShmemInitStruct "pg_contention
 * persistence", under its spinlock).  Locking: the sampler saves with
 * each store's lock taken in shared mode while that store copies itself;
 * the postmaster saves at shutdown, when no other process is left, and
 * loads before any exists, so it takes none (it has no PGPROC to wait on
 * an LWLock with).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#define PGC_SAVE_FILE		"pg_stat/pg_contention.stat"
#define PGC_SAVE_FILE_TMP	PGC_SAVE_FILE ".tmp"
#define PGC_FILE_MAGIC		0x50474331	/* "PGC1" */
#define PGC_FILE_FORMAT		1

typedef struct FileHeader
{
	uint32		magic;
	uint32		format;
	uint32		pg_major;		/* PGC_PG_MAJOR_VERSION */
	uint32		nsections;
	TimestampTz saved_at;
	TimestampTz stats_reset;
	/* The sizes of the stores that wrote it (a smaller server keeps less). */
	int32		max_events;
	int32		max_statements;
	int32		max_profile_entries;
	int32		history_seconds;
	int32		max_query_length;
	int32		padding;
} FileHeader;

typedef struct SectionHeader
{
	uint32		id;
	uint32		record_size;	/* the fixed part of a record */
	uint64		count;
	uint64		bytes;			/* of records that follow */
} SectionHeader;

typedef struct PersistShared
{
	slock_t		mutex;
	TimestampTz last_saved;		/* 0: never */
	TimestampTz last_loaded;	/* 0: nothing loaded at start */
	TimestampTz loaded_saved_at;	/* when the loaded file was written */
} PersistShared;

static PersistShared *persist = NULL;

/* The stores, in file order.  Their ids never change meaning. */
typedef struct PersistedStore
{
	uint32		id;
	const char *name;
	uint32		(*record_size) (void);
	void		(*save) (StringInfo buf, bool take_locks, uint64 *count);
	void		(*load) (PgcReader *reader, uint64 count, uint64 *kept);
} PersistedStore;

static const PersistedStore persisted[] = {
	{1, "overflow events", pgc_events_record_size, pgc_events_save, pgc_events_load},
	{2, "statements", pgc_statements_record_size, pgc_statements_save, pgc_statements_load},
	{3, "wait profile entries", pgc_profile_record_size, pgc_profile_save, pgc_profile_load},
	{4, "seconds of history", pgc_history_record_size, pgc_history_save, pgc_history_load},
};

Size
pgc_persist_shmem_size(void)
{
	return sizeof(PersistShared);
}

/* Called under AddinShmemInitLock. */
void
pgc_persist_shmem_init(LWLock *lock)
{
	bool		found;

	persist = ShmemInitStruct("pg_contention persistence", sizeof(PersistShared),
							  &found);
	if (!found)
	{
		SpinLockInit(&persist->mutex);
		persist->last_saved = 0;
		persist->last_loaded = 0;
		persist->loaded_saved_at = 0;
	}
}

void
pgc_persist_info(TimestampTz *last_saved, TimestampTz *last_loaded,
				 TimestampTz *loaded_saved_at)
{
	SpinLockAcquire(&persist->mutex);
	*last_saved = persist->last_saved;
	*last_loaded = persist->last_loaded;
	*loaded_saved_at = persist->loaded_saved_at;
	SpinLockRelease(&persist->mutex);
}

/* ---- reading a bounded buffer ---- */

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

void
pgc_write_text(StringInfo buf, const char *text)
{
	uint32		len = (uint32) strlen(text);

	appendBinaryStringInfo(buf, (const char *) &len, sizeof(len));
	appendBinaryStringInfo(buf, text, len);
}

/* ---- save ---- */

/*
 * Write every store to the file.  take_locks: false only in the postmaster
 * at shutdown, when nobody else is left.  Errors in writing are reported
 * at LOG level and leave the previous file; they never raise an ERROR
 * (the sampler must keep sampling, the postmaster must exit).
 */
void
pgc_persist_save(bool take_locks)
{
	StringInfoData buf;
	FileHeader	header;
	pg_crc32c	crc;
	int			fd;
	TimestampTz now = GetCurrentTimestamp();

	initStringInfo(&buf);
	memset(&header, 0, sizeof(header));
	header.magic = PGC_FILE_MAGIC;
	header.format = PGC_FILE_FORMAT;
	header.pg_major = PGC_PG_MAJOR_VERSION;
	header.nsections = lengthof(persisted);
	header.saved_at = now;
	header.stats_reset = pgc_stats_reset_time();
	header.max_events = pgc_max_events;
	header.max_statements = pgc_max_statements;
	header.max_profile_entries = pgc_max_profile_entries;
	header.history_seconds = pgc_history_seconds;
	header.max_query_length = pgc_max_query_length;
	appendBinaryStringInfo(&buf, (const char *) &header, sizeof(header));

	for (int i = 0; i < lengthof(persisted); i++)
	{
		SectionHeader section;
		int			at = buf.len;
		uint64		count = 0;

		memset(&section, 0, sizeof(section));
		appendBinaryStringInfo(&buf, (const char *) &section, sizeof(section));
		persisted[i].save(&buf, take_locks, &count);
		section.id = persisted[i].id;
		section.record_size = persisted[i].record_size();
		section.count = count;
		section.bytes = buf.len - at - sizeof(section);
		memcpy(buf.data + at, &section, sizeof(section));
	}

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf.data, buf.len);
	FIN_CRC32C(crc);
	appendBinaryStringInfo(&buf, (const char *) &crc, sizeof(crc));

	fd = OpenTransientFile(PGC_SAVE_FILE_TMP, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not create \"%s\": %m", PGC_SAVE_FILE_TMP)));
		pfree(buf.data);
		return;
	}
	errno = 0;
	if (write(fd, buf.data, buf.len) != buf.len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not write \"%s\": %m", PGC_SAVE_FILE_TMP)));
		CloseTransientFile(fd);
		unlink(PGC_SAVE_FILE_TMP);
		pfree(buf.data);
		return;
	}
	if (pg_fsync(fd) != 0 || CloseTransientFile(fd) != 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not flush \"%s\": %m", PGC_SAVE_FILE_TMP)));
		unlink(PGC_SAVE_FILE_TMP);
		pfree(buf.data);
		return;
	}
	/* durable_rename fsyncs the directory too; LOG, not ERROR, on failure. */
	if (durable_rename(PGC_SAVE_FILE_TMP, PGC_SAVE_FILE, LOG) != 0)
	{
		unlink(PGC_SAVE_FILE_TMP);
		pfree(buf.data);
		return;
	}
	pfree(buf.data);

	SpinLockAcquire(&persist->mutex);
	persist->last_saved = now;
	SpinLockRelease(&persist->mutex);
}

/* At postmaster exit (on_shmem_exit): a clean shutdown saves, a crash not. */
static void
save_at_shutdown(int code, Datum arg)
{
	if (code != 0 || !pgc_save_enabled)
		return;
	pgc_persist_save(false);
}

/* ---- load ---- */

/* Read the whole file; NULL (with *why) when it cannot be used at all. */
static char *
read_file(Size *len, const char **why)
{
	struct stat st;
	int			fd;
	char	   *data;

	if (stat(PGC_SAVE_FILE, &st) != 0)
	{
		*why = (errno == ENOENT) ? NULL : "it cannot be read";
		return NULL;
	}
	if (st.st_size < (off_t) (sizeof(FileHeader) + sizeof(pg_crc32c)))
	{
		*why = "it is too short";
		return NULL;
	}
	if ((Size) st.st_size > MaxAllocHugeSize)
	{
		*why = "it is too large";
		return NULL;
	}
	fd = OpenTransientFile(PGC_SAVE_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		*why = "it cannot be opened";
		return NULL;
	}
	data = palloc_extended(st.st_size, MCXT_ALLOC_HUGE);
	if (read(fd, data, st.st_size) != st.st_size)
	{
		CloseTransientFile(fd);
		pfree(data);
		*why = "it cannot be read whole";
		return NULL;
	}
	CloseTransientFile(fd);
	*len = st.st_size;
	return data;
}

/*
 * Read the file back into the stores just created.  Called by the
 * postmaster from the shared-memory startup hook, under
 * AddinShmemInitLock, before any other process exists.  Every problem is
 * one LOG line; the stores then stay as they are (empty, or what fitted).
 */
void
pgc_persist_load(void)
{
	Size		len = 0;
	const char *why = NULL;
	char	   *data;
	FileHeader	header;
	pg_crc32c	crc;
	pg_crc32c	stored;
	PgcReader	reader;
	StringInfoData summary;

	/* Saves happen in this postmaster's lifetime from now on. */
	on_shmem_exit(save_at_shutdown, (Datum) 0);
	if (!pgc_save_enabled)
		return;

	data = read_file(&len, &why);
	if (data == NULL)
	{
		if (why != NULL)
			ereport(LOG,
					(errmsg("pg_contention: ignored \"%s\": %s", PGC_SAVE_FILE, why)));
		return;
	}

	memcpy(&header, data, sizeof(header));
	memcpy(&stored, data + len - sizeof(pg_crc32c), sizeof(stored));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len - sizeof(pg_crc32c));
	FIN_CRC32C(crc);
	if (header.magic != PGC_FILE_MAGIC)
		why = "it is not a pg_contention file";
	else if (header.format != PGC_FILE_FORMAT)
		why = psprintf("its format is %u, this library reads %u",
					   header.format, PGC_FILE_FORMAT);
	else if (header.pg_major != PGC_PG_MAJOR_VERSION)
		why = psprintf("it was written by PostgreSQL major version %u",
					   header.pg_major / 100);
	else if (!EQ_CRC32C(crc, stored))
		why = "its checksum does not match (a damaged file)";
	if (why != NULL)
	{
		ereport(LOG,
				(errmsg("pg_contention: ignored \"%s\": %s", PGC_SAVE_FILE, why)));
		pfree(data);
		return;
	}

	reader.data = data;
	reader.len = len - sizeof(pg_crc32c);
	reader.pos = sizeof(header);
	reader.failed = false;
	initStringInfo(&summary);
	for (uint32 s = 0; s < header.nsections; s++)
	{
		SectionHeader section;
		PgcReader	records;
		const PersistedStore *store = NULL;
		uint64		kept = 0;

		if (!pgc_read_bytes(&reader, &section, sizeof(section)) ||
			section.bytes > reader.len - reader.pos)
		{
			ereport(LOG,
					(errmsg("pg_contention: \"%s\" ends inside a section; the rest is ignored",
							PGC_SAVE_FILE)));
			break;
		}
		records.data = reader.data + reader.pos;
		records.len = section.bytes;
		records.pos = 0;
		records.failed = false;
		reader.pos += section.bytes;

		for (int i = 0; i < lengthof(persisted); i++)
			if (persisted[i].id == section.id)
				store = &persisted[i];
		if (store == NULL || section.record_size != store->record_size())
		{
			ereport(LOG,
					(errmsg("pg_contention: skipped section %u of \"%s\": its records are not this library's",
							section.id, PGC_SAVE_FILE)));
			continue;
		}
		store->load(&records, section.count, &kept);
		if (records.failed)
			ereport(LOG,
					(errmsg("pg_contention: the %s of \"%s\" end early; kept the first " UINT64_FORMAT,
							store->name, PGC_SAVE_FILE, kept)));
		else if (kept < section.count)
			ereport(LOG,
					(errmsg("pg_contention: kept " UINT64_FORMAT " of the " UINT64_FORMAT " %s in \"%s\": the store is smaller now",
							kept, section.count, store->name, PGC_SAVE_FILE),
					 errdetail("The file was written with max_events = %d, max_statements = %d, max_profile_entries = %d, history_seconds = %d, max_query_length = %d.",
							   header.max_events, header.max_statements,
							   header.max_profile_entries, header.history_seconds,
							   header.max_query_length)));
		appendStringInfo(&summary, "%s" UINT64_FORMAT " %s",
						 summary.len > 0 ? ", " : "", kept, store->name);
	}
	pgc_set_stats_reset_time(header.stats_reset);

	SpinLockAcquire(&persist->mutex);
	persist->last_loaded = GetCurrentTimestamp();
	persist->loaded_saved_at = header.saved_at;
	SpinLockRelease(&persist->mutex);
	ereport(LOG,
			(errmsg("pg_contention: loaded %s from \"%s\", saved at %s",
					summary.len > 0 ? summary.data : "nothing", PGC_SAVE_FILE,
					timestamptz_to_str(header.saved_at))));
	pfree(summary.data);
	pfree(data);
}
