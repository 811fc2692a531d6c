/*-------------------------------------------------------------------------
 *
 * sampler.c
 *		The sampler: one background worker that looks at every process each
 *		tick (pg_contention.sample_period ms; client backends from their
 *		authentication on, see gather_tick()) and keeps, in shared memory, a
 *		wait profile by (database, role, query id, wait event) and a ring of
 *		one-second buckets (pg_contention_history), with the Subtrans SLRU
 *		counters' deltas, the next-XID counter's advance (which bounds the
 *		pg_subtrans parent records written, see sampler_second.c) and the
 *		cluster's xmin horizon age read once a second, with since when
 *		each holder's xmin has had its value (stores/xmin_since.c).  While
 *		old_snapshot_threshold is on it also asks oldsnapshot.c for that
 *		tick's figures.  The SQL functions that read these stores are in
 *		sampler_views.c.
 *
 * Owns the sampler state (ShmemInitStruct "pg_contention sampler": status,
 * the profile entries and the history ring) and its LWLock.
 *
 * Locking: the worker is the only writer of the profile and the history
 * (and, with the postmaster at exit, the only process that saves them to
 * the file, a batch at a time under the lock in shared mode).
 * Once a second it computes the xmin horizon as vacuum does (ProcArrayLock
 * shared, one pass) and reads the next-XID counter (XidGenLock shared),
 * both before taking its own lock.  It gathers a tick's
 * samples without any lock, then takes the lock exclusively once to add
 * them; readers take it in shared mode to copy,
 * and never wait for the worker to answer anything.  Reset (from any
 * backend) clears the stores under the exclusive lock and bumps
 * reset_generation, so the worker drops its private index of the profile.
 * The status fields are written by the worker under the same lock; each
 * tick also publishes when it ran and when the next one is due, so that a
 * reader can tell a stopped sampler from a sleeping one.
 *
 * Dozing: after a second of ticks with nothing to sample (no process
 * active, no lock in the main lock table that a new statement could wait
 * for), the worker ticks once a second, in the middle of it, until a tick
 * finds something or a client wakes it.  While it dozes the doze flag is
 * set; a backend that starts a client statement or connects reads it (one
 * atomic read on the statement path), and the first to see it set clears
 * it and sets the worker's latch: the worker ticks at once and at its
 * period from then on.  See sampler_tick() for why no statement can start
 * unseen.
 *
 * Memory: everything a tick allocates (statistics snapshots among it)
 * lives in a context reset after every tick.
 *
 *-------------------------------------------------------------------------
 */
#include "../stores/sampler_store.h"
#include "workers.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

PGDLLEXPORT void pgc_sampler_main(Datum main_arg);

/* ---- the worker ---- */

/* One backend seen in a tick. */
typedef struct TickSample
{
	PgcProfileKey key;			/* wait_event_info UINT32_MAX: idle */
	int			procno;
	int			pid;
	PgcPublishedStatement stmt;
} TickSample;

/*
 * Samples of a client statement whose query id is not known yet (it is
 * still in parse analysis or planning), held per process until the id is
 * published with the same statement number, or the statement ends.
 */
#define PENDING_PER_PROC 4

typedef struct PendingSamples
{
	int			pid;
	uint32		statement_no;
	uint64		seen_tick;		/* the last tick that sampled the process */
	int			n;
	PgcProfileKey keys[PENDING_PER_PROC];	/* query_id 0 */
	int64		samples[PENDING_PER_PROC];
} PendingSamples;

