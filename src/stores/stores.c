/*-------------------------------------------------------------------------
 *
 * stores.c
 *		The registry: one table of pg_contention's stores, with what
 *		shmem.c needs to size, create and reset them and what persist.c
 *		needs to save and load them.  Adding a store is one entry here plus
 *		the store's own file (its callbacks declared in pg_contention.h).
 *
 * Owns no shared state and takes no locks: each store owns its block and
 * its lock.  The order of the table is the order of creation, of reset
 * and of the file's sections; the file finds a section by its file_id,
 * so an id keeps its meaning for ever and a retired one is not reused.
 *
 * Calls: shmem.c and persist.c read this table and reach the stores only
 * through it; the stores call bytes.c for their records, never persist.c.
 *
 *-------------------------------------------------------------------------
 */
#include "stores.h"

const PgcStore pgc_stores[] = {
	{
		.name = "published statements",
		.shmem_size = pgc_query_ids_shmem_size,
		.shmem_init = pgc_query_ids_shmem_init,
	},
	{
		.name = "overflow events",
		.shmem_size = pgc_events_shmem_size,
		.shmem_init = pgc_events_shmem_init,
		.needs_lock = true,
		.reset = pgc_events_reset,
		.file_id = 1,
		.record_size = pgc_events_record_size,
		.largest_section = pgc_events_largest_section,
		.save = pgc_events_save,
		.load = pgc_events_load,
	},
	{
		.name = "statements",
		.shmem_size = pgc_statements_shmem_size,
		.shmem_init = pgc_statements_shmem_init,
		.needs_lock = true,
		.reset = pgc_statements_reset,
		.file_id = 2,
		.record_size = pgc_statements_record_size,
		.largest_section = pgc_statements_largest_section,
		.save = pgc_statements_save,
		.load = pgc_statements_load,
	},
	/* The sampler's block holds the wait profile and the history. */
	{
		.name = "wait profile entries",
		.shmem_size = pgc_sampler_shmem_size,
		.shmem_init = pgc_sampler_shmem_init,
		.needs_lock = true,
		.reset = pgc_sampler_reset,
		.file_id = 3,
		.record_size = pgc_profile_record_size,
		.largest_section = pgc_profile_largest_section,
		.save = pgc_profile_save,
		.load = pgc_profile_load,
	},
	{
		.name = "seconds of history",
		.file_id = 4,
		.record_size = pgc_history_record_size,
		.largest_section = pgc_history_largest_section,
		.save = pgc_history_save,
		.load = pgc_history_load,
	},
	{
		.name = "old-snapshot totals",
		.shmem_size = pgc_oldsnap_shmem_size,
		.shmem_init = pgc_oldsnap_shmem_init,
		.needs_lock = true,
		.reset = pgc_oldsnap_reset,
	},
	{
		.name = "index names",
		.shmem_size = pgc_index_names_shmem_size,
		.shmem_init = pgc_index_names_shmem_init,
		.needs_lock = true,
		.reset = pgc_index_names_reset,
	},
	{
		.name = "xmin ages",
		.shmem_size = pgc_xmin_since_shmem_size,
		.shmem_init = pgc_xmin_since_shmem_init,
		.needs_lock = true,
	},
	{
		.name = "latest findings",
		.shmem_size = pgc_findings_latest_shmem_size,
		.shmem_init = pgc_findings_latest_shmem_init,
		.needs_lock = true,
		.reset = pgc_findings_latest_reset,
	},
	{
		.name = "incidents",
		.shmem_size = pgc_incidents_shmem_size,
		.shmem_init = pgc_incidents_shmem_init,
		.needs_lock = true,
		.reset = pgc_incidents_reset,
		.file_id = 5,
		.record_size = pgc_incidents_record_size,
		.largest_section = pgc_incidents_largest_section,
		.save = pgc_incidents_save,
		.load = pgc_incidents_load,
	},
	/* persist.c's own times: when saved, when loaded. */
	{
		.name = "save and load times",
		.shmem_size = pgc_persist_shmem_size,
		.shmem_init = pgc_persist_shmem_init,
	},
};

const int	pgc_num_stores = lengthof(pgc_stores);
