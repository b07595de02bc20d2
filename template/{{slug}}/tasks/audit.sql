-- The tasks' books (audit.py). Read-only, one keyset batch of tasks at a time.

-- name: task_facts_batch
-- What the invariants of a task are checked on: its attempt rows, its pin,
-- its result file and its charge.
SELECT t.id, t.owner_id, t.status, t.error_code, t.attempt_count, t.max_attempts, t.charge_status,
       t.result_file_id,
       (SELECT count(*) FROM task_attempt a WHERE a.task_id = t.id) AS attempt_rows,
       (SELECT count(*) FROM task_attempt a WHERE a.task_id = t.id AND a.outcome = 'succeeded') AS succeeded_attempts,
       EXISTS (SELECT 1 FROM task_input_pin p WHERE p.task_id = t.id) AS pinned,
       task_is_active(t.status) AS active,
       f.status AS result_status,
       f.kind AS result_kind,
       f.owner_id AS result_owner_id
FROM task t
LEFT JOIN file f ON f.id = t.result_file_id
WHERE t.id > $1
ORDER BY t.id
LIMIT $2;
