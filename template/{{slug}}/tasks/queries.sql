-- Tasks: every statement on task, task_attempt, task_input_pin and task_dead_letter.
--
-- Lock order, everywhere: the account row, then the task row, then file rows.
-- Every write-back of an executor carries its lease_version in the WHERE, so a
-- stale executor's statement matches nothing.
--
-- dispatch_version names a delivery round (docs/tasks.md, delivery.py). Exactly the statements that
-- start a round bump it: task_submit (migration 0018), retry_failed, settle_pending and
-- lease_due_deliveries leaving retry_wait. Sends and re-sends never do.
--
-- A task's hot path is three write commits (migration 0014): the submit (submit_task, with its
-- delivery lease: one call since migration 0018), claim_task and publish_result.

-- ---------------------------------------------------------------- submit (store.py)

-- name: submit_task
-- The whole submit in one call (migration 0018, task_submit; submission.py): one row, its outcome
-- and, when 'created', the new task's task_view columns; a created task's message is counted here,
-- with the commit that queues it (migration 0024, tally's tally_message_sent; delivery.py).
SELECT *, CASE WHEN outcome = 'created' THEN tally_message_sent() END AS message_counted
FROM task_submit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21);

-- name: task_by_request_key
SELECT id, request_fingerprint FROM task WHERE owner_id = $1 AND request_key = $2;

-- name: count_active
SELECT count(*) FROM task WHERE owner_id = $1 AND task_is_active(status);

-- name: insert_pin
INSERT INTO task_input_pin (task_id, file_id) VALUES ($1, $2);

-- name: release_pin
DELETE FROM task_input_pin WHERE task_id = $1;

-- ---------------------------------------------------------------- reads (store.py)

-- name: public_task
SELECT * FROM task_view WHERE id = $1 AND owner_id = $2;

-- name: list_tasks
SELECT * FROM task_view
WHERE owner_id = $1
  AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4;

-- ---------------------------------------------------------------- cancel / retry (store.py)

-- name: lock_own_task
SELECT id, owner_id, status, attempt_count, max_attempts, error_code, processor, processor_version,
       input_file_id, input_size, input_sha256, charge_status
FROM task
WHERE id = $1 AND owner_id = $2
FOR UPDATE;

-- name: cancel_waiting
UPDATE task
SET status = 'canceled', finished_at = now(), updated_at = now(),
    cancel_requested_at = coalesce(cancel_requested_at, now()),
    delivery_token = NULL, delivery_lease_expires_at = NULL, next_attempt_at = NULL
WHERE id = $1 AND status IN ('pending', 'queued', 'retry_wait');

-- name: request_cancel
-- Running: the executor (or lease recovery) settles it; reconciling: only recorded.
UPDATE task SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
WHERE id = $1 AND status IN ('running', 'reconciling');

-- name: retry_failed
-- A new round: a new dispatch version in the same statement, so a dead letter or a late
-- message of the failed round can neither fail nor claim it, even before anything is sent.
UPDATE task
SET status = 'pending', dispatch_version = dispatch_version + 1, error_code = NULL, finished_at = NULL,
    cancel_requested_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'failed' AND attempt_count < max_attempts;

-- ---------------------------------------------------------------- delivery (delivery.py)

-- name: take_delivery_lease
-- A fresh token, only while no other sender holds a live lease. The dispatch version is
-- the round's: the statement that started the round set it, and a send never changes it.
UPDATE task
SET delivery_token = $2, delivery_lease_expires_at = now() + make_interval(secs => $3), updated_at = now()
WHERE id = $1 AND status IN ('pending', 'queued')
  AND (delivery_token IS NULL OR delivery_lease_expires_at <= now())
RETURNING dispatch_version;

-- name: mark_queued
-- Only the sender still holding its token may mark the send; claim and cancel clear it.
UPDATE task
SET status = 'queued', queued_at = now(), delivery_token = NULL, delivery_lease_expires_at = NULL,
    updated_at = now()
WHERE id = $1 AND delivery_token = $2 AND status IN ('pending', 'queued')
RETURNING id;