/* Worker-private state. */
static MemoryContext tick_context = NULL;
static HTAB *profile_index = NULL;	/* key -> position in profile[] */
static uint64 profile_index_generation = 0;
static uint32 named_wait_info[PGC_NUM_NAMED_WAITS];
static uint32 client_read_info;
static TickSample *tick_samples = NULL;
static PendingSamples *pending = NULL;	/* one per PGPROC */
static int	held_procs = 0;		/* how many of them hold samples */
static int	calm_ticks = 0;		/* ticks in a row with nothing to sample */
static bool dozing = false;
static bool woken = false;		/* a client woke the dozing worker */

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
	}			named[PGC_NUM_NAMED_WAITS] = {
		[PGC_NAMED_SUBTRANS_SLRU] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "SubtransSLRU"},
		[PGC_NAMED_SUBTRANS_BUFFER] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "SubtransBuffer"},
		[PGC_NAMED_OLDSNAPSHOT_TIMEMAP] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "OldSnapshotTimeMap"},
		[PGC_NAMED_PROCARRAY] = {PG_WAIT_LWLOCK, LWTRANCHE_FIRST_USER_DEFINED, "ProcArray"},
		[PGC_NAMED_SPIN_DELAY] = {PG_WAIT_TIMEOUT, 256, "SpinDelay"},
	};

	for (int i = 0; i < PGC_NUM_NAMED_WAITS; i++)
	{
		bool		found = find_wait_event(named[i].class_id, named[i].max_id,
											named[i].name, &named_wait_info[i]);

		if (!found)
			named_wait_info[i] = UINT32_MAX;	/* matches no sample */
		pgc_sampler->named_found[i] = found;
		pgc_sampler->named_info[i] = named_wait_info[i];
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
			return PGC_CLASS_LWLOCK;
		case PG_WAIT_LOCK:
			return PGC_CLASS_LOCK;
		case PGC_WAIT_BUFFERPIN:
			return PGC_CLASS_BUFFERPIN;
		case PG_WAIT_IO:
			return PGC_CLASS_IO;
		case PG_WAIT_IPC:
			return PGC_CLASS_IPC;
		case PG_WAIT_TIMEOUT:
			return PGC_CLASS_TIMEOUT;
		case PG_WAIT_EXTENSION:
			return PGC_CLASS_EXTENSION;
		case PG_WAIT_CLIENT:
			return PGC_CLASS_CLIENT;
		default:
			return PGC_CLASS_OTHER;
	}
}

/*
 * Idle, from what the server itself says about the process:
 *  - any process waiting in class Activity: a server process in its main
 *    loop, waiting for work (walwriter, bgwriter, launchers, a walsender
 *    between messages);
 *  - a client backend waiting for its client's next command (ClientRead),
 *    inside a transaction or not;
 *  - a process that serves no client (it never published a statement
 *    number: background workers, autovacuum, auxiliary processes) waiting
 *    in class Extension or Timeout: an extension's worker sleeping in its
 *    own loop, or a process sleeping by its own choice (vacuum and
 *    checkpoint throttling).  Nobody waits for such a process.
 * A client backend in the same waits (pg_sleep, an extension's lock) is
 * running a statement that someone waits for: active.  Idle samples are
 * counted, but kept out of the profile and of active_samples.
 */
static inline bool
is_idle_wait(uint32 info, uint32 statement_no)
{
	uint32		class = info & 0xFF000000;

	if (info == client_read_info || class == PG_WAIT_ACTIVITY)
		return true;
	return statement_no == 0 &&
		(class == PG_WAIT_EXTENSION || class == PG_WAIT_TIMEOUT);
}

/*
 * Look at PGPROC i, without ProcArrayLock, as pg_stat_activity reads
 * wait_event_info; add a sample of the process in it, if any, at
 * tick_samples[*n].
 *
 * What this guarantees: every field is an aligned value of at most four
 * bytes (the published query id an 8-byte atomic), so each read returns a
 * value that was really stored.  The read barriers order the reads: pid,
 * then the fields, then pid again; a sample is kept only if both pid
 * reads agree, so every field was read while the slot belonged to that
 * process (a recycled slot changes pid: the sample is dropped).  A slot
 * whose latch has no owner belongs to no live process (before PG17
 * ProcKill leaves pid set, but always disowns the latch).
 *
 * What it does not guarantee: that a process just starting has already
 * overwritten its predecessor's roleId and databaseId (InitProcess sets
 * pid first).  The role only decides who may see a sample's query id, and
 * such a sample has none: the published statement carries the pid of the
 * process that wrote it and is read as empty for any other (a process
 * keeps its last one at exit, see current_statement.c), and a process
 * publishes one only after it has set its role, with many LWLock
 * acquisitions (full barriers) in between.  Fields
 * of one backend may otherwise come from moments a few instructions apart,
 * which is harmless for sampling; taking ProcArrayLock 100 times a second
 * would not be.
 */
