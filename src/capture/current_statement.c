/*-------------------------------------------------------------------------
 *
 * current_statement.c
 *		The top-level statement this backend is running: noted by the hooks
 *		for the overflow events that name it, and published in shared
 *		memory for the sampler, which attributes its samples to it.
 *
 * Owns the array of published statements (ShmemInitStruct "pg_contention
 * query ids"), one slot per PGPROC, indexed like ProcGlobal->allProcs.
 * Each slot holds a statement number, a query id and the pid of the
 * process that wrote them; only the process owning the PGPROC writes
 * them, the sampler reads them all, and believes a slot only for the
 * process whose pid it carries.  Each slot also keeps the last two exits
 * from its PGPROC (written by the exiting process, see leave_my_slot) and
 * the pid whose samples the sampler holds (written by the sampler only).
 *
 * Protocol, without locks (two aligned atomics, ordered by a barrier):
 * the number counts the client's statements twice, 2k while statement k
 * runs (the query id is k's) and 2k + 1 once it has ended (the query id
 * is still k's, statement k + 1 has not started executing yet).
 *   - At client authentication the number becomes 1; processes that serve
 *     no client keep 0 and their samples are attributed as they come.
 *   - When a top-level statement starts executing (ExecutorStart, or
 *     ProcessUtility), its query id is written, then the number becomes
 *     even.  When it ends the number becomes odd: one store.  It ends at
 *     ExecutorEnd or at the end of ProcessUtility inside a transaction
 *     block; at the transaction's end when the transaction ends with it
 *     (an implicit transaction, COMMIT, ROLLBACK, PREPARE TRANSACTION),
 *     so that the commit's waits are the statement's; at any abort.
 *   - A utility statement runs until ProcessUtility returns, whatever
 *     happens inside: the commits of a procedure, a DO block, VACUUM or
 *     CREATE INDEX CONCURRENTLY do not end it, and the executors it runs
 *     (CREATE TABLE AS, EXPLAIN ANALYZE, COPY's query) are nested in it,
 *     not statements of their own (pgc_client_utility_running).  Only
 *     DECLARE CURSOR is left out: its executor is the cursor's, which
 *     outlives it.
 *   - A statement that fails before it starts executing (in parse
 *     analysis) writes query id 0 and skips a number at the abort.
 *   - At exit the number becomes odd (whatever ran is over), and the
 *     final number and query id are written to an exit record with the
 *     pid: the sampler can still credit what it held for a statement that
 *     ran too briefly to be seen (a connection that sends one statement
 *     and leaves), even after other processes have used the PGPROC.  Of
 *     the two records the exit overwrites the older one, unless that one
 *     belongs to the pid the sampler holds samples for: the record the
 *     sampler needs survives any number of later exits.  The next process
 *     in the PGPROC writes its own pid before anything else; until then,
 *     and for processes that serve no client, the pid differs from the
 *     PGPROC's and the sampler reads the slot as empty.
 * Beside the slots, one bit per PGPROC says that a process holds its slot
 * (set by attach_my_slot, with an atomic OR, before the process reads the
 * sampler's doze flag; cleared by leave_my_slot after the exit record is
 * written).  The sampler looks at client backends' PGPROCs through these
 * bits instead of reading every one of max_connections of them each tick
 * (sampler.c); a stale set bit only costs it a look.
 *
 * The server computes a query id only when parse analysis has finished,
 * so a statement waiting in parse analysis or planning (a lock wait behind
 * an ALTER TABLE) runs under an odd number: the sampler holds its samples
 * and credits them to the query id published with the next number, or
 * the one after if the statement ran too briefly to be seen (sampler.c).
 * An idle backend's number is odd: it is credited with nothing.
 *
 * Backend-local: the noted statement (query id, source text pointer and
 * its slice), compared only by pointer with debug_query_string.
 *
 *-------------------------------------------------------------------------
 */
#include "capture.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"

/*
 * How one process left: its pid (0 while the record is being written),
 * its final statement number and query id.
 */
typedef struct ExitRecord
{
	pg_atomic_uint64 query_id;
	pg_atomic_uint32 statement_no;
	pg_atomic_uint32 pid;
} ExitRecord;

typedef struct PublishedSlot
{
	pg_atomic_uint64 query_id;
	pg_atomic_uint32 statement_no;
	pg_atomic_uint32 pid;		/* of the process that wrote the rest */
	pg_atomic_uint32 held_pid;	/* the sampler holds samples of it; 0: none */
	uint32		newer_exit;		/* which of exits[] was written last */
	ExitRecord	exits[2];
} PublishedSlot;

static PublishedSlot *published = NULL;
static int	published_slots = 0;

