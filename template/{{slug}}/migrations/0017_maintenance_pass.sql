-- What /metrics needs that no other table records (tally/): the last maintenance pass, and
-- counts of events kept where every web process reads the same and a restart resets nothing.
--
-- The pass is one row, written by every maintenance pass whatever its steps answered: an alert
-- on its age tells the operator that nothing runs maintenance (cron stopped, the loop died).
CREATE TABLE maintenance_pass (
    one           boolean PRIMARY KEY DEFAULT true,
    finished_at   timestamptz NOT NULL,
    failed_steps  integer NOT NULL,
    CONSTRAINT maintenance_pass_single CHECK (one),
    CONSTRAINT maintenance_pass_failed_steps CHECK (failed_steps >= 0)
);

-- Counters of events, each counted by the process that saw it: only ever added to (never reset
-- nor deleted with an account), so Prometheus reads them as counters. Spread over shards by the
-- backend's pid, so concurrent processes counting one event do not queue on one row.
CREATE TABLE event_tally (
    event  text NOT NULL,
    shard  smallint NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (event, shard),
    CONSTRAINT event_tally_known CHECK (event IN (
        'maintenance_pass', 'lease_recovered', 'storage_error',
        'dead_letter_applied', 'dead_letter_deferred', 'dead_letter_stale', 'dead_letter_missing',
        'dead_letter_invalid'
    )),
    CONSTRAINT event_tally_shard CHECK (shard BETWEEN 0 AND 15),
    CONSTRAINT event_tally_counts CHECK (n >= 0)
);

-- Task messages sent: a send follows its commit and writes nothing when it succeeds (a task costs
-- three write commits, docs/tasks.md), so it is counted by nextval, which is no row write and
-- no transaction. A sequence never goes back; after a crash of the server it may jump ahead (by
-- up to the 32 values PostgreSQL logs ahead). Claims need no counter of their own: each inserts
-- one task_attempt row, whose identity sequence counts them the same way.
CREATE SEQUENCE task_message_sent_seq AS bigint;