static pg_attribute_always_inline void
sample_proc(uint32 i, int slots, int incidents_pid, int *n, int *idle,
			int *overflowed)
{
	volatile PGPROC *proc = &ProcGlobal->allProcs[i];
	int			pid = proc->pid;
	uint32		info;
	Oid			dbid;
	Oid			roleid;
	bool		ovf;
	PgcPublishedStatement stmt = {0};
	TickSample *s;

	/* The incidents worker's evaluations are not the workload. */
	if (pid == 0 || proc == MyProc || proc->procLatch.owner_pid == 0 ||
		pid == incidents_pid)
		return;
	pg_read_barrier();
	info = proc->wait_event_info;
	dbid = proc->databaseId;
	roleid = proc->roleId;
	ovf = PGC_PROC_SUBXID_OVERFLOWED(proc);
	if ((int) i < slots)
		pgc_read_published(i, &stmt);
	pg_read_barrier();
	if (proc->pid != pid)
		return;					/* recycled while we looked */
	/* Another process's statement (our predecessor's, see
	 * current_statement.c): this one serves no client yet. */
	if (stmt.pid != pid)
		memset(&stmt, 0, sizeof(stmt));

	if (ovf)
		(*overflowed)++;
	if (is_idle_wait(info, stmt.statement_no))
	{
		(*idle)++;
		info = UINT32_MAX;		/* kept only to settle held samples */
	}
	s = &tick_samples[(*n)++];
	s->key.dbid = dbid;
	s->key.roleid = roleid;
	s->key.wait_event_info = info;
	s->key.padding = 0;
	s->key.query_id = stmt.query_id;
	s->procno = (int) i;
	s->pid = pid;
	s->stmt = stmt;
}

/*
 * How many PGPROCs, from the start of the array, are client backends':
 * those of the server's freeProcs list, the only list InitProcess takes a
 * client backend's PGPROC from (autovacuum, special, background workers
 * and WAL senders have lists of their own).  Read from each PGPROC's
 * procgloballist rather than assumed to be max_connections: the server
 * sets it when it creates shared memory and never changes it, so the
 * reads need no lock, and once is enough.
 */
static uint32
client_proc_count(void)
{
	static uint32 count = PG_UINT32_MAX;

	if (count == PG_UINT32_MAX)
	{
		uint32		n = 0;

		while (n < ProcGlobal->allProcCount &&
			   ProcGlobal->allProcs[n].procgloballist == &ProcGlobal->freeProcs)
			n++;
		count = n;
	}
	return count;
}

/*
 * One pass over the processes.  The PGPROCs of client backends, the first
 * ones of the array (client_proc_count), are looked at only where a
 * process holds its published slot
 * (current_statement.c): a client backend takes it when its client is
 * authenticated and leaves it at exit, so a server with max_connections
 * = 1000 and ten sessions costs a tick ten looks there, not a thousand
 * cache misses.  (What is not seen: a backend still authenticating, which
 * runs no statement yet.)  Every other PGPROC (autovacuum, background and
 * parallel workers, WAL senders, auxiliary processes, prepared
 * transactions) is looked at every tick.  A process that authenticates
 * sets its bit with a full barrier before it reads the doze flag: a tick
 * that armed the flag sees the bit, or the process wakes the worker.
 */
static int
gather_tick(int *idle, int *overflowed)
{
	uint32		nprocs = ProcGlobal->allProcCount;
	int			slots = pgc_query_id_slots();
	uint32		clients = Min(Min(client_proc_count(), (uint32) Max(slots, 0)), nprocs);
	int			incidents_pid = pgc_own_pid(PGC_WORKER_INCIDENTS);
	int			n = 0;

	*idle = 0;
	*overflowed = 0;
	for (uint32 word = 0; word * 64 < clients; word++)
	{
		uint64		held = pgc_held_slots((int) word);

		while (held != 0)
		{
			uint32		i = word * 64 + pg_rightmost_one_pos64(held);

			held &= held - 1;
			if (i >= clients)
				break;
			sample_proc(i, slots, incidents_pid, &n, idle, overflowed);
		}
	}
	for (uint32 i = clients; i < nprocs; i++)
		sample_proc(i, slots, incidents_pid, &n, idle, overflowed);
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
	for (int i = 0; i < pgc_sampler->status.profile_used; i++)
	{
		ProfileIndexEntry *e = hash_search(profile_index, &pgc_profile[i].key,
										   HASH_ENTER, NULL);

		e->position = i;
	}
	profile_index_generation = pgc_sampler->reset_generation;
}