/* Bit procno % 64 of word procno / 64: that PGPROC's slot is held. */
static pg_atomic_uint64 *held_slots = NULL;

#define HELD_WORDS(n)	(((n) + 63) / 64)

/* This backend's slot, found at authentication or its first statement. */
static PublishedSlot *my_slot = NULL;
static int	my_index = -1;
static uint32 my_statement_no = 0;
static bool exiting = false;	/* left the slot: never take it again */

/*
 * The noted statement.  top_statement_text (NULL: none) is never
 * dereferenced: the text is read through debug_query_string, which is
 * valid while the client's message is processed.  (For the extended protocol the source
 * text noted at Bind is the portal's copy, which is debug_query_string at
 * Execute.)
 */
static const char *top_statement_text = NULL;

/*
 * The text whose executor's end ends the statement: the noted text inside
 * a transaction block, NULL in an implicit transaction (the statement then
 * ends with its transaction, see pgc_statement_ended).  Exported for the
 * inline test in pg_contention.h; decided at the start, so the common
 * autocommit statement makes no call at its end.
 */
const char *pgc_executor_end_text = NULL;

/*
 * A client's utility statement (other than DECLARE CURSOR) is running:
 * the transactions it ends inside do not end it, and the executors it
 * starts are nested in it.  Set and cleared by hooks.c around the call,
 * also when it fails (PG_FINALLY), so it never outlives the statement.
 */
bool		pgc_client_utility_running = false;
static int64 top_query_id;
static int	top_stmt_location;
static int	top_stmt_len;

static PgcClientAuthenticationHook prev_client_authentication = NULL;

Size
pgc_query_ids_shmem_size(void)
{
	return add_size(mul_size(PGC_MAX_PROCS, sizeof(PublishedSlot)),
					mul_size(HELD_WORDS(PGC_MAX_PROCS), sizeof(pg_atomic_uint64)));
}

/* Called under AddinShmemInitLock; the slots need no lock. */
void
pgc_query_ids_shmem_init(LWLock *lock)
{
	bool		found;

	/*
	 * ProcGlobal is set up before shmem_startup_hook runs; never index past
	 * what was requested, whatever allProcCount turns out to be.
	 */
	published_slots = Min(PGC_MAX_PROCS, (int) ProcGlobal->allProcCount);
	published = ShmemInitStruct("pg_contention query ids",
								pgc_query_ids_shmem_size(), &found);
	held_slots = (pg_atomic_uint64 *) (published + PGC_MAX_PROCS);
	if (!found)
	{
		for (int w = 0; w < HELD_WORDS(PGC_MAX_PROCS); w++)
			pg_atomic_init_u64(&held_slots[w], 0);
		for (int i = 0; i < PGC_MAX_PROCS; i++)
		{
			pg_atomic_init_u64(&published[i].query_id, 0);
			pg_atomic_init_u32(&published[i].statement_no, 0);
			pg_atomic_init_u32(&published[i].pid, 0);
			pg_atomic_init_u32(&published[i].held_pid, 0);
			published[i].newer_exit = 0;
			for (int k = 0; k < 2; k++)
			{
				pg_atomic_init_u64(&published[i].exits[k].query_id, 0);
				pg_atomic_init_u32(&published[i].exits[k].statement_no, 0);
				pg_atomic_init_u32(&published[i].exits[k].pid, 0);
			}
		}
	}
}

/*
 * Only the step from odd to even can wrap to 0, which means "no client":
 * pgc_statement_begin skips it.
 */
static inline void
set_statement_no(uint32 no)
{
	my_statement_no = no;
	pg_atomic_write_u32(&my_slot->statement_no, no);
}

/*
 * Write this process's exit record (see the header comment).  The records
 * have one writer at a time: the process that owns the PGPROC, which no
 * other process gets before this one has left it (ProcKill runs after the
 * before_shmem_exit callbacks).  The sampler may move held_pid from the
 * pid it settled to a new one while we read it; either value keeps the
 * record it still needs.
 */
static void
write_exit_record(void)
{
	uint32		held_pid;
	uint32		target;
	ExitRecord *record;

	pg_memory_barrier();
	held_pid = pg_atomic_read_u32(&my_slot->held_pid);
	target = 1 - my_slot->newer_exit;
	if (held_pid != 0 && pg_atomic_read_u32(&my_slot->exits[target].pid) == held_pid)
		target = my_slot->newer_exit;
	record = &my_slot->exits[target];

	pg_atomic_write_u32(&record->pid, 0);
	pg_write_barrier();
	pg_atomic_write_u32(&record->statement_no, my_statement_no);
	pg_atomic_write_u64(&record->query_id, pg_atomic_read_u64(&my_slot->query_id));
	pg_write_barrier();
	pg_atomic_write_u32(&record->pid, (uint32) MyProcPid);
	my_slot->newer_exit = target;
}

