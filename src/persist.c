/*-------------------------------------------------------------------------
 *
 * persist.c
 *		The stores' file: events, statements (with their index counters),
 *		the wait profile and the history are written to
 *		pg_stat/pg_contention.stat at shutdown by the postmaster and every
 *		pg_contention.save_interval by the sampler, and read back when the
 *		postmaster creates shared memory: at start, and after a crash.
 *
 * The file (format 2): a header (magic, format version, PostgreSQL major
 * version, when it was written, the last reset, the stores' sizes then,
 * the number of sections), each persisted store's records one section
 * after the other, a directory with one entry per section (its id, the
 * size of its fixed record part, the record count, its bytes), then a
 * CRC-32C of everything before it.  The directory comes last so that the
 * file can be streamed: a section's count and length are known only once
 * its records are written, and nothing written is ever rewritten, so the
 * running CRC covers every byte in order.  Format 1 (pg_contention 1.3
 * and earlier) put each section's entry before its records; it is still
 * read.
 *
 * The stores and their sections are the registry's (stores.c); each store
 * writes and reads its own records (PgcStore.save, .load) through
 * bytes.c.  A record is the store's fixed part and, for events and
 * statements, the text's length and bytes.  Saving streams: records go
 * through a 64 kB buffer to a temporary file, which is flushed and
 * renamed, so a crash or any failure while writing leaves the previous
 * file.  Memory while saving does not grow with the stores: each store
 * copies a bounded batch at a time (see PgcStore.save).
 *
 * Failures: a file that is missing, short, corrupt, or of another format
 * or major version is ignored with one LOG line; a section with records
 * of another size is skipped; a store smaller than the file keeps what
 * fits, and says so.  Nothing here can stop the server from starting.  A
 * save that fails (no space, no permission, out of memory, any ERROR
 * inside) is one LOG line and keeps the previous file: it is never an
 * ERROR in the sampler, whose loop must go on, nor a FATAL in the
 * postmaster at exit.  There, after proc_exit has begun, elog.c turns
 * every ERROR into a FATAL that no PG_TRY can catch, so the save path
 * raises none by construction (allocations with MCXT_ALLOC_NO_OOM, a
 * writer that returns failure); in the sampler PG_TRY catches the rest.
 *
 * Owns the "when saved, when loaded" header (ShmemInitStruct "pg_contention
 * persistence", under its spinlock) and this process's save memory
 * context.  Locking: the sampler saves with each store taking its own
 * lock in shared mode for each batch it copies; the postmaster saves at
 * shutdown, when no other process is left, and loads before any exists,
 * so it takes none (it has no PGPROC to wait on an LWLock with).  Calls:
 * stores.c's table, bytes.c, and shmem.c for the reset time the file
 * carries.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#define PGC_SAVE_FILE		"pg_stat/pg_contention.stat"
#define PGC_SAVE_FILE_TMP	PGC_SAVE_FILE ".tmp"
#define PGC_FILE_MAGIC		0x50474331	/* "PGC1" */
#define PGC_FILE_FORMAT		2	/* the directory at the end */
#define PGC_FILE_FORMAT_1	1	/* each section's entry before it */
#define PGC_WRITE_BUFFER	(64 * 1024)

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

/* A section's entry in the directory (format 1: before its records). */
typedef struct SectionHeader
{
	uint32		id;
	uint32		record_size;	/* the fixed part of a record */
	uint64		count;
	uint64		bytes;			/* of its records */
} SectionHeader;

typedef struct PersistShared
{
	slock_t		mutex;
	TimestampTz last_saved;		/* 0: never */
	TimestampTz last_loaded;	/* 0: nothing loaded at start */
	TimestampTz loaded_saved_at;	/* when the loaded file was written */
} PersistShared;

static PersistShared *persist = NULL;

/*
 * What a save allocates, reset after each.  The postmaster creates it when
 * it loads, so that its save at exit allocates no context; the sampler
 * inherits it (or, under EXEC_BACKEND, creates it at its first save).
 */
static MemoryContext save_context = NULL;

/* The temporary file while a save has it open, for the error path. */
static int	save_fd = -1;

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

/* ---- save ---- */

