/*-------------------------------------------------------------------------
 *
 * sampler.c
 *		The sampler: one background worker that looks at every backend each
 *		tick (pg_contention.sample_period ms) and keeps, in shared memory, a
 *		wait profile by (database, query id, wait event) and a ring of
 *		one-second buckets (pg_contention_history), with the Subtrans SLRU
 *		counters' deltas read once a second.
 *
 * Owns: the sampler state (ShmemInitStruct "pg_contention sampler": status,
 * the profile entries and the history ring) and the per-process array of
 * current top-level query ids ("pg_contention query ids"), which each
 * backend writes for itself (pgc_publish_query_id) and the sampler reads.
 *
 * Locking: the worker is the only writer of the profile and the history.
 * It gathers a tick's samples without any lock, then takes sampler_lock
 * exclusively once to add them; readers take it in shared mode to copy,
 * and never wait for the worker to answer anything.  Reset (from any
 * backend) clears the stores under the exclusive lock and bumps
 * reset_generation, so the worker drops its private index of the profile.
 * The status fields are written by the worker under the same lock.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(pg_contention_waits);
PG_FUNCTION_INFO_V1(pg_contention_history);
PG_FUNCTION_INFO_V1(pg_contention_sampler_status);

PGDLLEXPORT void pgc_sampler_main(Datum main_arg);

/* The wait events the history counts by name, found once at start. */
typedef enum PgcNamedWait
{
	NAMED_SUBTRANS_SLRU,		/* LWLock:SubtransSLRU */
	NAMED_SUBTRANS_BUFFER,		/* LWLock:SubtransBuffer */
	NAMED_OLDSNAPSHOT_TIMEMAP,	/* LWLock:OldSnapshotTimeMap, PG13-16 */
	NAMED_PROCARRAY,			/* LWLock:ProcArray */
	NAMED_SPIN_DELAY,			/* Timeout:SpinDelay, PG17+ */
	NUM_NAMED_WAITS
} PgcNamedWait;

/* History columns by wait-event class (the class is the top byte). */
typedef enum PgcWaitClass
{
	CLASS_LWLOCK,
	CLASS_LOCK,
	CLASS_BUFFERPIN,
	CLASS_IO,
	CLASS_IPC,
	CLASS_TIMEOUT,
	CLASS_EXTENSION,
	CLASS_CLIENT,
	CLASS_OTHER,
	NUM_WAIT_CLASSES
} PgcWaitClass;

/* One second of history. */
typedef struct PgcHistoryBucket
{
	PgcOldSnapFigures oldsnap;	/* old_snapshot_threshold pressure */
	TimestampTz bucket_start;
	int64		ticks;
	int64		active_samples; /* non-idle backends, summed over ticks */
	int64		idle_samples;
	int64		cpu_samples;
	int64		class_samples[NUM_WAIT_CLASSES];
	int64		named_samples[NUM_NAMED_WAITS];
	int32		max_overflowed_backends;
	bool		slru_known;		/* SLRU deltas were read for this bucket */
	int64		subtrans_lookups;	/* delta of blks_hit + blks_read */
	int64		subtrans_reads; /* delta of blks_read */
} PgcHistoryBucket;

/* One profile entry: samples of a (database, query id, wait event). */
typedef struct PgcProfileKey
{
	Oid			dbid;
	Oid			roleid;
	uint32		wait_event_info;	/* 0: on CPU */
	uint32		padding;		/* zero: the key is hashed as bytes */
	int64		query_id;
} PgcProfileKey;

typedef struct PgcProfileEntry
{
	PgcProfileKey key;
	int64		samples;
} PgcProfileEntry;

/* The sampler's shared state; the profile and history arrays follow it. */
typedef struct PgcSamplerShared
{
	/* status, written by the worker */
	int			worker_pid;		/* 0 when not running */
	TimestampTz worker_started;
	int64		ticks;
	double		last_tick_us;
	double		max_tick_us;
	double		total_tick_us;
	int			period_ms;		/* in effect */
	bool		enabled;		/* in effect */
	bool		named_found[NUM_NAMED_WAITS];	/* exists in this server */

	/* profile */
	uint64		reset_generation;	/* bumped by reset */
	int			profile_used;
	int64		profile_evictions;
	int64		profile_samples;	/* all non-idle samples since reset */

	/* history: buckets [0, history_seconds), next is where the next goes */
	int64		buckets_written;	/* completed buckets since reset */
	PgcHistoryBucket current;	/* the second being filled */
	PgcOldSnapFigures oldsnap_total;	/* since reset */
} PgcSamplerShared;