-- name: unsent
-- The submit's send failed: back to pending, only while the submit's token is still there (a
-- claim or cancel cleared it). The lease stays, so maintenance re-sends once it is over.
UPDATE task SET status = 'pending', queued_at = NULL, updated_at = now()
WHERE id = $1 AND delivery_token = $2 AND status = 'queued';

-- name: lease_due_deliveries
-- Maintenance: pending tasks nobody is sending (after a grace for the submit's own
-- send), queued tasks unclaimed for $3 seconds, and due retry_wait tasks — each
-- gets a delivery lease in this one statement. A re-send of pending or queued is
-- the same round and keeps its dispatch version: a message of that round still
-- waiting in a long queue must stay able to claim (else a backlog longer than $3
-- never drains). Leaving retry_wait starts a new round: a new version.
UPDATE task
SET status = CASE WHEN status = 'retry_wait' THEN 'pending' ELSE status END,
    dispatch_version = dispatch_version + CASE WHEN status = 'retry_wait' THEN 1 ELSE 0 END,
    next_attempt_at = NULL,
    delivery_token = gen_random_uuid(),
    delivery_lease_expires_at = now() + make_interval(secs => $2),
    updated_at = now()
WHERE id IN (
    SELECT id FROM task
    WHERE (status = 'pending'
           AND (delivery_lease_expires_at <= now()
                OR (delivery_token IS NULL AND updated_at <= now() - make_interval(secs => $2))))
       OR (status = 'queued' AND queued_at <= now() - make_interval(secs => $3)
           AND (delivery_token IS NULL OR delivery_lease_expires_at <= now()))
       OR (status = 'retry_wait' AND next_attempt_at <= now())
    ORDER BY updated_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING id, dispatch_version, delivery_token;

-- ---------------------------------------------------------------- claim and settle (lifecycle.py)

-- name: claim_task
-- One call (migration 0014, task_claim): the message's dispatch version moves a waiting task to
-- running, spends one attempt, takes the execution lease, clears the delivery token, reserves
-- the attempt's result file and records the attempt; with the pinned input's row. No row for a
-- duplicate or stale message.
SELECT * FROM task_claim($1, $2, $3, $4, $5, $6, $7, $8);

-- name: publish_result
-- One call (migration 0014, task_publish): 'succeeded', 'lease_lost' or 'cancel_requested'.
SELECT task_publish($1, $2, $3, $4, $5, $6);

-- name: lock_leased
-- The executor's own task, only while its lease is current and live.
SELECT id, owner_id, attempt_count, max_attempts, cancel_requested_at
FROM task
WHERE id = $1 AND status = 'running' AND lease_version = $2 AND lease_expires_at > now()
FOR UPDATE;

-- name: settle_failed
UPDATE task
SET status = 'failed', error_code = $3, finished_at = now(), lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_version = $2;

-- name: settle_retry_wait
UPDATE task
SET status = 'retry_wait', next_attempt_at = now() + make_interval(secs => $3), lease_expires_at = NULL,
    updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_version = $2;

-- name: settle_canceled
UPDATE task
SET status = 'canceled', finished_at = now(), lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_version = $2;

-- name: settle_pending
-- Lease recovery with budget left: back to pending in a new round (a new dispatch version
-- in this statement), so the lost round's messages and dead letters match nothing.
UPDATE task SET status = 'pending', dispatch_version = dispatch_version + 1, lease_expires_at = NULL,
    updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_version = $2;

-- name: settle_reconciling
UPDATE task SET status = 'reconciling', lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_version = $2;

-- name: end_attempt
UPDATE task_attempt SET ended_at = now(), outcome = $3, error_code = $4
WHERE task_id = $1 AND lease_version = $2 AND ended_at IS NULL;

-- name: end_lost_attempt
-- Lease recovery: the lost attempt ends, with the result file it reserved (NULL if none): that
-- reservation is released in the same transaction (lifecycle.recover_expired_leases).
UPDATE task_attempt SET ended_at = now(), outcome = $3, error_code = $4
WHERE task_id = $1 AND lease_version = $2 AND ended_at IS NULL
RETURNING result_file_id;

-- name: expired_leases
SELECT id, owner_id FROM task
WHERE status = 'running' AND lease_expires_at <= now()
ORDER BY lease_expires_at
LIMIT $1;

-- name: lock_expired_lease
SELECT id, processor, processor_version, attempt_count, max_attempts, lease_version, cancel_requested_at
FROM task
WHERE id = $1 AND status = 'running' AND lease_expires_at <= now()
FOR UPDATE SKIP LOCKED;

-- ---------------------------------------------------------------- dead letters (dead_letters.py)

-- name: task_owner
SELECT owner_id FROM task WHERE id = $1;

-- name: lock_task
SELECT id, status, dispatch_version, attempt_count, max_attempts FROM task WHERE id = $1 FOR UPDATE;

-- name: insert_dead_letter
-- One receipt per message: a redelivered dead letter finds its receipt and changes nothing.
INSERT INTO task_dead_letter (queue_name, message_id, task_id, dispatch_version, classification)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (queue_name, message_id) DO NOTHING
RETURNING id;

-- name: dead_letter_waiting
UPDATE task
SET status = 'failed', error_code = 'DELIVERY_EXHAUSTED', finished_at = now(), dead_lettered_at = now(),
    delivery_token = NULL, delivery_lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND status IN ('pending', 'queued') AND dispatch_version = $2;

-- name: mark_dead_lettered
UPDATE task SET dead_lettered_at = now(), updated_at = now() WHERE id = $1;

-- name: lock_failed_held
SELECT id FROM task WHERE id = $1 AND status = 'failed' AND charge_status = 'held' FOR UPDATE SKIP LOCKED;

-- ---------------------------------------------------------------- operators (inspect.py)

-- name: inspect_task
SELECT id, owner_id, status, processor, processor_version, attempt_count, max_attempts, lease_version,
       lease_expires_at, dispatch_version, delivery_lease_expires_at, queued_at, next_attempt_at,
       cancel_requested_at, error_code, input_file_id, input_size, result_file_id, dead_lettered_at,
       price, charge_status, charge_round, created_at, updated_at, finished_at,
       EXISTS (SELECT 1 FROM task_input_pin p WHERE p.task_id = task.id) AS pinned
FROM task WHERE id = $1;

-- name: inspect_attempts
SELECT lease_version, started_at, ended_at, outcome, error_code, result_file_id
FROM task_attempt WHERE task_id = $1 ORDER BY lease_version;

-- name: inspect_dead_letters
SELECT queue_name, message_id, dispatch_version, classification, received_at
FROM task_dead_letter WHERE task_id = $1 ORDER BY received_at;

-- ---------------------------------------------------------------- charges of a task (billing.py)

-- name: start_charge_round
-- A retry of a refunded task holds its quoted price again, in a new round.
UPDATE task SET charge_status = 'held', charge_round = charge_round + 1, updated_at = now()
WHERE id = $1 AND charge_status = 'refunded'
RETURNING owner_id, price, charge_round;

-- name: settle_charge
-- held -> captured or refunded, once per round.
UPDATE task SET charge_status = $2, updated_at = now()
WHERE id = $1 AND charge_status = 'held'
RETURNING owner_id, price, charge_round;

-- name: failed_held_with_bad_input
-- Failed tasks still holding credits whose input can no longer be retried.
SELECT t.id, t.owner_id
FROM task t
LEFT JOIN file f ON f.id = t.input_file_id
WHERE t.status = 'failed' AND t.charge_status = 'held'
  AND (f.id IS NULL OR f.status <> 'ready' OR f.expires_at <= now()
       OR f.sha256 <> t.input_sha256 OR f.size <> t.input_size)
ORDER BY t.updated_at
LIMIT $1;

-- ---------------------------------------------------------------- figures for /metrics (figures.py)

-- name: active_by_status
-- Active tasks only: task_owner_active_idx holds exactly those, so a scrape never reads history.
SELECT status, count(*) AS n FROM task WHERE task_is_active(status) GROUP BY status;

-- name: finished_last_hour_by_status
-- One range of task_finished_idx.
SELECT status, count(*) AS n FROM task WHERE finished_at > now() - interval '1 hour' GROUP BY status;

-- name: oldest_waiting
-- How long the task that has waited longest for a worker has waited: pending or queued since its
-- submit or its last attempt's end (a re-send keeps waiting, so queued_at, which a re-send moves,
-- is not the start), or retry_wait past its due time. Reads only waiting tasks (task_pending_idx,
-- task_queued_idx, task_retry_wait_idx) and their attempts (task_attempt_version_unique).
SELECT coalesce(extract(epoch FROM now() - min(since)), 0)::float8 AS seconds
FROM (
    SELECT greatest(t.created_at, (SELECT max(a.ended_at) FROM task_attempt a WHERE a.task_id = t.id)) AS since
    FROM task t WHERE t.status = 'pending' OR t.status = 'queued'
    UNION ALL
    SELECT next_attempt_at FROM task WHERE status = 'retry_wait' AND next_attempt_at <= now()
) waiting;

