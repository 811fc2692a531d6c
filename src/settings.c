/*-------------------------------------------------------------------------
 *
 * settings.c
 *		The pg_contention.* settings: their variables and their
 *		definitions, with their ranges, contexts and units.
 *
 * Owns the settings.  They are defined in the postmaster at start-up
 * (_PG_init), so there is no locking; each process reads its own copy.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_contention.h"

#include <limits.h>

int			pgc_max_query_length = 1024;
int			pgc_max_events = 1000;
int			pgc_max_statements = 5000;
bool		pgc_track_statements = true;
bool		pgc_sampler_enabled = true;
int			pgc_sample_period = 10;
int			pgc_max_profile_entries = 10000;
int			pgc_history_seconds = 900;
int			pgc_horizon_min_age = 60;
int			pgc_horizon_min_xid_age = 10000;
int			pgc_subxact_warn_level = 48;
int			pgc_findings_window = 300;
bool		pgc_save_enabled = true;
int			pgc_save_interval = 60;
int			pgc_incident_interval = 10;
int			pgc_incident_close_after = 60;
int			pgc_max_incidents = 100;
int			pgc_max_index_names = 512;
bool		pgc_incident_log = true;
char	   *pgc_incident_database = NULL;

/*
 * The findings' thresholds: read by the SQL of pg_contention_findings()
 * with current_setting(), so that a session can try other values; the
 * variables exist only for the GUC machinery.
 */
static int	subtrans_lookups_warning = 50000;
static int	hot_chain_buffers_warning = 100;
static double subtrans_wait_warning = 5.0;
static double subtrans_wait_critical = 20.0;
/* Also read by every execution: what counts as a bad one (statements.c). */
int			pgc_dead_visits_warning = 1000;
static int	dead_visits_critical = 100000;
static double dead_ratio_warning = 0.5;
static int	horizon_critical_age = 3600;
static int	horizon_critical_xid_age = 10000000;
static int	overflow_ended_after = 10;
static int	old_snapshot_probe_warning = 100;
static int	old_snapshot_probe_critical = 1000;
static double old_snapshot_held_warning = 5.0;
static double old_snapshot_held_critical = 15.0;