static int
compare_samples_desc(const void *a, const void *b)
{
	int64		sa = ((const PgcProfileEntry *) a)->samples;
	int64		sb = ((const PgcProfileEntry *) b)->samples;

	return (sa < sb) - (sa > sb);
}

/* Drop the least sampled 5% (at least one).  Under the lock, exclusive. */
static void
evict_profile(void)
{
	int			victims = Max(1, pgc_sampler->status.profile_used * 5 / 100);

	qsort(pgc_profile, pgc_sampler->status.profile_used, sizeof(PgcProfileEntry),
		  compare_samples_desc);
	pgc_sampler->status.profile_used -= victims;
	pgc_sampler->status.profile_evictions += victims;
	rebuild_profile_index();
}

static void
add_to_profile(const PgcProfileKey *key, int64 samples)
{
	ProfileIndexEntry *e;
	bool		found;

	e = hash_search(profile_index, key, HASH_FIND, NULL);
	if (e == NULL)
	{
		if (pgc_sampler->status.profile_used >= pgc_max_profile_entries)
			evict_profile();
		e = hash_search(profile_index, key, HASH_ENTER, &found);
		e->position = pgc_sampler->status.profile_used++;
		pgc_profile[e->position].key = *key;
		pgc_profile[e->position].samples = 0;
	}
	pgc_profile[e->position].samples += samples;
}

/* Credit a process's held samples to query_id (0: it never got one). */
static void
release_pending(PendingSamples *p, int64 query_id)
{
	for (int k = 0; k < p->n; k++)
	{
		p->keys[k].query_id = query_id;
		add_to_profile(&p->keys[k], p->samples[k]);
	}
	if (p->n > 0)
		held_procs--;
	p->n = 0;
}

/*
 * The statement that a process's held samples were waiting for, given
 * what its slot says now (stmt, of the same process): the next one if the
 * number moved one step (it started) or two (it also ended); else 0.
 */
static int64
held_statement_id(const PendingSamples *p, const PgcPublishedStatement *stmt)
{
	uint32		steps = stmt->statement_no - p->statement_no;

	return (steps == 1 || steps == 2) ? stmt->query_id : 0;
}

/*
 * Settle the held samples of a process that has left the PGPROC procno,
 * from its exit record (current_statement.c keeps it until we have read
 * it, however many processes use the PGPROC after it).
 */
static void
release_exited(PendingSamples *p, int procno)
{
	PgcPublishedStatement last;

	if (pgc_read_exit(procno, p->pid, &last))
		release_pending(p, held_statement_id(p, &last));
	else
		release_pending(p, 0);
	pgc_note_held_pid(procno, 0);
}

/*
 * Add one sample to the profile (idle samples only settle held ones).  A
 * sample of a client statement that has not started executing (odd
 * number, see current_statement.c) is held until the process's number
 * moves on: one step means the statement started, two that it also ended,
 * and in both cases the published query id is that statement's.  If the
 * number moved further, what was held goes to query id 0.  If another
 * process has the PGPROC now, the one that held samples has exited: its
 * exit record says how far it got.
 */
static void
profile_sample(const TickSample *s)
{
	PendingSamples *p = &pending[s->procno];
	const PgcPublishedStatement *stmt = &s->stmt;
	PgcProfileKey key;

	p->seen_tick = pgc_sampler->status.ticks;
	if (p->n > 0 && p->pid != s->pid)
		release_exited(p, s->procno);
	else if (p->n > 0 && p->statement_no != stmt->statement_no)
	{
		release_pending(p, held_statement_id(p, stmt));
		pgc_note_held_pid(s->procno, 0);
	}
	if (s->key.wait_event_info == UINT32_MAX)
		return;					/* idle */
	if ((stmt->statement_no & 1) == 0)
	{
		add_to_profile(&s->key, 1);
		return;
	}

	/* Held without an id: the field still shows the previous statement's. */
	key = s->key;
	key.query_id = 0;
	p->pid = s->pid;
	p->statement_no = stmt->statement_no;
	for (int k = 0; k < p->n; k++)
		if (memcmp(&p->keys[k], &key, sizeof(PgcProfileKey)) == 0)
		{
			p->samples[k]++;
			return;
		}
	if (p->n < PENDING_PER_PROC)
	{
		if (p->n == 0)
		{
			held_procs++;
			pgc_note_held_pid(s->procno, s->pid);
		}
		p->keys[p->n] = key;
		p->samples[p->n] = 1;
		p->n++;
	}
	else
		add_to_profile(&key, 1);	/* too many kinds of wait: unknown */
}

