/*-------------------------------------------------------------------------
 *
 * persist.c
 *		The stores' file: events, statements (with their index counters),
 *		the wait profile and the history are written to
 *		pg_stat_tmp/pg_contention.stat at shutdown by the postmaster and
 *		every pg_contention.save_interval by the sampler, and read back when
 *		the postmaster creates shared memory: at start, and after a crash.
 *		pg_basebackup and pg_rewind copy nothing of pg_stat_tmp, and the
 *		file names the data directory that wrote it: a copy of the data
 *		directory starts with empty stores (see data_directory_identity).
 *
 * The file (format 3): a header (magic, format version, PostgreSQL major
 * version, when it was written, the last reset, the stores' sizes then,
 * the number of sections, the data directory's identity; formats 1 and 2
 * had no identity and were written to pg_stat/, where they are still
 * read), each persisted store's records one section
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
 * Loading trusts nothing in the file: it is never read whole into memory
 * (checked, then streamed through a fixed buffer by bytes.c's reader), a
 * file larger than stores of the sizes it names can write is not read at
 * all, and each store checks every field of its records against what it
 * can hold (pgc_fix_*: counters, times, strings; its own rules for
 * counts, ring positions and keys), clamping or skipping what does not
 * fit; one LOG line per section says how many.
 *
 * Failures: a file that is missing, short, corrupt, too large, of another
 * format, major version or data directory is ignored with one LOG line; a
 * section with records of another size is skipped; a store smaller than
 * the file keeps what fits, and says so.  Nothing here can stop the
 * server from starting.  A
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
#include "stores.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

/*
 * pg_stat_tmp: pg_basebackup and pg_rewind copy none of its files (on
 * 13 to 18), so a copy of the data directory starts with empty stores.
 * 1.3 and earlier wrote pg_stat/, which they copy: read once from there,
 * removed by the first save.
 */
#define PGC_SAVE_DIR		"pg_stat_tmp"
#define PGC_SAVE_FILE		PGC_SAVE_DIR "/pg_contention.stat"
#define PGC_SAVE_FILE_TMP	PGC_SAVE_FILE ".tmp"
#define PGC_LEGACY_FILE		"pg_stat/pg_contention.stat"
#define PGC_FILE_MAGIC		0x50474331	/* "PGC1" */
#define PGC_FILE_FORMAT		3	/* 2 and the data directory's identity */
#define PGC_FILE_FORMAT_2	2	/* the directory at the end */
#define PGC_FILE_FORMAT_1	1	/* each section's entry before it */
#define PGC_WRITE_BUFFER	(64 * 1024)
#define PGC_READ_BUFFER		(64 * 1024)
#define PGC_MAX_SECTIONS	64	/* file ids are below this */

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
	int32		max_incidents;	/* 1.4; before it padding, 0 */
	/* Format 3: data_directory_identity() of the server that wrote it. */
	uint64		data_directory;
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

/*
 * What tells this data directory from a copy of it that a tool copied
 * whole (pg_stat_tmp included: a file-system snapshot, rsync of a stopped
 * server) to another place: a hash of its absolute path.  A clean or
 * crash restart of the same server finds the same; a copy at the same
 * path on another machine cannot be told apart.
 */
static uint64
data_directory_identity(void)
{
	return hash_bytes_extended((const unsigned char *) DataDir, strlen(DataDir),
							   PGC_FILE_MAGIC);
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
	/* initdb makes pg_stat_tmp; should it be gone, make it again. */
	if (save_fd < 0 && errno == ENOENT && MakePGDirectory(PGC_SAVE_DIR) == 0)
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
	header.max_incidents = pgc_max_incidents;
	header.data_directory = data_directory_identity();
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
	/* The file of 1.3 and earlier, which a base backup would copy, goes. */
	if (unlink(PGC_LEGACY_FILE) != 0 && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: could not remove \"%s\": %m", PGC_LEGACY_FILE)));
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

/* Formats 1 and 2 had no data_directory. */
#define LEGACY_HEADER_SIZE	offsetof(FileHeader, data_directory)

static Size
header_size(const FileHeader *header)
{
	return header->format == PGC_FILE_FORMAT ? sizeof(FileHeader) : LEGACY_HEADER_SIZE;
}

