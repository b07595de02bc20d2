-- The operator log. Append-only: the database refuses UPDATE, DELETE and TRUNCATE (0013).

-- name: insert_action
INSERT INTO ops_action (operator_id, operator_email, action, task_id, outcome)
VALUES ($1, $2, $3, $4, $5);

-- name: recent_actions
-- Newest first; keyset paging on (created_at, id). $1: only this task's, or every action.
SELECT id, operator_email, action, task_id, outcome, created_at
FROM ops_action
WHERE ($1::uuid IS NULL OR task_id = $1)
  AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4;

-- name: start_audit_run
-- The site's audit lock (a session advisory lock $1, held until finish_audit_run or the end of
-- the connection) and, with it, the run's start. No row: another run holds the lock.
INSERT INTO ops_audit_run AS r (one, started_at)
SELECT true, now() WHERE pg_try_advisory_lock($1)
ON CONFLICT (one) DO UPDATE SET started_at = excluded.started_at
RETURNING started_at;

-- name: running_audit_started_at
SELECT started_at FROM ops_audit_run;

-- name: finish_audit_run
SELECT pg_advisory_unlock($1);
