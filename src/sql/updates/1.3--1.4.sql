-- 1.3 -> 1.4: what CREATE OR REPLACE cannot do (drops, renamed or retyped
-- columns, changed grants) goes here, before every object of 1.4 is
-- re-created from src/sql/.
--
-- 1.4 splits pg_contention_findings into one function per rule
-- (pg_contention_rule_*) and their shared inputs.
--
-- pg_contention_history gains two columns (xids_assigned,
-- subtrans_reader_lookups) and an argument (since): a function's result
-- type and arguments cannot be replaced,
-- so it and its view are dropped here and history.sql creates both again
-- (with the view's grant).  Nothing else depends on them: the functions
-- that read the history are PL/pgSQL.
DROP VIEW @extschema@.pg_contention_history;
DROP FUNCTION @extschema@.pg_contention_history();

-- The statement store keys statements by application too (who pays):
-- pg_contention_statements() and pg_contention_index_scans() gain an
-- application_name column, pg_contention_recent() an argument
-- (by_application) and the column; pg_contention_recent and
-- pg_contention_index_scans gain columns for the worst execution of each
-- statement and index too, and an argument each (subtrans_only,
-- dead_only) that returns only the rows top and the metrics need.  A
-- function's result type or arguments cannot
-- be replaced: they and the views over them are dropped here and created
-- again by their files (with the views' grants).  The functions that read
-- them are PL/pgSQL or SQL without a parsed body: nothing else depends on
-- them.
DROP VIEW @extschema@.pg_contention_statements;
DROP FUNCTION @extschema@.pg_contention_statements();
DROP VIEW @extschema@.pg_contention_index_scans;
DROP FUNCTION @extschema@.pg_contention_index_scans();
DROP FUNCTION @extschema@.pg_contention_recent(integer, boolean);

-- pg_contention_sampler_status gains last_tick_at, next_tick_due and stale
-- (a stopped sampler is visible), and dozing, dozes and doze_wakeups (the
-- sampler dozes on an idle server): dropped here with its view, created again
-- by sampler_status.sql (with the view's grant).  The functions that read
-- it are PL/pgSQL: nothing else depends on it.
DROP VIEW @extschema@.pg_contention_sampler_status;
DROP FUNCTION @extschema@.pg_contention_sampler_status();

-- pg_contention_report gains an argument (incident, after window_length):
-- a function's arguments cannot be replaced, so the 1.3 one is dropped here
-- and report.sql creates it again.  pg_contention_report() and
-- pg_contention_report('5 min') call it as before.  Nothing depends on it.
DROP FUNCTION @extschema@.pg_contention_report(interval);

-- pg_contention_info gains the incidents' capacity, fill, evictions and
-- the incidents opened, and the index names': dropped here with its view,
-- created again by info.sql (with the view's grant).  The functions that read it are
-- PL/pgSQL: nothing else depends on it.
DROP VIEW @extschema@.pg_contention_info;
DROP FUNCTION @extschema@.pg_contention_info();

-- pg_contention_horizon_holders gains xmin_since (since when each holder's
-- xmin has had its value, as the sampler saw it), which the view's
-- held_for now counts from: dropped here with its view, created again by
-- horizon.sql (with the view's grant).  The functions that read the view
-- are PL/pgSQL: nothing else depends on them.
DROP VIEW @extschema@.pg_contention_horizon;
DROP FUNCTION @extschema@.pg_contention_horizon_holders();

-- pg_contention_overflow_events gains statement_subxacts and
-- statement_rows (how many subtransactions with an XID the statement that
-- overflowed opened, over how many rows): dropped here with its view,
-- created again by overflow_events.sql (with the view's grant).  The
-- functions that read it are PL/pgSQL: nothing else depends on them.
DROP VIEW @extschema@.pg_contention_overflow_events;
DROP FUNCTION @extschema@.pg_contention_overflow_events();