void
pgc_define_settings(void)
{
	DefineCustomIntVariable("pg_contention.max_query_length",
							gettext_noop("Bytes of statement text kept per overflow event and per statement."),
							gettext_noop("Longer texts are truncated at a character boundary."),
							&pgc_max_query_length,
							1024, 64, 65536,
							PGC_POSTMASTER,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.max_events",
							gettext_noop("Subtransaction-overflow events kept in the ring."),
							gettext_noop("When full, the oldest event is overwritten and counted as dropped."),
							&pgc_max_events,
							1000, 1, 1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.max_statements",
							gettext_noop("Statements tracked in pg_contention_statements."),
							gettext_noop("When full, the least used statements are evicted and counted."),
							&pgc_max_statements,
							5000, 100, 1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_contention.track_statements",
							 gettext_noop("Counts executed statements and whether their snapshots were suboverflowed."),
							 NULL,
							 &pgc_track_statements,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_contention.sampler",
							 gettext_noop("Runs the sampler: the wait profile and the per-second history."),
							 NULL,
							 &pgc_sampler_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.sample_period",
							gettext_noop("Time between two samples of every backend."),
							NULL,
							&pgc_sample_period,
							10, 1, 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.max_profile_entries",
							gettext_noop("Entries (database, query id, wait event) kept in the wait profile."),
							gettext_noop("When full, the least sampled 5% are evicted and counted."),
							&pgc_max_profile_entries,
							10000, 10, 1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.history_seconds",
							gettext_noop("Seconds of per-second history kept."),
							gettext_noop("The oldest second is overwritten."),
							&pgc_history_seconds,
							900, 5, 86400,
							PGC_POSTMASTER,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.horizon_min_age",
							gettext_noop("How long a holder of the xmin horizon must have held it to be marked as blocking cleanup."),
							gettext_noop("Applies to holders whose start is known: transactions, prepared transactions, inactive slots."),
							&pgc_horizon_min_age,
							60, 0, INT_MAX / 1000,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.horizon_min_xid_age",
							gettext_noop("How old, in transactions, the xmin of a holder whose start is unknown must be to be marked as blocking cleanup."),
							gettext_noop("Applies to standby feedback and active replication slots."),
							&pgc_horizon_min_xid_age,
							10000, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.subxact_warn_level",
							gettext_noop("Cached subtransaction XIDs above which an execution counts as near overflow."),
							gettext_noop("The cache holds 64; near_overflow_calls counts executions whose transaction held more than this many."),
							&pgc_subxact_warn_level,
							48, 0, 64,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_contention.save",
							 gettext_noop("Keeps events, statements, the wait profile and the history across restarts."),
							 gettext_noop("They are written to pg_stat_tmp/pg_contention.stat at shutdown and every save_interval, and read back at start and after a crash."),
							 &pgc_save_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.save_interval",
							gettext_noop("Time between two saves of the stores by the sampler."),
							gettext_noop("0 saves only at shutdown; a crash then loses everything since the start."),
							&pgc_save_interval,
							60, 0, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.findings_window",
							gettext_noop("The window pg_contention_findings looks at."),
							gettext_noop("Per-statement and per-index figures are kept in periods of this length (the current and the previous one)."),
							&pgc_findings_window,
							300, 10, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.subtrans_lookups_warning",
							gettext_noop("pg_subtrans lookups per second that make subtransaction overflow a warning."),
							gettext_noop("Averaged over the seconds of the window with an overflowed backend or with lookups."),
							&subtrans_lookups_warning,
							50000, 1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("pg_contention.subtrans_wait_warning",
							 gettext_noop("Percentage of active time waiting on pg_subtrans that makes a warning."),
							 gettext_noop("SubtransSLRU and SubtransBuffer samples over active samples in the window."),
							 &subtrans_wait_warning,
							 5.0, 0.0, 100.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_contention.subtrans_wait_critical",
							 gettext_noop("Percentage of active time waiting on pg_subtrans that makes a critical finding."),
							 NULL,
							 &subtrans_wait_critical,
							 20.0, 0.0, 100.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Superuser only: besides a threshold of the findings, it decides what
	 * every backend's executions record in shared memory (the index names,
	 * the functions, the bad executions): a plain role could hide its own
	 * or flood the stores.
	 */
	DefineCustomIntVariable("pg_contention.dead_visits_warning",
							gettext_noop("Dead index entries visited per execution that make a warning."),
							gettext_noop("Executions that visit this many are also recorded apart (their index and function names, their worst figures)."),
							&pgc_dead_visits_warning,
							1000, 1, INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.dead_visits_critical",
							gettext_noop("Dead index entries visited per execution that make a critical finding."),
							NULL,
							&dead_visits_critical,
							100000, 1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.hot_chain_buffers_warning",
							gettext_noop("Buffers per returned row of an index lookup, behind a held horizon on a table updated mostly by HOT, that make a warning."),
							NULL,
							&hot_chain_buffers_warning,
							100, 1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("pg_contention.dead_ratio_warning",
							 gettext_noop("Share of the index entries read that must be dead for a finding."),
							 NULL,
							 &dead_ratio_warning,
							 0.5, 0.0, 1.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.horizon_critical_age",
							gettext_noop("How long a root holder of the xmin horizon must have held it for a critical finding."),
							NULL,
							&horizon_critical_age,
							3600, 0, INT_MAX / 1000,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.horizon_critical_xid_age",
							gettext_noop("How old, in transactions, a root holder's xmin must be for a critical finding."),
							NULL,
							&horizon_critical_xid_age,
							10000000, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.overflow_ended_after",
							gettext_noop("How long no transaction must have been overflowed for the subtransaction findings to say the overflow ended."),
							NULL,
							&overflow_ended_after,
							10, 1, INT_MAX / 1000,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.old_snapshot_probe_warning",
							gettext_noop("99th percentile of the old_snapshot_threshold spinlock probe, in microseconds, that makes a warning."),
							NULL,
							&old_snapshot_probe_warning,
							100, 1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.old_snapshot_probe_critical",
							gettext_noop("99th percentile of the old_snapshot_threshold spinlock probe, in microseconds, that makes a critical finding."),
							NULL,
							&old_snapshot_probe_critical,
							1000, 1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("pg_contention.old_snapshot_held_warning",
							 gettext_noop("Percentage of reads finding an old_snapshot_threshold spinlock held that makes a warning."),
							 NULL,
							 &old_snapshot_held_warning,
							 5.0, 0.0, 100.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_contention.old_snapshot_held_critical",
							 gettext_noop("Percentage of reads finding an old_snapshot_threshold spinlock held that makes a critical finding."),
							 NULL,
							 &old_snapshot_held_critical,
							 15.0, 0.0, 100.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.incident_interval",
							gettext_noop("Time between two evaluations of the findings by the incidents worker."),
							gettext_noop("0 turns incidents off; the worker is started only if it is above 0 at server start."),
							&pgc_incident_interval,
							10, 0, 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.incident_close_after",
							gettext_noop("How long a finding must have been gone, or below warning, for its incident to close."),
							NULL,
							&pgc_incident_close_after,
							60, 1, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.max_incidents",
							gettext_noop("Incidents kept in pg_contention_incidents."),
							gettext_noop("When full, the oldest closed incident is evicted (or, all open, the oldest) and counted."),
							&pgc_max_incidents,
							100, 1, 1000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_contention.max_index_names",
							gettext_noop("Names of indexes met with dead entries, and functions' contexts, kept for readers in other databases."),
							gettext_noop("When full, what is worth least gives way: an entry no finding can name, then the one whose executions met the fewest dead entries; counted."),
							&pgc_max_index_names,
							512, 64, 20000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_contention.incident_log",
							 gettext_noop("Writes a LOG line when an incident opens, escalates or closes."),
							 NULL,
							 &pgc_incident_log,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("pg_contention.incident_database",
							   gettext_noop("The database the incidents worker connects to, where the extension is installed."),
							   NULL,
							   &pgc_incident_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved("pg_contention");
}
