/*-------------------------------------------------------------------------
 *
 * stores.h
 *		What the files of stores/ share: the registry of stores and its
 *		file's reader and writer, and each store's shared memory, reset and
 *		file section, which the registry (stores.c) names.  Each store's
 *		layout is in its own header (statements_store.h, ...).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGC_STORES_H
#define PGC_STORES_H

#include "pg_contention.h"

/* ---- bytes.c: the file's records, read from memory, streamed out ---- */

/*
 * A bounded reader over a section of the file's bytes, in memory (fd -1)
 * or read from the file through a buffer (pread at base + pos), so that a
 * file is never read into memory whole; failed is sticky.  fixed counts
 * the values the loading store found implausible and clamped or skipped
 * (persist.c says so once per section); time_limit is the latest
 * timestamp a record may carry.
 */
typedef struct PgcReader
{
	const char *data;			/* fd -1: the bytes */
	int			fd;				/* else: the file */
	uint64		base;			/* its offset of byte 0 */
	Size		len;
	Size		pos;
	bool		failed;
	char	   *buf;			/* bufsize bytes: pos buf_pos..+buf_len */
	Size		bufsize;
	Size		buf_pos;
	Size		buf_len;
	uint64		fixed;
	TimestampTz time_limit;
} PgcReader;

/*
 * The largest counter a loaded record may carry (about 10^15): beyond it
 * a counter is not plausible, and sums of many of them must stay in
 * int64.
 */
#define PGC_COUNTER_MAX		((int64) 1 << 50)

/*
 * A writer to a file descriptor through a caller's buffer, with a running
 * CRC-32C of every byte written; error (an errno, 0: none) is sticky.
 */
typedef struct PgcWriter
{
	int			fd;
	char	   *buf;
	Size		bufsize;
	Size		used;			/* bytes in buf not yet written */
	uint64		flushed;		/* bytes written to fd */
	pg_crc32c	crc;			/* not finalised */
	int			error;
} PgcWriter;

extern void pgc_reader_init(PgcReader *reader, const char *data, Size len);

extern bool pgc_read_bytes(PgcReader *reader, void *dest, Size n);

extern void pgc_reader_init_file(PgcReader *reader, int fd, uint64 base,
								 Size len, char *buffer, Size bufsize);

extern bool pgc_read_text(PgcReader *reader, char *dest, int destsize);

extern bool pgc_reader_seek(PgcReader *reader, Size pos);

extern bool pgc_fix_counter(PgcReader *reader, int64 *value);

extern bool pgc_fix_int32(PgcReader *reader, int32 *value, int32 min, int32 max);

extern bool pgc_fix_time(PgcReader *reader, TimestampTz *value);

extern void pgc_fix_string(char *value, Size size);

extern uint64 pgc_keep_largest(void *heap, uint64 n, uint64 max_n, Size elem_size,
							   const void *elem,
							   bool (*less) (const void *, const void *));

extern void pgc_writer_init(PgcWriter *writer, int fd, char *buffer,
							Size bufsize);

extern void pgc_writer_fail(PgcWriter *writer, int errno_value);

extern bool pgc_writer_flush(PgcWriter *writer);

extern void pgc_write_bytes(PgcWriter *writer, const void *data, Size n);

extern void pgc_write_text(PgcWriter *writer, const char *text);

extern uint64 pgc_writer_position(const PgcWriter *writer);

extern pg_crc32c pgc_writer_crc(const PgcWriter *writer);

#define pgc_writer_failed(writer) ((writer)->error != 0)

/*
 * How much a store copies out of shared memory under its lock at a time
 * while saving: the lock is released before the copy is written.
 */
#define PGC_SAVE_BATCH_BYTES	(64 * 1024)

/* ---- stores.c: the registry of stores ---- */

/*
 * The stores' capacities a file's header names: what the server that
 * wrote it could hold (persist.c), for each store's largest_section.
 */
typedef struct PgcFileCapacities
{
	int32		max_events;
	int32		max_statements;
	int32		max_profile_entries;
	int32		history_seconds;
	int32		max_query_length;
	int32		max_incidents;
} PgcFileCapacities;

/*
 * One store: a block of shared memory, a section of the file, or both.
 * shmem.c walks the table for sizes, creation and reset, persist.c for
 * saving and loading, each in table order.
 */