/*
 * The largest file stores of the sizes a header names can write: the
 * header, each section's leading counters and its records (texts at most
 * max_query_length), the directory and the checksum.  A larger file is not
 * one of ours, and is not read at all.
 */
static uint64
largest_file(const FileHeader *header)
{
	PgcFileCapacities capacities = {
		.max_events = header->max_events,
		.max_statements = header->max_statements,
		.max_profile_entries = header->max_profile_entries,
		.history_seconds = header->history_seconds,
		.max_query_length = header->max_query_length,
		.max_incidents = header->max_incidents,
	};
	uint64		size = sizeof(FileHeader) + sizeof(pg_crc32c);

	for (int i = 0; i < pgc_num_stores; i++)
		if (pgc_stores[i].file_id != 0)
			size += sizeof(SectionHeader) + 2 * sizeof(int64) +
				pgc_stores[i].largest_section(&capacities);
	return size;
}

/* The sizes a header names are within the settings' ranges. */
static bool
header_sizes_valid(const FileHeader *header)
{
	return header->max_events >= 1 && header->max_events <= 1000000 &&
		header->max_statements >= 1 && header->max_statements <= 1000000 &&
		header->max_profile_entries >= 1 && header->max_profile_entries <= 1000000 &&
		header->history_seconds >= 1 && header->history_seconds <= 86400 &&
		header->max_query_length >= 1 && header->max_query_length <= 65536 &&
		header->max_incidents >= 0 && header->max_incidents <= 1000;
}

/*
 * Check the open file (len bytes) before anything of it is used: its
 * header, its size against what stores of its sizes can write, then its
 * CRC-32C, computed while streaming it through buffer.  Returns NULL when
 * it can be loaded, else why not.
 */
static const char *
check_file(int fd, uint64 len, bool legacy, FileHeader *header,
		   char *buffer, Size bufsize)
{
	PgcReader	whole;
	pg_crc32c	crc;
	pg_crc32c	stored;
	uint64		done = 0;

	pgc_reader_init_file(&whole, fd, 0, len, buffer, bufsize);
	if (len < sizeof(FileHeader) + sizeof(pg_crc32c))
		return "it is too short";
	memset(header, 0, sizeof(FileHeader));
	if (!pgc_read_bytes(&whole, header, LEGACY_HEADER_SIZE))
		return "it cannot be read";
	if (header->format == PGC_FILE_FORMAT &&
		!pgc_read_bytes(&whole, (char *) header + LEGACY_HEADER_SIZE,
						sizeof(FileHeader) - LEGACY_HEADER_SIZE))
		return "it is too short";
	if (header->magic != PGC_FILE_MAGIC)
		return "it is not a pg_contention file";
	if (header->format != PGC_FILE_FORMAT &&
		!(legacy && (header->format == PGC_FILE_FORMAT_2 ||
					 header->format == PGC_FILE_FORMAT_1)))
		return psprintf("its format is %u, this library reads %u here",
						header->format, PGC_FILE_FORMAT);
	if (header->pg_major != PGC_PG_MAJOR_VERSION)
		return psprintf("it was written by PostgreSQL major version %u",
						header->pg_major / 100);
	if (header->format == PGC_FILE_FORMAT &&
		header->data_directory != data_directory_identity())
		return "it was written by the server of another data directory (a copy does not inherit its evidence)";
	if (!header_sizes_valid(header))
		return "the sizes in its header are not within the settings' ranges";
	if (len > largest_file(header))
		return psprintf("it is larger (" UINT64_FORMAT " bytes) than stores of the sizes it names can write (" UINT64_FORMAT ")",
						len, largest_file(header));
	if (header->nsections > PGC_MAX_SECTIONS)
		return "it has more sections than this library knows";

	/* The checksum, streamed: a buffer at a time. */
	INIT_CRC32C(crc);
	pgc_reader_seek(&whole, 0);
	while (done < len - sizeof(pg_crc32c))
	{
		Size		n = Min(bufsize, len - sizeof(pg_crc32c) - done);

		if (!pgc_read_bytes(&whole, buffer, n))
			return "it cannot be read whole";
		COMP_CRC32C(crc, buffer, n);
		done += n;
	}
	FIN_CRC32C(crc);
	if (!pgc_read_bytes(&whole, &stored, sizeof(stored)))
		return "it cannot be read whole";
	if (!EQ_CRC32C(crc, stored))
		return "its checksum does not match (a damaged file)";
	if (header->format != PGC_FILE_FORMAT_1 &&
		header->nsections > (len - header_size(header) - sizeof(pg_crc32c)) /
		sizeof(SectionHeader))
		return "it is too short for its sections";
	return NULL;
}