static PgcSamplerShared *sampler = NULL;
static PgcProfileEntry *profile = NULL;
static PgcHistoryBucket *history = NULL;
static pg_atomic_uint64 *backend_query_ids = NULL;
static int	backend_query_ids_size = 0;

/* ---- shared memory ---- */

static Size
sampler_struct_size(void)
{
	Size		size = MAXALIGN(sizeof(PgcSamplerShared));

	size = add_size(size, mul_size(pgc_max_profile_entries, sizeof(PgcProfileEntry)));
	size = add_size(size, mul_size(pgc_history_seconds, sizeof(PgcHistoryBucket)));
	return size;
}

Size
pgc_sampler_shmem_size(void)
{
	return add_size(sampler_struct_size(),
					mul_size(PGC_MAX_PROCS, sizeof(pg_atomic_uint64)));
}

/* Called under AddinShmemInitLock. */
void
pgc_sampler_shmem_init(void)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("pg_contention sampler", sampler_struct_size(), &found);
	sampler = (PgcSamplerShared *) base;
	profile = (PgcProfileEntry *) (base + MAXALIGN(sizeof(PgcSamplerShared)));
	history = (PgcHistoryBucket *) (profile + pgc_max_profile_entries);
	if (!found)
		memset(base, 0, sampler_struct_size());

	/*
	 * ProcGlobal is set up before shmem_startup_hook runs; never index past
	 * what was requested, whatever allProcCount turns out to be.
	 */
	backend_query_ids_size = Min(PGC_MAX_PROCS, (int) ProcGlobal->allProcCount);
	backend_query_ids = ShmemInitStruct("pg_contention query ids",
										mul_size(PGC_MAX_PROCS, sizeof(pg_atomic_uint64)),
										&found);
	if (!found)
		for (int i = 0; i < PGC_MAX_PROCS; i++)
			pg_atomic_init_u64(&backend_query_ids[i], 0);
}

/*
 * The query id of the top-level statement this backend runs, for the
 * sampler.  One unlocked 8-byte store into this backend's own slot.
 */
static int	my_query_id_index = -1;

/* At exit: the next process in this PGPROC slot must not inherit our id. */
static void
clear_published_query_id(int code, Datum arg)
{
	if (my_query_id_index >= 0)
		pg_atomic_write_u64(&backend_query_ids[my_query_id_index], 0);
}

void
pgc_publish_query_id(int64 query_id)
{
	if (unlikely(my_query_id_index < 0))
	{
		int			index;

		if (backend_query_ids == NULL || MyProc == NULL)
			return;
		index = MyProc - ProcGlobal->allProcs;
		if (index >= backend_query_ids_size)
			return;
		my_query_id_index = index;
		before_shmem_exit(clear_published_query_id, (Datum) 0);
	}
	pg_atomic_write_u64(&backend_query_ids[my_query_id_index], (uint64) query_id);
}

/* Called by pg_contention_reset() (any backend). */
void
pgc_sampler_reset(void)
{
	LWLockAcquire(pgc_shared->sampler_lock, LW_EXCLUSIVE);
	sampler->reset_generation++;
	sampler->profile_used = 0;
	sampler->profile_evictions = 0;
	sampler->profile_samples = 0;
	sampler->buckets_written = 0;
	memset(&sampler->current, 0, sizeof(PgcHistoryBucket));
	memset(&sampler->oldsnap_total, 0, sizeof(PgcOldSnapFigures));
	LWLockRelease(pgc_shared->sampler_lock);
}

/* ---- the worker ---- */

/* One backend seen in a tick. */
typedef struct TickSample
{
	PgcProfileKey key;
	bool		overflowed;
} TickSample;

/* Worker-private state. */
static HTAB *profile_index = NULL;	/* key -> position in profile[] */
static uint64 profile_index_generation = 0;
static uint32 named_wait_info[NUM_NAMED_WAITS];
static uint32 client_read_info;
static TickSample *tick_samples = NULL;
static int64 last_subtrans_lookups = -1;
static int64 last_subtrans_reads = -1;

