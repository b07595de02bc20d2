-- name: tasks_by_status
SELECT status, count(*) AS n FROM task GROUP BY status;

-- name: claim_to_publish
-- Durations of successful attempts (claim → publish), as cumulative histogram buckets.
SELECT count(*) FILTER (WHERE d <= 0.05) AS le_0_05,
       count(*) FILTER (WHERE d <= 0.1) AS le_0_1,
       count(*) FILTER (WHERE d <= 0.25) AS le_0_25,
       count(*) FILTER (WHERE d <= 0.5) AS le_0_5,
       count(*) FILTER (WHERE d <= 1) AS le_1,
       count(*) FILTER (WHERE d <= 2.5) AS le_2_5,
       count(*) FILTER (WHERE d <= 5) AS le_5,
       count(*) FILTER (WHERE d <= 15) AS le_15,
       count(*) FILTER (WHERE d <= 60) AS le_60,
       count(*) AS total,
       coalesce(sum(d), 0)::float8 AS sum
FROM (
    SELECT extract(epoch FROM ended_at - started_at)::float8 AS d
    FROM task_attempt WHERE outcome = 'succeeded'
) durations;

-- name: delivery_totals
-- Every send spends one dispatch version; every claim one attempt.
SELECT coalesce(sum(dispatch_version), 0)::bigint AS sends, coalesce(sum(attempt_count), 0)::bigint AS claims
FROM task;

-- name: dead_letters_by_class
SELECT classification, count(*) AS n FROM task_dead_letter GROUP BY classification;