typedef struct PgcStore
{
	const char *name;			/* plural, in LOG lines: "statements" */
	/* Shared memory (shmem_size NULL: none). */
	Size		(*shmem_size) (void);
	void		(*shmem_init) (LWLock *lock);	/* under AddinShmemInitLock */
	bool		needs_lock;		/* gets a lock of the tranche, else NULL */
	void		(*reset) (void);	/* pg_contention_reset(); NULL: none */
	/* The file (file_id 0: not saved).  Ids never change meaning. */
	uint32		file_id;
	uint32		(*record_size) (void);	/* a record's fixed part */

	/*
	 * The most bytes the section's records can take in a file written by a
	 * server of the given capacities (its leading counters not counted):
	 * the loader refuses a larger file unread.
	 */
	uint64		(*largest_section) (const PgcFileCapacities *capacities);

	/*
	 * Write the section through writer and set *count to the records
	 * written.  take_locks is false only in the postmaster at exit, which
	 * has no PGPROC to wait on an LWLock and is alone.  No file I/O under
	 * an LWLock: copy a batch under it, release, write.  Must not raise an
	 * ERROR (at exit it would be a FATAL): allocate with
	 * MCXT_ALLOC_NO_OOM and fail the writer instead.
	 */
	void		(*save) (PgcWriter *writer, bool take_locks, uint64 *count);

	/*
	 * Fill the empty store from the section (count records, at most what
	 * its bytes hold); *kept is how many it kept.  Every field read is
	 * untrusted: check it against the store (pgc_fix_*), clamp or skip
	 * what does not fit (counted in reader->fixed), and allocate no more
	 * than the store's own size.  Postmaster only, before any other
	 * process exists.
	 */
	void		(*load) (PgcReader *reader, uint64 count, uint64 *kept);
} PgcStore;

extern const PgcStore pgc_stores[];

extern const int pgc_num_stores;

/* ---- shmem.c: creating, resetting and describing the stores ---- */


extern void pgc_set_stats_reset_time(TimestampTz when);

/* ---- persist.c: the stores' file ---- */

extern Size pgc_persist_shmem_size(void);

extern void pgc_persist_shmem_init(LWLock *lock);



/* Each store's section of the file (see PgcStore), by store file. */
extern uint32 pgc_events_record_size(void);

extern uint64 pgc_events_largest_section(const PgcFileCapacities *capacities);

extern void pgc_events_save(PgcWriter *writer, bool take_locks, uint64 *count);

extern void pgc_events_load(PgcReader *reader, uint64 count, uint64 *kept);

extern uint32 pgc_statements_record_size(void);

extern uint64 pgc_statements_largest_section(const PgcFileCapacities *capacities);

extern void pgc_statements_save(PgcWriter *writer, bool take_locks,
								uint64 *count);

extern void pgc_statements_load(PgcReader *reader, uint64 count, uint64 *kept);

extern uint32 pgc_profile_record_size(void);

extern uint64 pgc_profile_largest_section(const PgcFileCapacities *capacities);

extern void pgc_profile_save(PgcWriter *writer, bool take_locks, uint64 *count);

extern void pgc_profile_load(PgcReader *reader, uint64 count, uint64 *kept);

extern uint32 pgc_history_record_size(void);

extern uint64 pgc_history_largest_section(const PgcFileCapacities *capacities);

extern void pgc_history_save(PgcWriter *writer, bool take_locks, uint64 *count);

extern void pgc_history_load(PgcReader *reader, uint64 count, uint64 *kept);

/* ---- statements.c: the statement hash ---- */

extern Size pgc_statements_shmem_size(void);

extern void pgc_statements_shmem_init(LWLock *lock);

extern void pgc_statements_reset(void);


/* ---- events.c: the ring of overflow events ---- */

extern Size pgc_events_shmem_size(void);

extern void pgc_events_shmem_init(LWLock *lock);

extern void pgc_events_reset(void);


/* ---- sampler_store.c: the wait profile and the history ---- */

extern Size pgc_sampler_shmem_size(void);

extern void pgc_sampler_shmem_init(LWLock *lock);

extern void pgc_sampler_reset(void);

/* ---- index_names.c: the names of indexes met with dead entries ---- */

extern Size pgc_index_names_shmem_size(void);

extern void pgc_index_names_shmem_init(LWLock *lock);

extern void pgc_index_names_reset(void);



/* ---- xmin_since.c: since when each holder's xmin has had its value ---- */

extern Size pgc_xmin_since_shmem_size(void);

extern void pgc_xmin_since_shmem_init(LWLock *lock);

/* ---- findings_latest.c: the incidents worker's last evaluation, kept ---- */

extern Size pgc_findings_latest_shmem_size(void);

extern void pgc_findings_latest_shmem_init(LWLock *lock);

extern void pgc_findings_latest_reset(void);


/* ---- incidents.c: the incident store ---- */

extern Size pgc_incidents_shmem_size(void);

extern void pgc_incidents_shmem_init(LWLock *lock);

extern void pgc_incidents_reset(void);


extern uint32 pgc_incidents_record_size(void);

extern uint64 pgc_incidents_largest_section(const PgcFileCapacities *capacities);

extern void pgc_incidents_save(PgcWriter *writer, bool take_locks, uint64 *count);

extern void pgc_incidents_load(PgcReader *reader, uint64 count, uint64 *kept);

#endif							/* PGC_STORES_H */