/* Databases seen in samples, for the old-snapshot operation estimate. */
#define MAX_ESTIMATE_DBS 16
static Oid	estimate_dbs[MAX_ESTIMATE_DBS];
static int64 estimate_last_ops[MAX_ESTIMATE_DBS];
static int	n_estimate_dbs = 0;

/*
 * While old_snapshot_threshold is on: lock-word reads every tick, and two
 * timed acquisitions every fifth tick.  An acquisition can wait through
 * the spinlock's back-off (milliseconds under heavy contention), which
 * delays the sampler's next tick; probing less often bounds that.
 */
#define OLDSNAP_READS_PER_LOCK	32
#define OLDSNAP_PROBE_EVERY		5
#define OLDSNAP_PROBES_PER_TICK 2

typedef struct ProfileIndexEntry
{
	PgcProfileKey key;
	int			position;
} ProfileIndexEntry;

/* Find a wait event's wait_event_info by its class and name. */
static bool
find_wait_event(uint32 class_id, int max_event_id, const char *name, uint32 *info)
{
	for (int id = 0; id < max_event_id; id++)
	{
		const char *event = pgstat_get_wait_event(class_id | (uint32) id);

		if (event != NULL && strcmp(event, name) == 0)
		{
			*info = class_id | (uint32) id;
			return true;
		}
	}
	return false;
}

static void
find_named_waits(void)
{
	static const struct
	{
		uint32		class_id;
		int			max_id;
		const char *name;
	}			named[NUM_NAMED_WAITS] = {
		[NAMED_SUBTRANS_SLRU] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "SubtransSLRU"},
		[NAMED_SUBTRANS_BUFFER] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "SubtransBuffer"},
		[NAMED_OLDSNAPSHOT_TIMEMAP] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "OldSnapshotTimeMap"},
		[NAMED_PROCARRAY] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "ProcArray"},
		[NAMED_SPIN_DELAY] = {PG_WAIT_TIMEOUT, 256, "SpinDelay"},
	};

	for (int i = 0; i < NUM_NAMED_WAITS; i++)
	{
		bool		found = find_wait_event(named[i].class_id, named[i].max_id,
											named[i].name, &named_wait_info[i]);

		if (!found)
			named_wait_info[i] = UINT32_MAX;	/* matches no sample */
		sampler->named_found[i] = found;
	}
	if (!find_wait_event(PG_WAIT_CLIENT, 256, "ClientRead", &client_read_info))
		client_read_info = UINT32_MAX;
}

static PgcWaitClass
wait_class_of(uint32 info)
{
	switch (info & 0xFF000000)
	{
		case PG_WAIT_LWLOCK:
			return CLASS_LWLOCK;
		case PG_WAIT_LOCK:
			return CLASS_LOCK;
		case PGC_WAIT_BUFFERPIN:
			return CLASS_BUFFERPIN;
		case PG_WAIT_IO:
			return CLASS_IO;
		case PG_WAIT_IPC:
			return CLASS_IPC;
		case PG_WAIT_TIMEOUT:
			return CLASS_TIMEOUT;
		case PG_WAIT_EXTENSION:
			return CLASS_EXTENSION;
		case PG_WAIT_CLIENT:
			return CLASS_CLIENT;
		default:
			return CLASS_OTHER;
	}
}

/*
 * Idle: waiting for a client's next command (ClientRead), or a background
 * process waiting in its main loop for work (class Activity).  Idle
 * samples are counted, but kept out of the profile and of active_samples.
 */
static inline bool
is_idle_wait(uint32 info)
{
	return info == client_read_info || (info & 0xFF000000) == PG_WAIT_ACTIVITY;
}

/*
 * One pass over all PGPROCs, without ProcArrayLock.
 *
 * Why this is safe: pid, wait_event_info, databaseId and the subxact cache
 * status are aligned fields of at most four bytes, so each single read
 * returns a value that was really stored (the server relies on the same
 * for pg_stat_activity, which reads wait_event_info without a lock).  We
 * read pid first, then the other fields, then pid again: if the slot was
 * recycled by another process in between, the pids differ and the sample
 * is dropped.  A slot whose latch has no owner belongs to no live process
 * (before PG17 ProcKill leaves pid set, but always disowns the latch).
 * The query id is this slot's own 8-byte atomic.  Fields of one backend
 * may come from slightly different moments; for sampling that is harmless,
 * and taking ProcArrayLock 100 times a second would not be.
 */
