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