/*
 * Held samples of processes that this tick did not see: they have exited
 * (a process that holds samples holds its published slot, and is sampled
 * every tick, idle or not, until it has written its exit record and left
 * the slot, see gather_tick()).  A
 * process that sent one statement and left, after it waited in parse
 * analysis, may never have been seen running it: its exit record says
 * which statement came next, and the samples go to it as they would have.
 */
static void
settle_exited(void)
{
	for (int i = 0; i < (int) ProcGlobal->allProcCount && held_procs > 0; i++)
	{
		PendingSamples *p = &pending[i];

		if (p->n > 0 && p->seen_tick != pgc_sampler->status.ticks)
			release_exited(p, i);
	}
}

/*
 * A PGPROC (a process, or a prepared transaction's) holding a lock in the
 * main lock table, or -1.  The lists are read without the lock manager's
 * partition locks, so a list filled a moment ago may read as empty.  What
 * matters is that no new lock wait begins unseen while the worker dozes,
 * and a lock others can wait for (a strong relation lock, a transaction's
 * XID, an advisory lock) is taken either by a client's statement, which
 * wakes the worker when it starts, or by a process without a client
 * (autovacuum, a standby's replay), which the next doze tick sees, at most
 * a second later.
 */
static int
main_lock_holder(void)
{
	uint32		nprocs = PGC_PGPROCS_WITH_PREPARED();

	for (uint32 i = 0; i < nprocs; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];

		if (proc != MyProc && pgc_proc_holds_main_locks(proc))
			return (int) i;
	}
	return -1;
}

/* Dozing is worth it only when the period is shorter than a doze tick. */
static inline int
ticks_before_doze(void)
{
	return pgc_sample_period < 1000 ? 1000 / pgc_sample_period : 0;
}

/*
 * When to tick next, after a tick that found the processes "calm" (none
 * active) or not, and lock_holder (main_lock_holder(), or -1).  Samples
 * held for an idle process do not keep the worker awake: they are settled
 * when its statement number moves, at its next statement (which wakes the
 * worker) or at an abort or its exit, which a doze tick sees as well as
 * any other.  After a second of calm ticks with no lock held, and unless
 * a client cleared the doze flag during this tick, the worker dozes: it
 * ticks in the middle of the next second, so that every second of history
 * still gets a tick (and its once-a-second figures).  Otherwise it disarms
 * the flag and ticks at its period (awake_due).  Caller holds the lock
 * exclusively.
 */
static TimestampTz
plan_next_tick(TimestampTz now, TimestampTz awake_due, bool calm, int lock_holder)
{
	int			doze_after = ticks_before_doze();

	calm_ticks = calm ? calm_ticks + 1 : 0;
	if (doze_after > 0 && calm_ticks >= doze_after && lock_holder < 0 &&
		pg_atomic_read_u32(&pgc_sampler->doze) != 0)
	{
		if (!dozing)
		{
			dozing = true;
			pgc_sampler->status.dozes++;
			elog(DEBUG1, "pg_contention sampler: dozing, nothing to sample for %d ticks",
				 calm_ticks);
		}
		pgc_sampler->status.dozing = true;
		return now - (now % USECS_PER_SEC) + USECS_PER_SEC + USECS_PER_SEC / 2;
	}
	if (doze_after > 0 && calm_ticks == doze_after && lock_holder >= 0)
	{
		int			pid = ProcGlobal->allProcs[lock_holder].pid;

		if (pid != 0)
			elog(DEBUG1, "pg_contention sampler: not dozing, process %d holds a lock others could wait for",
				 pid);
		else
			elog(DEBUG1, "pg_contention sampler: not dozing, a prepared transaction holds a lock others could wait for");
	}
	if (pg_atomic_read_u32(&pgc_sampler->doze) != 0)
		pg_atomic_write_u32(&pgc_sampler->doze, 0);
	dozing = false;
	pgc_sampler->status.dozing = false;
	return awake_due;
}

