/*-------------------------------------------------------------------------
 *
 * current_statement.c
 *		The top-level statement this backend is running: noted by the hooks
 *		for the overflow events that name it, and published in shared
 *		memory for the sampler, which attributes its samples to it.
 *
 * Owns the array of published statements (ShmemInitStruct "pg_contention
 * query ids"), one slot per PGPROC, indexed like ProcGlobal->allProcs.
 * Each slot holds the query id of the client's statement and a statement
 * number; only the backend owning the PGPROC writes its slot, the sampler
 * reads them all.
 *
 * Protocol, without locks (aligned atomics, ordered by barriers):
 *   - at client authentication the number becomes 1: from then on the
 *     process runs client statements (other processes keep 0);
 *   - when a top-level statement starts executing (ExecutorStart or
 *     ProcessUtility) its query id is written;
 *   - when it ends (ExecutorEnd or the end of ProcessUtility, or any
 *     abort) its number and query id are copied to the "ended" pair, the
 *     query id goes back to 0 and the number is incremented;
 *   - at exit everything goes back to 0, so the next process in the slot
 *     inherits nothing.
 * The server computes a query id only when parse analysis has finished,
 * so a statement waiting in parse analysis or planning (a lock wait behind
 * an ALTER TABLE) shows query id 0 with the number of the statement it
 * belongs to: the sampler holds such samples and credits them to the
 * query id published under the same number, while it runs or, if it ran
 * too briefly to be seen, in the ended pair (sampler.c).
 *
 * Backend-local: the noted statement (query id, source text pointer and
 * its slice), compared only by pointer with debug_query_string.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"

typedef struct PublishedSlot
{
	pg_atomic_uint64 query_id;
	pg_atomic_uint64 ended_query_id;
	pg_atomic_uint32 statement_no;
	pg_atomic_uint32 ended_no;
} PublishedSlot;

static PublishedSlot *published = NULL;
static int	published_slots = 0;

/* This backend's slot, found at its first statement. */
static PublishedSlot *my_slot = NULL;
static uint32 my_statement_no = 0;

/*
 * The noted statement.  top_query_string is never dereferenced: the text
 * is read through debug_query_string, which is valid while the client's
 * message is processed.  (For the extended protocol the source text noted
 * at Bind is the portal's copy, which is debug_query_string at Execute.)
 */
static bool top_known = false;
static int64 top_query_id;
static const char *top_query_string;
static int	top_stmt_location;
static int	top_stmt_len;

static PgcClientAuthenticationHook prev_client_authentication = NULL;

Size
pgc_query_ids_shmem_size(void)
{
	return mul_size(PGC_MAX_PROCS, sizeof(PublishedSlot));
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
	if (!found)
		for (int i = 0; i < PGC_MAX_PROCS; i++)
		{
			pg_atomic_init_u64(&published[i].query_id, 0);
			pg_atomic_init_u64(&published[i].ended_query_id, 0);
			pg_atomic_init_u32(&published[i].statement_no, 0);
			pg_atomic_init_u32(&published[i].ended_no, 0);
		}
}

/* At exit: the next process in this PGPROC slot must not inherit ours. */
static void
clear_my_slot(int code, Datum arg)
{
	if (my_slot != NULL)
	{
		pg_atomic_write_u64(&my_slot->query_id, 0);
		pg_atomic_write_u32(&my_slot->ended_no, 0);
		pg_write_barrier();
		pg_atomic_write_u32(&my_slot->statement_no, 0);
	}
}

static bool
attach_my_slot(void)
{
	int			index;

	if (published == NULL || MyProc == NULL)
		return false;
	index = MyProc - ProcGlobal->allProcs;
	if (index < 0 || index >= published_slots)
		return false;
	my_slot = &published[index];
	before_shmem_exit(clear_my_slot, (Datum) 0);
	return true;
}

