-- name: add
-- One shard per backend pid: concurrent counters of one event update different rows.
INSERT INTO event_tally (event, shard, n) VALUES ($1, pg_backend_pid() % 16, $2)
ON CONFLICT (event, shard) DO UPDATE SET n = event_tally.n + excluded.n;

-- name: record_pass
INSERT INTO maintenance_pass (one, finished_at, failed_steps) VALUES (true, now(), $1)
ON CONFLICT (one) DO UPDATE SET finished_at = excluded.finished_at, failed_steps = excluded.failed_steps;

-- name: totals
-- A few dozen rows at most (events × 16 shards): read whole at every scrape.
SELECT event, sum(n)::bigint AS n FROM event_tally GROUP BY event;

-- name: last_pass
SELECT extract(epoch FROM finished_at)::float8 AS finished_at, failed_steps FROM maintenance_pass;

-- name: count_message_sent
SELECT tally_message_sent();

-- name: sequence_totals
-- A sequence that was never used has is_called false and last_value at its start (1).
SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM task_message_sent_seq) AS messages_sent,
       (SELECT CASE WHEN is_called THEN last_value ELSE 0 END
        FROM task_attempt_id_seq) AS claims;