/*
 * One tick at "now"; awake_due is when the next one is due at the period.
 * Returns when the loop is to wake for the next one (plan_next_tick()),
 * published with the tick so that readers can tell a sampler that stopped
 * (pg_contention_sampler_status.stale) from one that sleeps as planned.
 */
static TimestampTz
sampler_tick(TimestampTz now, TimestampTz awake_due)
{
	instr_time	start,
				duration;
	TimestampTz second = now - (now % USECS_PER_SEC);
	PgcHistoryBucket *cur = &pgc_sampler->current;
	bool		new_second = (cur->bucket_start != second);
	bool		slru_ok = false;
	bool		oldsnap_on = pgc_oldsnap_enabled();
	PgcOldSnapFigures probe;
	int64		lookups = 0,
				reads = 0,
				lock_ops = 0,
				horizon_xid_age = -1;
	uint64		next_xid = 0;
	int			n,
				idle,
				overflowed,
				active = 0,
				held_seen = 0,	/* processes seen this tick that hold samples */
				lock_holder = -1;
	int			doze_after = ticks_before_doze();
	bool		may_doze;		/* this tick may decide to doze */
	TimestampTz next_due;
	double		us;

	INSTR_TIME_SET_CURRENT(start);

	/*
	 * A tick that may decide to doze arms the doze flag before it looks at
	 * the processes, with a full barrier.  A backend stores its state (it
	 * leaves ClientRead, or starts its connection) before it reads the flag
	 * when its statement starts executing or its client is authenticated,
	 * and takes LWLocks in between (atomic read-modify-writes, full
	 * barriers: starting a transaction takes its virtual XID's fast-path
	 * lock, a snapshot ProcArrayLock).  So either gather_tick() sees that
	 * backend active, or the backend sees the flag and wakes the worker.
	 */
	may_doze = doze_after > 0 && calm_ticks + 1 >= doze_after;
	if (may_doze)
	{
		pg_atomic_write_u32(&pgc_sampler->doze, 1);
		pg_memory_barrier();
	}

	if (new_second)
	{
		slru_ok = pgc_sampler_read_subtrans_counters(&lookups, &reads);
		next_xid = pgc_sampler_read_next_xid();
		horizon_xid_age = pgc_sampler_read_horizon_xid_age();
		pgc_xmin_since_observe(now);
		if (oldsnap_on)
			lock_ops = pgc_oldsnap_read_operations();
	}

	n = gather_tick(&idle, &overflowed);
	if (may_doze && idle == n)
		lock_holder = main_lock_holder();

	/* Only while the setting is on: otherwise nobody takes these locks. */
	memset(&probe, 0, sizeof(probe));
	if (oldsnap_on)
	{
		for (int i = 0; i < n; i++)
			if (tick_samples[i].key.wait_event_info != UINT32_MAX)
				pgc_oldsnap_note_database(tick_samples[i].key.dbid);
		pgc_oldsnap_sample(pgc_sampler->status.ticks, &probe);
		pgc_oldsnap_add_to_total(&probe);
	}

	LWLockAcquire(pgc_sampler->lock, LW_EXCLUSIVE);
	if (profile_index == NULL || profile_index_generation != pgc_sampler->reset_generation)
	{
		rebuild_profile_index();
		for (int i = 0; i < (int) ProcGlobal->allProcCount; i++)
		{
			pending[i].n = 0;	/* reset: drop what was held too */
			pgc_note_held_pid(i, 0);
		}
		held_procs = 0;
	}
	if (new_second)
		pgc_sampler_close_bucket(second, slru_ok, lookups, reads, next_xid, lock_ops,
					 horizon_xid_age);
	if (oldsnap_on)
		pgc_oldsnap_add(&cur->oldsnap, &probe);

	for (int i = 0; i < n; i++)
	{
		uint32		info = tick_samples[i].key.wait_event_info;

		profile_sample(&tick_samples[i]);
		if (pending[tick_samples[i].procno].n > 0)
			held_seen++;
		if (info == UINT32_MAX)
			continue;			/* idle */
		active++;
		if (info == 0)
			cur->cpu_samples++;
		else
		{
			cur->class_samples[wait_class_of(info)]++;
			for (int w = 0; w < PGC_NUM_NAMED_WAITS; w++)
				if (info == named_wait_info[w])
					cur->named_samples[w]++;
		}
	}
	/* Only when a process that holds samples was not seen: it has exited. */
	if (held_procs > held_seen)
		settle_exited();
	next_due = plan_next_tick(now, awake_due, idle == n, lock_holder);
	if (woken)
	{
		pgc_sampler->status.doze_wakeups++;
		woken = false;
	}
	cur->ticks++;
	cur->active_samples += active;
	cur->idle_samples += idle;
	cur->max_overflowed_backends = Max(cur->max_overflowed_backends, overflowed);
	pgc_sampler->status.profile_samples += active;

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	us = INSTR_TIME_GET_MICROSEC(duration);
	pgc_sampler->status.ticks++;
	pgc_sampler->status.last_tick_us = us;
	pgc_sampler->status.total_tick_us += us;
	pgc_sampler->status.max_tick_us = Max(pgc_sampler->status.max_tick_us, us);
	pgc_sampler->status.last_tick_at = now;
	pgc_sampler->status.next_tick_due = next_due;
	if (new_second)
		pgc_sampler->status.memory_bytes = (int64) MemoryContextMemAllocated(TopMemoryContext, true);
	LWLockRelease(pgc_sampler->lock);
	return next_due;
}