-- name: claim_to_publish_last_hour
-- Claim → publish of the tasks that succeeded in the last hour, as cumulative histogram buckets:
-- one range of task_finished_idx, each task's successful attempt found by its key.
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
    SELECT extract(epoch FROM a.ended_at - a.started_at)::float8 AS d
    FROM task t JOIN task_attempt a ON a.task_id = t.id AND a.outcome = 'succeeded'
    WHERE t.finished_at > now() - interval '1 hour' AND t.status = 'succeeded'
) durations;

-- ---------------------------------------------------------------- the operator console (console.py)
-- Every account's tasks, read through task_view: the owner's public columns, never leases,
-- tokens, digests of the input, fingerprints or dispatch versions. The owner's email is joined in.

-- name: console_states
-- Tasks by state: every active one (task_owner_active_idx holds only those) and those finished
-- in the last 24 hours (task_finished_idx); never the whole history, which is kept for
-- [tasks] history_days. finished_at is set exactly on terminal tasks (0004), so none counts twice.
SELECT status, count(*) AS n FROM task WHERE task_is_active(status) GROUP BY status
UNION ALL
SELECT status, count(*) AS n FROM task WHERE finished_at > now() - interval '24 hours' GROUP BY status;

-- name: console_finished_last_hour
-- Every minute of the last hour (the current one last), with the tasks that finished in it: one
-- range of task_finished_idx, counted per minute, then laid on the hour's minutes.
SELECT m.minute,
       coalesce(f.succeeded, 0) AS succeeded,
       coalesce(f.failed, 0) AS failed,
       coalesce(f.canceled, 0) AS canceled