static int
gather_tick(int *idle, int *overflowed)
{
	uint32		nprocs = ProcGlobal->allProcCount;
	PGPROC	   *procs = ProcGlobal->allProcs;
	int			n = 0;

	*idle = 0;
	*overflowed = 0;
	for (uint32 i = 0; i < nprocs; i++)
	{
		volatile PGPROC *proc = &procs[i];
		int			pid = proc->pid;
		uint32		info;
		Oid			dbid;
		Oid			roleid;
		bool		ovf;

		if (pid == 0 || proc == MyProc || proc->procLatch.owner_pid == 0)
			continue;
		info = proc->wait_event_info;
		dbid = proc->databaseId;
		roleid = proc->roleId;
		ovf = PGC_PROC_SUBXID_OVERFLOWED(proc);
		pg_read_barrier();
		if (proc->pid != pid)
			continue;			/* recycled while we looked */

		if (ovf)
			(*overflowed)++;
		if (is_idle_wait(info))
		{
			(*idle)++;
			continue;
		}
		tick_samples[n].key.dbid = dbid;
		tick_samples[n].key.roleid = roleid;
		tick_samples[n].key.wait_event_info = info;
		tick_samples[n].key.padding = 0;
		tick_samples[n].key.query_id = (i < (uint32) backend_query_ids_size) ?
			(int64) pg_atomic_read_u64(&backend_query_ids[i]) : 0;
		n++;
	}
	return n;
}

static void
rebuild_profile_index(void)
{
	HASHCTL		ctl;

	if (profile_index != NULL)
		hash_destroy(profile_index);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(PgcProfileKey);
	ctl.entrysize = sizeof(ProfileIndexEntry);
	profile_index = hash_create("pg_contention profile index",
								pgc_max_profile_entries, &ctl,
								HASH_ELEM | HASH_BLOBS);
	for (int i = 0; i < sampler->profile_used; i++)
	{
		ProfileIndexEntry *e = hash_search(profile_index, &profile[i].key,
										   HASH_ENTER, NULL);

		e->position = i;
	}
	profile_index_generation = sampler->reset_generation;
}

static int
compare_samples_desc(const void *a, const void *b)
{
	int64		sa = ((const PgcProfileEntry *) a)->samples;
	int64		sb = ((const PgcProfileEntry *) b)->samples;

	return (sa < sb) - (sa > sb);
}

/* Drop the least sampled 5% (at least one). Under sampler_lock, exclusive. */
static void
evict_profile(void)
{
	int			victims = Max(1, sampler->profile_used * 5 / 100);

	qsort(profile, sampler->profile_used, sizeof(PgcProfileEntry),
		  compare_samples_desc);
	sampler->profile_used -= victims;
	sampler->profile_evictions += victims;
	rebuild_profile_index();
}

static void
add_to_profile(const PgcProfileKey *key)
{
	ProfileIndexEntry *e;
	bool		found;

	e = hash_search(profile_index, key, HASH_FIND, NULL);
	if (e == NULL)
	{
		if (sampler->profile_used >= pgc_max_profile_entries)
			evict_profile();
		e = hash_search(profile_index, key, HASH_ENTER, &found);
		e->position = sampler->profile_used++;
		profile[e->position].key = *key;
		profile[e->position].samples = 0;
	}
	profile[e->position].samples++;
}

/* Read the Subtrans SLRU counters; false if they cannot be read. */
static bool
read_subtrans_counters(int64 *lookups, int64 *reads)
{
	PgStat_SLRUStats *slru;
	int			index = pgc_slru_index(PGC_SLRU_SUBTRANS_NAME);

	pgstat_clear_snapshot();
	slru = pgstat_fetch_slru();
	if (slru == NULL)
		return false;
	*lookups = slru[index].blocks_hit + slru[index].blocks_read;
	*reads = slru[index].blocks_read;
	return true;
}

static void
note_estimate_db(Oid dbid)
{
	if (!OidIsValid(dbid))
		return;
	for (int i = 0; i < n_estimate_dbs; i++)
		if (estimate_dbs[i] == dbid)
			return;
	if (n_estimate_dbs < MAX_ESTIMATE_DBS)
	{
		estimate_dbs[n_estimate_dbs] = dbid;
		estimate_last_ops[n_estimate_dbs] = -1;
		n_estimate_dbs++;
	}
}