static void
sampler_exit(int code, Datum arg)
{
	if (pgc_sampler == NULL || pgc_shared == NULL)
		return;
	/* An error inside a tick may have left the lock held. */
	LWLockReleaseAll();
	LWLockAcquire(pgc_sampler->lock, LW_EXCLUSIVE);
	if (pgc_sampler->status.worker_pid == MyProcPid)
	{
		pgc_sampler->status.worker_pid = 0;
		pgc_sampler->worker_latch = NULL;
		pgc_sampler->status.dozing = false;
		pg_atomic_write_u32(&pgc_sampler->doze, 0);
	}
	LWLockRelease(pgc_sampler->lock);
}

/*
 * The settings in effect.  When sampling is on, the next tick is due within
 * a period from now (the loop ticks at once after sampling is turned on).
 * A new period or sampling turned off ends a doze.
 */
static void
publish_settings(void)
{
	pg_atomic_write_u32(&pgc_sampler->doze, 0);
	calm_ticks = 0;
	dozing = false;
	LWLockAcquire(pgc_sampler->lock, LW_EXCLUSIVE);
	pgc_sampler->status.dozing = false;
	pgc_sampler->status.period_ms = pgc_sample_period;
	pgc_sampler->status.enabled = pgc_sampler_enabled;
	if (pgc_sampler_enabled)
		pgc_sampler->status.next_tick_due = GetCurrentTimestamp() +
			(TimestampTz) pgc_sample_period * 1000;
	LWLockRelease(pgc_sampler->lock);
}