static void
close_and_remove(void)
{
	if (save_fd >= 0)
		CloseTransientFile(save_fd);
	save_fd = -1;
	unlink(PGC_SAVE_FILE_TMP);
}

/*
 * Stream every persisted store to the temporary file, then flush and
 * rename it.  Returns whether the file was replaced; every failure is
 * LOGged here.  Raises no ERROR of its own (see the file header).
 */
static bool
write_file(bool take_locks, TimestampTz now)
{
	FileHeader	header;
	SectionHeader *directory;
	PgcWriter	writer;
	char	   *buffer;
	uint32		nsections = 0;
	pg_crc32c	crc;

	for (int i = 0; i < pgc_num_stores; i++)
		if (pgc_stores[i].file_id != 0)
			nsections++;
	buffer = palloc_extended(PGC_WRITE_BUFFER, MCXT_ALLOC_NO_OOM);
	directory = palloc_extended(Max(nsections, 1) * sizeof(SectionHeader),
								MCXT_ALLOC_NO_OOM | MCXT_ALLOC_ZERO);
	if (buffer == NULL || directory == NULL)
	{
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("pg_contention: could not save \"%s\": out of memory",
						PGC_SAVE_FILE)));
		return false;
	}

	save_fd = OpenTransientFile(PGC_SAVE_FILE_TMP, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (save_fd < 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not create \"%s\": %m", PGC_SAVE_FILE_TMP)));
		return false;
	}
	pgc_writer_init(&writer, save_fd, buffer, PGC_WRITE_BUFFER);

	memset(&header, 0, sizeof(header));
	header.magic = PGC_FILE_MAGIC;
	header.format = PGC_FILE_FORMAT;
	header.pg_major = PGC_PG_MAJOR_VERSION;
	header.nsections = nsections;
	header.saved_at = now;
	header.stats_reset = pgc_stats_reset_time();
	header.max_events = pgc_max_events;
	header.max_statements = pgc_max_statements;
	header.max_profile_entries = pgc_max_profile_entries;
	header.history_seconds = pgc_history_seconds;
	header.max_query_length = pgc_max_query_length;
	pgc_write_bytes(&writer, &header, sizeof(header));

	nsections = 0;
	for (int i = 0; i < pgc_num_stores && !pgc_writer_failed(&writer); i++)
	{
		const PgcStore *store = &pgc_stores[i];
		SectionHeader *section;
		uint64		start = pgc_writer_position(&writer);

		if (store->file_id == 0)
			continue;
		section = &directory[nsections++];
		section->id = store->file_id;
		section->record_size = store->record_size();
		store->save(&writer, take_locks, &section->count);
		section->bytes = pgc_writer_position(&writer) - start;
	}
	pgc_write_bytes(&writer, directory, nsections * sizeof(SectionHeader));
	crc = pgc_writer_crc(&writer);
	pgc_write_bytes(&writer, &crc, sizeof(crc));
	if (!pgc_writer_flush(&writer))
	{
		errno = writer.error;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not write \"%s\": %m", PGC_SAVE_FILE_TMP)));
		close_and_remove();
		return false;
	}
	if (pg_fsync(save_fd) != 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not flush \"%s\": %m", PGC_SAVE_FILE_TMP)));
		close_and_remove();
		return false;
	}
	if (CloseTransientFile(save_fd) != 0)
	{
		save_fd = -1;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not flush \"%s\": %m", PGC_SAVE_FILE_TMP)));
		close_and_remove();
		return false;
	}
	save_fd = -1;
	/* durable_rename fsyncs the directory too; LOG, not ERROR, on failure. */
	if (durable_rename(PGC_SAVE_FILE_TMP, PGC_SAVE_FILE, LOG) != 0)
	{
		unlink(PGC_SAVE_FILE_TMP);
		return false;
	}
	return true;
}

/*
 * Write every store to the file.  take_locks: false only in the postmaster
 * at shutdown, when nobody else is left.  A failure is LOGged and leaves
 * the previous file; it never raises an ERROR (the sampler must keep
 * sampling, the postmaster must exit cleanly).
 */