/*
 * Operations that take the old-snapshot spinlocks while the setting is on,
 * estimated from counters the server keeps: transactions (each takes at
 * least one snapshot) and block requests (each heap page read may try
 * pruning) in the databases seen in samples, since the last call.  Read
 * right after the SLRU counters, from the same statistics snapshot.
 */
static int64
read_lock_op_estimate(void)
{
	int64		ops = 0;

	for (int i = 0; i < n_estimate_dbs; i++)
	{
		PgStat_StatDBEntry *db = pgstat_fetch_stat_dbentry(estimate_dbs[i]);
		int64		now_ops;

		if (db == NULL)
			continue;
		now_ops = PGC_DB_LOCK_OPS(db);
		if (estimate_last_ops[i] >= 0 && now_ops > estimate_last_ops[i])
			ops += now_ops - estimate_last_ops[i];
		estimate_last_ops[i] = now_ops;
	}
	return ops;
}

/* Time a few acquisitions of mutex_current and look at the lock words. */
static void
probe_old_snapshot(PgcOldSnapFigures *f)
{
	f->active = true;

	/* Look first: right after our own probe the line would be ours. */
	f->lock_word_reads += PGC_OLDSNAP_LOCKS * OLDSNAP_READS_PER_LOCK;
	f->lock_word_held += pgc_oldsnap_locks_held(OLDSNAP_READS_PER_LOCK);

	if (sampler->ticks % OLDSNAP_PROBE_EVERY != 0)
		return;
	for (int i = 0; i < OLDSNAP_PROBES_PER_TICK; i++)
	{
		instr_time	start,
					end;
		int64		ns;

		INSTR_TIME_SET_CURRENT(start);
		pgc_oldsnap_probe();
		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_SUBTRACT(end, start);
		ns = (int64) (INSTR_TIME_GET_DOUBLE(end) * 1e9);
		pgc_oldsnap_add_probe(f, ns);
	}
}

/*
 * Close the current bucket: add the SLRU deltas, store it in the ring, and
 * start the next at "second".  Caller holds sampler_lock exclusively; the
 * counters were read before taking it.
 */
static void
close_bucket(TimestampTz second, bool slru_ok, int64 lookups, int64 reads,
			 int64 lock_ops)
{
	PgcHistoryBucket *cur = &sampler->current;

	if (cur->bucket_start != 0 && cur->ticks > 0)
	{
		if (cur->oldsnap.active)
		{
			cur->oldsnap.lock_op_estimate = lock_ops;
			sampler->oldsnap_total.lock_op_estimate += lock_ops;
		}
		if (slru_ok && last_subtrans_lookups >= 0)
		{
			/* Counters can go back on pg_stat_reset_slru(). */
			cur->subtrans_lookups = Max(lookups - last_subtrans_lookups, 0);
			cur->subtrans_reads = Max(reads - last_subtrans_reads, 0);
			cur->slru_known = true;
		}
		history[sampler->buckets_written % pgc_history_seconds] = *cur;
		sampler->buckets_written++;
	}
	if (slru_ok)
	{
		last_subtrans_lookups = lookups;
		last_subtrans_reads = reads;
	}
	memset(cur, 0, sizeof(PgcHistoryBucket));
	cur->bucket_start = second;
}