/* A client has connected: this process runs client statements from now. */
static void
pgc_client_authentication(struct Port *port, int status)
{
	if (prev_client_authentication)
		prev_client_authentication(port, status);
	if (status == STATUS_OK && my_slot == NULL && attach_my_slot())
	{
		my_statement_no = 1;
		pg_atomic_write_u32(&my_slot->statement_no, my_statement_no);
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
 * id for the sampler (one unlocked store into our own slot).
 */
void
pgc_statement_begin(int64 query_id, const char *source_text,
					int stmt_location, int stmt_len)
{
	top_known = true;
	top_query_id = query_id;
	top_query_string = source_text;
	top_stmt_location = stmt_location;
	top_stmt_len = stmt_len;

	if (unlikely(my_slot == NULL) && !attach_my_slot())
		return;
	pg_atomic_write_u64(&my_slot->query_id, (uint64) query_id);
}

/*
 * The statement is over: 0 is published, the ended pair says what this
 * statement's id was, and the next statement gets a new number.  The
 * reader goes the other way round (pgc_read_published).
 */
static void
end_statement(void)
{
	top_known = false;
	if (my_slot == NULL)
		return;
	if (my_statement_no != 0)
	{
		pg_atomic_write_u64(&my_slot->ended_query_id,
							pg_atomic_read_u64(&my_slot->query_id));
		pg_write_barrier();
		pg_atomic_write_u32(&my_slot->ended_no, my_statement_no);
		pg_write_barrier();
	}
	pg_atomic_write_u64(&my_slot->query_id, 0);
	if (my_statement_no != 0)
	{
		pg_write_barrier();
		if (++my_statement_no == 0)
			my_statement_no = 1;
		pg_atomic_write_u32(&my_slot->statement_no, my_statement_no);
	}
}

/*
 * An executor or utility statement with this source text has ended; if it
 * was the noted top-level statement, the statement is over.  Compared by
 * pointer: a nested statement has a text of its own, and a cursor's
 * executor ends with a copy.
 */
void
pgc_statement_end(const char *source_text)
{
	if (top_known && source_text == top_query_string)
		end_statement();
}

/*
 * The transaction aborted: whatever was running has ended, also a
 * statement that failed before it was noted (in parse analysis).
 */
void
pgc_statement_forget(void)
{
	if (top_known || my_statement_no != 0)
		end_statement();
}

/*
 * The noted top-level statement, if the client's current message is the
 * one it came from: its query id and its slice of debug_query_string.
 */
bool
pgc_current_statement(int64 *query_id, int *stmt_location, int *stmt_len)
{
	if (!top_known || debug_query_string == NULL ||
		debug_query_string != top_query_string)
		return false;
	*query_id = top_query_id;
	*stmt_location = top_stmt_location;
	*stmt_len = top_stmt_len;
	return true;
}

/* For the sampler: how many slots, and one slot's contents. */
int
pgc_query_id_slots(void)
{
	return published_slots;
}

/*
 * Read in the opposite order of the writes: the number, then the id (an
 * id read after a number belongs to that statement or a later one, never
 * to an earlier one, since the writer zeroes the id before it moves the
 * number on); then the ended pair, whose number is read before and after
 * its id so that a pair being rewritten is not believed.
 */
void
pgc_read_published(int procno, PgcPublishedStatement *out)
{
	PublishedSlot *slot = &published[procno];
	uint32		ended_no;

	out->statement_no = pg_atomic_read_u32(&slot->statement_no);
	pg_read_barrier();
	out->query_id = (int64) pg_atomic_read_u64(&slot->query_id);
	pg_read_barrier();
	ended_no = pg_atomic_read_u32(&slot->ended_no);
	pg_read_barrier();
	out->ended_query_id = (int64) pg_atomic_read_u64(&slot->ended_query_id);
	pg_read_barrier();
	out->ended_no = (pg_atomic_read_u32(&slot->ended_no) == ended_no) ? ended_no : 0;
}