void
pgc_persist_save(bool take_locks)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	TimestampTz now = GetCurrentTimestamp();
	volatile bool saved = false;

	PG_TRY();
	{
		if (save_context == NULL)
			save_context = AllocSetContextCreate(TopMemoryContext,
												 "pg_contention save",
												 ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(save_context);
		saved = write_file(take_locks, now);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/*
		 * Only the sampler gets here (in the postmaster at exit an ERROR is
		 * a FATAL already).  Its main loop holds no LWLock of its own when
		 * it saves, so releasing all releases only a store's, if the error
		 * came while one was held.
		 */
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		if (take_locks)
			LWLockReleaseAll();
		close_and_remove();
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_contention: could not save \"%s\": %s",
						PGC_SAVE_FILE, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcontext);
	if (save_context != NULL)
		MemoryContextReset(save_context);
	if (!saved)
		return;

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
	Size		done = 0;

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
	/* Out of memory must not stop the server from starting. */
	data = palloc_extended(st.st_size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (data == NULL)
	{
		CloseTransientFile(fd);
		*why = "there is not enough memory to read it";
		return NULL;
	}
	/* One read() returns at most about 2 GB on Linux. */
	while (done < (Size) st.st_size)
	{
		ssize_t		n = read(fd, data + done,
							 Min((Size) st.st_size - done, (Size) 1 << 30));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			CloseTransientFile(fd);
			pfree(data);
			*why = "it cannot be read whole";
			return NULL;
		}
		done += n;
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
	PgcReader	body;
	PgcReader	directory;
	PgcReader  *sections;
	StringInfoData summary;

	/* Saves happen in this postmaster's lifetime from now on. */
	on_shmem_exit(save_at_shutdown, (Datum) 0);
	if (save_context == NULL)
		save_context = AllocSetContextCreate(TopMemoryContext,
											 "pg_contention save",
											 ALLOCSET_DEFAULT_SIZES);
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
	else if (header.format != PGC_FILE_FORMAT && header.format != PGC_FILE_FORMAT_1)
		why = psprintf("its format is %u, this library reads %u and %u",
					   header.format, PGC_FILE_FORMAT_1, PGC_FILE_FORMAT);
	else if (header.pg_major != PGC_PG_MAJOR_VERSION)
		why = psprintf("it was written by PostgreSQL major version %u",
					   header.pg_major / 100);
	else if (!EQ_CRC32C(crc, stored))
		why = "its checksum does not match (a damaged file)";
	else if (header.format == PGC_FILE_FORMAT &&
			 header.nsections > (len - sizeof(FileHeader) - sizeof(pg_crc32c)) /
			 sizeof(SectionHeader))
		why = "it is too short for its sections";
	if (why != NULL)
	{
		ereport(LOG,
				(errmsg("pg_contention: ignored \"%s\": %s", PGC_SAVE_FILE, why)));
		pfree(data);
		return;
	}

	/*
	 * The records of the sections follow the header, one after the other;
	 * their entries are read from the directory at the end (format 2) or
	 * from just before each section's records (format 1).
	 */
	pgc_reader_init(&body, data, len - sizeof(pg_crc32c));
	body.pos = sizeof(header);
	if (header.format == PGC_FILE_FORMAT)
	{
		Size		dirsize = header.nsections * sizeof(SectionHeader);

		body.len -= dirsize;
		pgc_reader_init(&directory, data + body.len, dirsize);
		sections = &directory;
	}
	else
		sections = &body;

	initStringInfo(&summary);
	for (uint32 s = 0; s < header.nsections; s++)
	{
		SectionHeader section;
		PgcReader	records;
		const PgcStore *store = NULL;
		uint64		kept = 0;

		if (!pgc_read_bytes(sections, &section, sizeof(section)) ||
			section.bytes > body.len - body.pos)
		{
			ereport(LOG,
					(errmsg("pg_contention: \"%s\" ends inside a section; the rest is ignored",
							PGC_SAVE_FILE)));
			break;
		}
		pgc_reader_init(&records, body.data + body.pos, section.bytes);
		body.pos += section.bytes;

		for (int i = 0; i < pgc_num_stores; i++)
			if (pgc_stores[i].file_id != 0 && pgc_stores[i].file_id == section.id)
				store = &pgc_stores[i];
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