static void
sampler_tick(TimestampTz now)
{
	instr_time	start,
				duration;
	TimestampTz second = now - (now % USECS_PER_SEC);
	PgcHistoryBucket *cur = &sampler->current;
	bool		new_second = (cur->bucket_start != second);
	bool		slru_ok = false;
	bool		oldsnap_on = pgc_oldsnap_supported() && pgc_oldsnap_setting() >= 0;
	PgcOldSnapFigures probe;
	int64		lookups = 0,
				reads = 0,
				lock_ops = 0;
	int			n,
				idle,
				overflowed;
	double		us;

	INSTR_TIME_SET_CURRENT(start);

	if (new_second)
	{
		slru_ok = read_subtrans_counters(&lookups, &reads);
		if (oldsnap_on)
			lock_ops = read_lock_op_estimate();
	}

	n = gather_tick(&idle, &overflowed);

	/* Only while the setting is on: otherwise nobody takes these locks. */
	memset(&probe, 0, sizeof(probe));
	if (oldsnap_on)
	{
		for (int i = 0; i < n; i++)
			note_estimate_db(tick_samples[i].key.dbid);
		probe_old_snapshot(&probe);
	}

	LWLockAcquire(pgc_shared->sampler_lock, LW_EXCLUSIVE);
	if (profile_index == NULL || profile_index_generation != sampler->reset_generation)
		rebuild_profile_index();
	if (new_second)
		close_bucket(second, slru_ok, lookups, reads, lock_ops);
	if (oldsnap_on)
	{
		pgc_oldsnap_merge(&cur->oldsnap, &probe);
		pgc_oldsnap_merge(&sampler->oldsnap_total, &probe);
	}

	cur->ticks++;
	cur->active_samples += n;
	cur->idle_samples += idle;
	cur->max_overflowed_backends = Max(cur->max_overflowed_backends, overflowed);
	for (int i = 0; i < n; i++)
	{
		uint32		info = tick_samples[i].key.wait_event_info;

		if (info == 0)
			cur->cpu_samples++;
		else
		{
			cur->class_samples[wait_class_of(info)]++;
			for (int w = 0; w < NUM_NAMED_WAITS; w++)
				if (info == named_wait_info[w])
					cur->named_samples[w]++;
		}
		add_to_profile(&tick_samples[i].key);
	}
	sampler->profile_samples += n;

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	us = INSTR_TIME_GET_MICROSEC(duration);
	sampler->ticks++;
	sampler->last_tick_us = us;
	sampler->total_tick_us += us;
	sampler->max_tick_us = Max(sampler->max_tick_us, us);
	LWLockRelease(pgc_shared->sampler_lock);
}

static void
sampler_exit(int code, Datum arg)
{
	if (sampler == NULL || pgc_shared == NULL)
		return;
	/* An error inside a tick may have left sampler_lock held. */
	LWLockReleaseAll();
	LWLockAcquire(pgc_shared->sampler_lock, LW_EXCLUSIVE);
	if (sampler->worker_pid == MyProcPid)
		sampler->worker_pid = 0;
	LWLockRelease(pgc_shared->sampler_lock);
}

static void
publish_settings(void)
{
	LWLockAcquire(pgc_shared->sampler_lock, LW_EXCLUSIVE);
	sampler->period_ms = pgc_sample_period;
	sampler->enabled = pgc_sampler_enabled;
	LWLockRelease(pgc_shared->sampler_lock);
}

void
pgc_sampler_main(Datum main_arg)
{
	uint32		wait_event = pgc_sampler_wait_event();
	TimestampTz next_tick;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * The worker loads the library as "pg_contention"; if the server
	 * preloaded it under another path, this is a second copy without the
	 * shared state.  Exit 0: the postmaster will not restart it.
	 */
	if (pgc_shared == NULL || sampler == NULL)
	{
		ereport(LOG,
				(errmsg("pg_contention sampler not started: the library was not preloaded as \"pg_contention\""),
				 errhint("List it as pg_contention in shared_preload_libraries.")));
		proc_exit(0);
	}

	/* No database: only shared memory and the statistics are needed. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("pg_contention sampler");

	tick_samples = MemoryContextAlloc(TopMemoryContext,
									  sizeof(TickSample) * ProcGlobal->allProcCount);

	before_shmem_exit(sampler_exit, (Datum) 0);
	LWLockAcquire(pgc_shared->sampler_lock, LW_EXCLUSIVE);
	sampler->worker_pid = MyProcPid;
	sampler->worker_started = GetCurrentTimestamp();
	sampler->ticks = 0;
	sampler->last_tick_us = sampler->max_tick_us = sampler->total_tick_us = 0;
	find_named_waits();
	/* A restarted worker starts a new bucket; the ring is kept. */
	memset(&sampler->current, 0, sizeof(PgcHistoryBucket));
	LWLockRelease(pgc_shared->sampler_lock);
	publish_settings();

	next_tick = GetCurrentTimestamp();
	for (;;)
	{
		TimestampTz now;
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			publish_settings();
		}

		now = GetCurrentTimestamp();
		if (pgc_sampler_enabled && now >= next_tick)
		{
			sampler_tick(now);
			next_tick += (TimestampTz) pgc_sample_period * 1000;
			if (next_tick <= now)	/* fell behind: do not catch up */
				next_tick = now + (TimestampTz) pgc_sample_period * 1000;
		}

		if (!pgc_sampler_enabled)
			sleep_ms = -1;		/* until a reload turns it on */
		else
		{
			/* Round up: a 0 ms timeout would spin until the next tick. */
			TimestampTz wait_us = next_tick - GetCurrentTimestamp();

			sleep_ms = wait_us > 0 ? (long) ((wait_us + 999) / 1000) : 0;
		}
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
						 (sleep_ms >= 0 ? WL_TIMEOUT : 0),
						 sleep_ms, wait_event);
		ResetLatch(MyLatch);
		if (!pgc_sampler_enabled)
			next_tick = GetCurrentTimestamp();
	}
}