/*
 * At exit: whatever ran is over (an odd number), and the exit record says
 * how it ended (see the header comment).  Nothing is written after this:
 * an abort that the exit runs later finds no slot.
 */
static void
leave_my_slot(int code, Datum arg)
{
	if (my_slot != NULL)
	{
		if ((my_statement_no & 1) == 0 && my_statement_no != 0)
			set_statement_no(my_statement_no + 1);
		write_exit_record();
		/* After the record: a process the sampler stops seeing has one. */
		pg_atomic_fetch_and_u64(&held_slots[my_index / 64],
								~(UINT64CONST(1) << (my_index % 64)));
	}
	my_slot = NULL;
	my_index = -1;
	my_statement_no = 0;
	exiting = true;
}

/*
 * Take this PGPROC's slot: the number to 0 (empty) first, so that no
 * reader pairs our pid with our predecessor's statement, then our pid and
 * no query id; the caller then sets the first number.
 */
static bool
attach_my_slot(void)
{
	int			index;

	if (published == NULL || MyProc == NULL || exiting)
		return false;
	index = MyProc - ProcGlobal->allProcs;
	if (index < 0 || index >= published_slots)
		return false;
	my_slot = &published[index];
	my_index = index;
	pg_atomic_write_u32(&my_slot->statement_no, 0);
	pg_write_barrier();
	pg_atomic_write_u32(&my_slot->pid, (uint32) MyProcPid);
	pg_atomic_write_u64(&my_slot->query_id, 0);
	/* A full barrier: the caller reads the doze flag after it. */
	pg_atomic_fetch_or_u64(&held_slots[index / 64], UINT64CONST(1) << (index % 64));
	before_shmem_exit(leave_my_slot, (Datum) 0);
	return true;
}

/*
 * A client has connected: this process runs client statements from now.
 * A physical walsender runs replication commands only, never a statement:
 * it stays a process that serves no statement (number 0), whose samples
 * the sampler need not hold for a statement to come.
 */
static void
pgc_client_authentication(struct Port *port, int status)
{
	if (prev_client_authentication)
		prev_client_authentication(port, status);
	if (am_walsender && !am_db_walsender)
		return;
	if (status == STATUS_OK && my_slot == NULL && attach_my_slot())
	{
		my_statement_no = 1;
		pg_atomic_write_u32(&my_slot->statement_no, my_statement_no);
		pgc_sampler_wake_if_dozing();
	}
}

void
pgc_current_statement_init(void)
{
	prev_client_authentication = ClientAuthentication_hook;
	ClientAuthentication_hook = pgc_client_authentication;
}

/*
 * A top-level statement starts executing: note it, and publish its query
 * id, then (if no statement was running) the even number that says the
 * id is this statement's.  A cursor's executor started by a top-level
 * DECLARE lands here too, with the number already even: it only replaces
 * the id.  ends_at_executor_end: an executor's statement inside a
 * transaction block (IsTransactionBlock(), which the caller reads so that
 * this stays a leaf function); false for a utility statement, which ends
 * when ProcessUtility returns (pgc_statement_end_utility).
 */
void
pgc_statement_begin(int64 query_id, const char *source_text,
					int stmt_location, int stmt_len, bool ends_at_executor_end)
{
	top_query_id = query_id;
	top_statement_text = source_text;
	pgc_executor_end_text = ends_at_executor_end ? source_text : NULL;
	top_stmt_location = stmt_location;
	top_stmt_len = stmt_len;

	if (unlikely(my_slot == NULL))
	{
		if (!attach_my_slot())
			return;
		/* A standalone backend (postgres --single) serves its client too. */
		if (!IsUnderPostmaster)
			my_statement_no = 1;
	}
	pg_atomic_write_u64(&my_slot->query_id, (uint64) query_id);
	if (my_statement_no & 1)
	{
		pg_write_barrier();
		set_statement_no(my_statement_no + 1 != 0 ? my_statement_no + 1 : 2);
		/* A new statement: its first samples are due now (sampler.c). */
		pgc_sampler_wake_if_dozing();
	}
}

/* The statement is over: an odd number says so (one store). */
static inline void
end_now(void)
{
	top_statement_text = NULL;
	pgc_executor_end_text = NULL;
	if (my_statement_no != 0 && (my_statement_no & 1) == 0)
		set_statement_no(my_statement_no + 1);
}