void
pgc_sampler_main(Datum main_arg)
{
	uint32		wait_event = pgc_sampler_wait_event();
	TimestampTz next_tick;
	TimestampTz next_save;
	TimestampTz last_save;		/* the last save attempt, or the start */

	/*
	 * SIGTERM (shutdown, or pg_terminate_backend): leave quietly at the next
	 * loop, with code 1 so that the postmaster starts the worker again
	 * unless the server is stopping; die() would log a FATAL at every
	 * shutdown.  pg_cancel_backend() has no statement to cancel here.
	 */
	pgc_worker_start(PGC_WORKER_SAMPLER, "pg_contention sampler", pgc_sampler != NULL,
					 NULL, SignalHandlerForShutdownRequest, SIG_IGN);

	tick_samples = MemoryContextAlloc(TopMemoryContext,
									  sizeof(TickSample) * ProcGlobal->allProcCount);
	pending = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(PendingSamples) * ProcGlobal->allProcCount);
	tick_context = AllocSetContextCreate(TopMemoryContext,
										 "pg_contention sampler tick",
										 ALLOCSET_DEFAULT_SIZES);

	before_shmem_exit(sampler_exit, (Datum) 0);
	LWLockAcquire(pgc_sampler->lock, LW_EXCLUSIVE);
	pgc_sampler->status.worker_pid = MyProcPid;
	pgc_sampler->worker_latch = MyLatch;
	pgc_sampler->status.worker_started = GetCurrentTimestamp();
	pgc_sampler->status.ticks = 0;
	pgc_sampler->status.last_tick_us = 0;
	pgc_sampler->status.max_tick_us = 0;
	pgc_sampler->status.total_tick_us = 0;
	pgc_sampler->status.dozes = 0;
	pgc_sampler->status.doze_wakeups = 0;
	find_named_waits();
	/* A restarted worker starts a new bucket; the ring is kept. */
	memset(&pgc_sampler->current, 0, sizeof(PgcHistoryBucket));
	LWLockRelease(pgc_sampler->lock);
	publish_settings();

	next_tick = GetCurrentTimestamp();
	last_save = next_tick;
	next_save = last_save + (TimestampTz) pgc_save_interval * USECS_PER_SEC;
	for (;;)
	{
		TimestampTz now;
		TimestampTz wake;
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			publish_settings();

			/*
			 * A new interval counts from the last save: a shorter one may be
			 * due at once, a longer one postpones a save that was due.  Once
			 * the settings are published, no save follows at the old one.
			 */
			next_save = last_save + (TimestampTz) pgc_save_interval * USECS_PER_SEC;
		}

		now = GetCurrentTimestamp();
		if (pgc_sampler_enabled && now >= next_tick)
		{
			MemoryContext old;

			/* At the period, from the previous due time if it was awake. */
			next_tick = (dozing ? now : next_tick) +
				(TimestampTz) pgc_sample_period * 1000;
			if (next_tick <= now)	/* fell behind: do not catch up */
				next_tick = now + (TimestampTz) pgc_sample_period * 1000;
			old = MemoryContextSwitchTo(tick_context);
			next_tick = sampler_tick(now, next_tick);
			MemoryContextSwitchTo(old);
			MemoryContextReset(tick_context);
		}

		/*
		 * The stores' file (persist.c), also while sampling is off; it uses
		 * its own memory context and LOGs its failures.
		 */
		if (pg_atomic_read_u32(&pgc_sampler->save_requested) != 0)
		{
			pg_atomic_write_u32(&pgc_sampler->save_requested, 0);
			if (pgc_save_enabled && pgc_save_interval > 0)
				next_save = now;
		}
		if (pgc_save_enabled && pgc_save_interval > 0 && now >= next_save)
		{
			pgc_persist_save(true);
			last_save = now;
			next_save = now + (TimestampTz) pgc_save_interval * USECS_PER_SEC;
		}

		/* Sleep until the next tick, or the next save; -1: a reload. */
		wake = pgc_sampler_enabled ? next_tick : -1;
		if (pgc_save_enabled && pgc_save_interval > 0 && (wake < 0 || next_save < wake))
			wake = next_save;
		if (wake < 0)
			sleep_ms = -1;
		else
		{
			/* Round up: a 0 ms timeout would spin until the next tick. */
			TimestampTz wait_us = wake - GetCurrentTimestamp();

			sleep_ms = wait_us > 0 ? (long) ((wait_us + 999) / 1000) : 0;
		}
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
						 (sleep_ms >= 0 ? WL_TIMEOUT : 0),
						 sleep_ms, wait_event);
		ResetLatch(MyLatch);
		if (!pgc_sampler_enabled)
			next_tick = GetCurrentTimestamp();
		else if (dozing && pg_atomic_read_u32(&pgc_sampler->doze) == 0)
		{
			/*
			 * A client woke us: tick at once, and count the calm anew (its
			 * statement may be over by then), so that a lock it took is
			 * told once calm_ticks reaches the doze again.
			 */
			woken = true;
			calm_ticks = 0;
			elog(DEBUG1, "pg_contention sampler: woken by process %u",
				 pg_atomic_read_u32(&pgc_sampler->woken_by));
			next_tick = GetCurrentTimestamp();
		}
	}
}

/* Register the worker; called from _PG_init while preloading. */
void
pgc_sampler_register(void)
{
	pgc_register_worker("pgc_sampler_main", "pg_contention sampler", 1);
}