FROM generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()),
                     interval '1 minute') AS m (minute)
LEFT JOIN (
    SELECT date_trunc('minute', finished_at) AS minute,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'canceled') AS canceled
    FROM task
    WHERE finished_at >= date_trunc('minute', now()) - interval '59 minutes'
    GROUP BY 1
) f ON f.minute = m.minute
ORDER BY m.minute;

-- name: console_dead_letters_last_day
SELECT count(*) FROM task_dead_letter WHERE received_at > now() - interval '24 hours';

-- name: console_tasks
-- Filters are optional ($1 status, $2 error code, $3 owner email, $4..$5 created in [from, to));
-- keyset paging on (created_at, id) like the owner's list.
SELECT v.*, a.email AS owner_email
FROM task_view v
JOIN account a ON a.id = v.owner_id
WHERE ($1::text IS NULL OR v.status = $1)
  AND ($2::text IS NULL OR v.error_code = $2)
  AND ($3::text IS NULL OR a.email = $3)
  AND ($4::timestamptz IS NULL OR v.created_at >= $4)
  AND ($5::timestamptz IS NULL OR v.created_at < $5)
  AND ($6::timestamptz IS NULL OR (v.created_at, v.id) < ($6, $7::uuid))
ORDER BY v.created_at DESC, v.id DESC
LIMIT $8;

-- name: console_task
SELECT v.*, a.email AS owner_email
FROM task_view v
JOIN account a ON a.id = v.owner_id
WHERE v.id = $1;

-- name: console_attempts
-- Numbered in claim order; the lease version itself stays private.
SELECT row_number() OVER (ORDER BY lease_version) AS number, started_at, ended_at, outcome, error_code
FROM task_attempt WHERE task_id = $1 ORDER BY lease_version;

-- name: console_dead_letters
-- Class and time only: never the queue name, message id or dispatch version.
SELECT classification, received_at FROM task_dead_letter WHERE task_id = $1 ORDER BY received_at, id;