/* Register the worker; called from _PG_init while preloading. */
void
pgc_sampler_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "pg_contention", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, "pgc_sampler_main", sizeof(worker.bgw_function_name));
	strlcpy(worker.bgw_name, "pg_contention sampler", sizeof(worker.bgw_name));
	strlcpy(worker.bgw_type, "pg_contention sampler", sizeof(worker.bgw_type));
	RegisterBackgroundWorker(&worker);
}

/*
 * The old-snapshot figures of the completed seconds since "since" (summed,
 * with the history's CPU and LWLock samples of the same seconds), and since
 * the last reset.
 */
void
pgc_sampler_oldsnap_window(TimestampTz since, PgcOldSnapWindow *window,
						   PgcOldSnapFigures *total)
{
	PgcHistoryBucket *copy;
	int64		written;
	int			n;
	int			timemap,
				procarray;

	memset(window, 0, sizeof(*window));
	copy = palloc_extended(mul_size(pgc_history_seconds, sizeof(PgcHistoryBucket)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_shared->sampler_lock, LW_SHARED);
	written = sampler->buckets_written;
	memcpy(copy, history, mul_size(pgc_history_seconds, sizeof(PgcHistoryBucket)));
	*total = sampler->oldsnap_total;
	window->have_timemap = sampler->named_found[NAMED_OLDSNAPSHOT_TIMEMAP];
	LWLockRelease(pgc_shared->sampler_lock);

	timemap = NAMED_OLDSNAPSHOT_TIMEMAP;
	procarray = NAMED_PROCARRAY;
	n = (int) Min(written, (int64) pgc_history_seconds);
	for (int64 i = written - n; i < written; i++)
	{
		PgcHistoryBucket *b = &copy[i % pgc_history_seconds];

		if (b->bucket_start < since)
			continue;
		window->seconds++;
		window->ticks += b->ticks;
		window->active_samples += b->active_samples;
		window->cpu_samples += b->cpu_samples;
		window->timemap_samples += b->named_samples[timemap];
		window->procarray_samples += b->named_samples[procarray];
		pgc_oldsnap_merge(&window->figures, &b->oldsnap);
	}
	pfree(copy);
}

/* ---- SQL functions ---- */

#define WAITS_COLS 7

/*
 * pg_contention_waits(): the profile.  Entries are copied under
 * sampler_lock in shared mode; names are decoded after releasing it.
 */
Datum
pg_contention_waits(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcProfileEntry *copy;
	int			n;
	int64		total;

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);

	copy = palloc_extended(mul_size(Max(pgc_max_profile_entries, 1), sizeof(PgcProfileEntry)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_shared->sampler_lock, LW_SHARED);
	n = sampler->profile_used;
	total = sampler->profile_samples;
	memcpy(copy, profile, n * sizeof(PgcProfileEntry));
	LWLockRelease(pgc_shared->sampler_lock);

	for (int i = 0; i < n; i++)
	{
		Datum		values[WAITS_COLS] = {0};
		bool		nulls[WAITS_COLS] = {0};
		uint32		info = copy[i].key.wait_event_info;

		values[0] = ObjectIdGetDatum(copy[i].key.dbid);
		/* Others' query ids only for pg_read_all_stats, as elsewhere. */
		if (copy[i].key.query_id != 0 &&
			(!OidIsValid(copy[i].key.roleid) ||
			 pgc_can_see_details(copy[i].key.roleid)))
			values[1] = Int64GetDatum(copy[i].key.query_id);
		else
			nulls[1] = true;
		if (info == 0)
		{
			values[2] = CStringGetTextDatum("CPU");
			values[3] = CStringGetTextDatum("CPU");
		}
		else
		{
			const char *type = pgstat_get_wait_event_type(info);
			const char *event = pgstat_get_wait_event(info);

			values[2] = CStringGetTextDatum(type ? type : "???");
			values[3] = CStringGetTextDatum(event ? event : "???");
		}
		values[4] = Int64GetDatum(copy[i].samples);
		values[5] = Float8GetDatum(total > 0 ? (double) copy[i].samples / total : 0.0);
		pgc_put_oid(values, nulls, 6, copy[i].key.roleid);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

#define HISTORY_COLS 22

/* pg_contention_history(): the completed one-second buckets, oldest first. */
Datum
pg_contention_history(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *tupstore;
	PgcHistoryBucket *copy;
	int64		written;
	int			n;
	bool		named_found[NUM_NAMED_WAITS];

	pgc_require_loaded();
	tupstore = pgc_materialize(fcinfo, &tupdesc);

	copy = palloc_extended(mul_size(pgc_history_seconds, sizeof(PgcHistoryBucket)),
						   MCXT_ALLOC_HUGE);
	LWLockAcquire(pgc_shared->sampler_lock, LW_SHARED);
	written = sampler->buckets_written;
	memcpy(copy, history, mul_size(pgc_history_seconds, sizeof(PgcHistoryBucket)));
	memcpy(named_found, sampler->named_found, sizeof(named_found));
	LWLockRelease(pgc_shared->sampler_lock);

	n = (int) Min(written, (int64) pgc_history_seconds);
	for (int64 i = written - n; i < written; i++)
	{
		PgcHistoryBucket *b = &copy[i % pgc_history_seconds];
		Datum		values[HISTORY_COLS] = {0};
		bool		nulls[HISTORY_COLS] = {0};
		int			c = 0;

		values[c++] = TimestampTzGetDatum(b->bucket_start);
		values[c++] = Int64GetDatum(b->ticks);
		values[c++] = Float8GetDatum(b->ticks > 0 ? (double) b->active_samples / b->ticks : 0.0);
		values[c++] = Int64GetDatum(b->idle_samples);
		values[c++] = Int64GetDatum(b->cpu_samples);
		for (int k = 0; k < NUM_WAIT_CLASSES; k++)
			values[c++] = Int64GetDatum(b->class_samples[k]);
		for (int k = 0; k < NUM_NAMED_WAITS; k++)
		{
			if (named_found[k])
				values[c] = Int64GetDatum(b->named_samples[k]);
			else
				nulls[c] = true;	/* no such wait event in this version */
			c++;
		}
		values[c++] = Int32GetDatum(b->max_overflowed_backends);
		if (b->slru_known)
		{
			values[c++] = Int64GetDatum(b->subtrans_lookups);
			values[c++] = Int64GetDatum(b->subtrans_reads);
		}
		else
		{
			nulls[c++] = true;
			nulls[c++] = true;
		}
		Assert(c == HISTORY_COLS);
		tuplestore_putvalues(tupstore, tupdesc, values, nulls);
	}
	pfree(copy);
	return (Datum) 0;
}

#define STATUS_COLS 13

/* pg_contention_sampler_status(): is the worker running, and what it costs. */
Datum
pg_contention_sampler_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS];
	bool		nulls[STATUS_COLS] = {0};
	PgcSamplerShared s;

	pgc_require_loaded();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(pgc_shared->sampler_lock, LW_SHARED);
	s = *sampler;
	LWLockRelease(pgc_shared->sampler_lock);

	values[0] = BoolGetDatum(s.worker_pid != 0);
	if (s.worker_pid != 0)
	{
		values[1] = Int32GetDatum(s.worker_pid);
		values[2] = TimestampTzGetDatum(s.worker_started);
	}
	else
		nulls[1] = nulls[2] = true;
	values[3] = BoolGetDatum(s.enabled);
	values[4] = Int32GetDatum(s.period_ms);
	values[5] = Int64GetDatum(s.ticks);
	values[6] = Float8GetDatum(s.last_tick_us);
	values[7] = Float8GetDatum(s.max_tick_us);
	values[8] = Float8GetDatum(s.ticks > 0 ? s.total_tick_us / s.ticks : 0.0);
	values[9] = Int32GetDatum(s.profile_used);
	values[10] = Int32GetDatum(pgc_max_profile_entries);
	values[11] = Int64GetDatum(s.profile_evictions);
	values[12] = Int32GetDatum((int32) Min(s.buckets_written, (int64) pgc_history_seconds));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
