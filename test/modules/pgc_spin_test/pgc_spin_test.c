/*-------------------------------------------------------------------------
 *
 * pgc_spin_test.c
 *		Test only: take old_snapshot_threshold's mutex_current spinlock in a
 *		tight loop for a number of seconds, as every snapshot does, so that
 *		several backends running it create real spinlock contention.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pgc_spin_test);

Datum
pgc_spin_test(PG_FUNCTION_ARGS)
{
#if PG_VERSION_NUM < 170000
	double		seconds = PG_GETARG_FLOAT8(0);
	TimestampTz end = GetCurrentTimestamp() + (TimestampTz) (seconds * USECS_PER_SEC);
	int64		n = 0;

	for (;;)
	{
		/* Takes mutex_current, whatever the setting. */
		(void) GetSnapshotCurrentTimestamp();
		if ((++n & 1023) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			if (GetCurrentTimestamp() >= end)
				break;
		}
	}
	PG_RETURN_INT64(n);
#else
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("old_snapshot_threshold does not exist in this PostgreSQL version")));
	PG_RETURN_NULL();
#endif
}