/*
 * Read the file back into the stores just created.  Called by the
 * postmaster from the shared-memory startup hook, under
 * AddinShmemInitLock, before any other process exists.  Every problem is
 * one LOG line; the stores then stay as they are (empty, or what fitted).
 *
 * The file is never read into memory: it is checked, then each section is
 * read through a buffer of PGC_READ_BUFFER bytes, and every record is
 * checked by its store against the stores it fills (pgc_fix_*, and each
 * store's own rules) before it is used.
 */
void
pgc_persist_load(void)
{
	const char *path = PGC_SAVE_FILE;
	bool		legacy = false;
	const char *why = NULL;
	int			fd;
	struct stat st;
	FileHeader	header;
	uint64		len;
	char	   *buffer;
	char	   *dirbuffer;
	PgcReader	body;
	PgcReader	directory;
	PgcReader  *sections;
	StringInfoData summary;
	bool		loaded[PGC_MAX_SECTIONS + 1] = {0};
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz time_limit = now + (TimestampTz) 86400 * USECS_PER_SEC;

	/* Saves happen in this postmaster's lifetime from now on. */
	on_shmem_exit(save_at_shutdown, (Datum) 0);
	if (save_context == NULL)
		save_context = AllocSetContextCreate(TopMemoryContext,
											 "pg_contention save",
											 ALLOCSET_DEFAULT_SIZES);
	if (!pgc_save_enabled)
		return;

	/* The file of 1.3 and earlier is read until the first save replaces it. */
	if (stat(path, &st) != 0 && errno == ENOENT &&
		stat(PGC_LEGACY_FILE, &st) == 0)
	{
		path = PGC_LEGACY_FILE;
		legacy = true;
	}
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("pg_contention: ignored \"%s\": it cannot be opened: %m", path)));
		return;
	}
	if (fstat(fd, &st) != 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_contention: ignored \"%s\": it cannot be read: %m", path)));
		CloseTransientFile(fd);
		return;
	}
	len = (uint64) st.st_size;

	/* Out of memory must not stop the server from starting. */
	buffer = palloc_extended(PGC_READ_BUFFER, MCXT_ALLOC_NO_OOM);
	dirbuffer = palloc_extended(PGC_READ_BUFFER, MCXT_ALLOC_NO_OOM);
	if (buffer == NULL || dirbuffer == NULL)
		why = "there is not enough memory to read it";
	else
		why = check_file(fd, len, legacy, &header, buffer, PGC_READ_BUFFER);
	if (why != NULL)
	{
		ereport(LOG,
				(errmsg("pg_contention: ignored \"%s\": %s", path, why)));
		CloseTransientFile(fd);
		return;
	}

	/*
	 * The records of the sections follow the header, one after the other;
	 * their entries are read from the directory at the end (formats 2 and
	 * 3) or from just before each section's records (format 1).
	 */
	len -= sizeof(pg_crc32c);
	if (header.format != PGC_FILE_FORMAT_1)
	{
		Size		dirsize = header.nsections * sizeof(SectionHeader);

		len -= dirsize;
		pgc_reader_init_file(&directory, fd, len, dirsize, dirbuffer, PGC_READ_BUFFER);
		sections = &directory;
	}
	else
	{
		pgc_reader_init_file(&directory, fd, 0, len, dirbuffer, PGC_READ_BUFFER);
		sections = &directory;
	}
	/* body: only where the sections are; its buffer is never used. */
	pgc_reader_init(&body, NULL, len);
	body.pos = header_size(&header);

	initStringInfo(&summary);
	for (uint32 s = 0; s < header.nsections; s++)
	{
		SectionHeader section;
		PgcReader	records;
		const PgcStore *store = NULL;
		uint64		kept = 0;
		uint64		most;

		if (header.format == PGC_FILE_FORMAT_1)
			pgc_reader_seek(&directory, body.pos);
		if (!pgc_read_bytes(sections, &section, sizeof(section)))
		{
			ereport(LOG,
					(errmsg("pg_contention: \"%s\" ends inside a section; the rest is ignored",
							path)));
			break;
		}
		if (header.format == PGC_FILE_FORMAT_1)
			body.pos = directory.pos;
		if (section.bytes > body.len - body.pos)
		{
			ereport(LOG,
					(errmsg("pg_contention: \"%s\" ends inside a section; the rest is ignored",
							path)));
			break;
		}
		pgc_reader_init_file(&records, fd, body.pos, section.bytes, buffer, PGC_READ_BUFFER);
		records.time_limit = time_limit;
		body.pos += section.bytes;

		for (int i = 0; i < pgc_num_stores; i++)
			if (pgc_stores[i].file_id != 0 && pgc_stores[i].file_id == section.id)
				store = &pgc_stores[i];
		if (store == NULL || section.record_size != store->record_size() ||
			section.id > PGC_MAX_SECTIONS)
		{
			/*
			 * A library of another version wrote it (an upgrade changed
			 * the store's records): that store starts empty, the others
			 * are read.  README.md's "Upgrading" says so.
			 */
			if (store != NULL)
				ereport(LOG,
						(errmsg("pg_contention: skipped section %u of \"%s\": its %s were written by another version of the library",
								section.id, path, store->name),
						 errdetail("Their records are %u bytes, this version's %u: the %s start empty, the other stores are read.",
								   section.record_size, store->record_size(), store->name)));
			else
				ereport(LOG,
						(errmsg("pg_contention: skipped section %u of \"%s\": this version of the library has no such store",
								section.id, path)));
			continue;
		}
		if (loaded[section.id])
		{
			ereport(LOG,
					(errmsg("pg_contention: skipped a second section of %s in \"%s\"",
							store->name, path)));
			continue;
		}
		loaded[section.id] = true;
		/* No more records than the section's bytes can hold. */
		most = section.bytes / Max(section.record_size, 1);
		if (section.count > most)
		{
			section.count = most;
			records.fixed++;
		}
		store->load(&records, section.count, &kept);
		if (records.failed)
			ereport(LOG,
					(errmsg("pg_contention: the %s of \"%s\" end early; kept the first " UINT64_FORMAT,
							store->name, path, kept)));
		else if (kept < section.count && records.fixed == 0)
			ereport(LOG,
					(errmsg("pg_contention: kept " UINT64_FORMAT " of the " UINT64_FORMAT " %s in \"%s\": the store is smaller now",
							kept, section.count, store->name, path),
					 errdetail("The file was written with max_events = %d, max_statements = %d, max_profile_entries = %d, history_seconds = %d, max_query_length = %d.",
							   header.max_events, header.max_statements,
							   header.max_profile_entries, header.history_seconds,
							   header.max_query_length)));
		if (records.fixed > 0)
			ereport(LOG,
					(errmsg("pg_contention: kept " UINT64_FORMAT " %s of \"%s\"; " UINT64_FORMAT " implausible values in them were clamped or skipped",
							kept, store->name, path, records.fixed)));
		appendStringInfo(&summary, "%s" UINT64_FORMAT " %s",
						 summary.len > 0 ? ", " : "", kept, store->name);
	}
	CloseTransientFile(fd);
	if (header.stats_reset > 0 && header.stats_reset <= time_limit)
		pgc_set_stats_reset_time(header.stats_reset);
	if (header.saved_at <= 0 || header.saved_at > time_limit)
		header.saved_at = 0;

	SpinLockAcquire(&persist->mutex);
	persist->last_loaded = now;
	persist->loaded_saved_at = header.saved_at;
	SpinLockRelease(&persist->mutex);
	ereport(LOG,
			(errmsg("pg_contention: loaded %s from \"%s\", saved at %s",
					summary.len > 0 ? summary.data : "nothing", path,
					header.saved_at != 0 ? timestamptz_to_str(header.saved_at) : "an unknown time")));
	pfree(summary.data);
	pfree(buffer);
	pfree(dirbuffer);
}