/*
 * The executor of the noted top-level statement has ended inside a
 * transaction block (the inline pgc_statement_end() compared the text
 * pointers: a nested statement has a text of its own, and a cursor's
 * executor ends with its own copy): the statement is over.  In an
 * implicit transaction the commit follows, and its waits (WAL flush,
 * synchronous replication) are part of the statement, which then ends at
 * the transaction's end (pgc_transaction_end).
 */
void
pgc_statement_ended(void)
{
	end_now();
}

/*
 * A top-level utility statement has ended; ends_transaction: it was
 * COMMIT, ROLLBACK or PREPARE TRANSACTION, whose work is done after it
 * returns, so the statement ends at the transaction's end, as it does in
 * an implicit transaction.
 */
void
pgc_statement_end_utility(bool ends_transaction)
{
	if (!ends_transaction && IsTransactionBlock())
		end_now();
}

/*
 * The transaction has ended: whatever ran is over, unless it was one of
 * the transactions a client's utility statement ends inside (a procedure's
 * COMMIT, VACUUM's, CREATE INDEX CONCURRENTLY's): that statement goes on.
 * After an abort, a statement that failed before it started executing (in
 * parse analysis) had an odd number and no id: it ends with id 0.
 */
void
pgc_transaction_end(bool aborted)
{
	if (unlikely(pgc_client_utility_running) && !aborted)
		return;
	top_statement_text = NULL;
	pgc_executor_end_text = NULL;
	if (my_statement_no == 0)
		return;
	if ((my_statement_no & 1) == 0)
		set_statement_no(my_statement_no + 1);
	else if (aborted)
	{
		pg_atomic_write_u64(&my_slot->query_id, 0);
		pg_write_barrier();
		set_statement_no(my_statement_no + 2);
	}
}

/*
 * The noted top-level statement, if the client's current message is the
 * one it came from: its query id and its slice of debug_query_string.
 */
bool
pgc_current_statement(int64 *query_id, int *stmt_location, int *stmt_len)
{
	if (top_statement_text == NULL ||
		debug_query_string != top_statement_text)
		return false;
	*query_id = top_query_id;
	*stmt_location = top_stmt_location;
	*stmt_len = top_stmt_len;
	return true;
}

/*
 * This backend's statement number: it changes when a client statement
 * starts and when it ends (overflow.c tells statements apart by it).
 */
uint32
pgc_statement_number(void)
{
	return my_statement_no;
}

/* For the sampler: how many slots, and one slot's contents. */
int
pgc_query_id_slots(void)
{
	return published_slots;
}

/*
 * For the sampler: 64 PGPROCs from procno word * 64 on, a bit set for each
 * whose slot a process holds (or held until a moment ago).
 */
uint64
pgc_held_slots(int word)
{
	return pg_atomic_read_u64(&held_slots[word]);
}

/*
 * The number first, then the id, the reverse of the writer's order: an id
 * read after an even number is that statement's, or a later one's if the
 * process moved on between the two reads (never an earlier one's).
 */
void
pgc_read_published(int procno, PgcPublishedStatement *out)
{
	out->statement_no = pg_atomic_read_u32(&published[procno].statement_no);
	pg_read_barrier();
	out->query_id = (int64) pg_atomic_read_u64(&published[procno].query_id);
	out->pid = (int) pg_atomic_read_u32(&published[procno].pid);
}

/*
 * For the sampler: how process pid left the PGPROC procno, if one of the
 * slot's exit records still says (out->pid is then pid).  A record is
 * believed only if its pid reads the same before and after the rest: the
 * writer zeroes it first and sets it last.
 */
bool
pgc_read_exit(int procno, int pid, PgcPublishedStatement *out)
{
	if (procno >= published_slots)
		return false;
	for (int k = 0; k < 2; k++)
	{
		ExitRecord *record = &published[procno].exits[k];

		if (pg_atomic_read_u32(&record->pid) != (uint32) pid)
			continue;
		pg_read_barrier();
		out->statement_no = pg_atomic_read_u32(&record->statement_no);
		out->query_id = (int64) pg_atomic_read_u64(&record->query_id);
		pg_read_barrier();
		if (pg_atomic_read_u32(&record->pid) != (uint32) pid)
			continue;
		out->pid = pid;
		return true;
	}
	return false;
}

/*
 * For the sampler: it holds samples of process pid in PGPROC procno (0:
 * none), whose exit record later exits must then not overwrite.  Written
 * only after the previous pid's samples were settled from its record.
 */
void
pgc_note_held_pid(int procno, int pid)
{
	if (procno >= published_slots)
		return;
	pg_atomic_write_u32(&published[procno].held_pid, (uint32) pid);
	pg_memory_barrier();
}
