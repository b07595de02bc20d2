-- History retention (retention.py, SPEC §6.6). Each statement is one short transaction over at
-- most $2 rows, oldest first; rows someone else holds (SKIP LOCKED) wait for the next pass.

-- name: prune_tasks
-- Terminal tasks finished more than $1 days ago, with their attempts, pin and dead-letter receipts
-- (ON DELETE CASCADE). Kept all the same: a task still holding credits (the owner may cancel it to
-- get them back), a task whose result file still has its object (the books pair every result with
-- its task), and a task with an attempt's unpublished result not yet purged (maintenance finds
-- those through the attempt).
DELETE FROM task
WHERE id IN (
    SELECT t.id FROM task t
    WHERE t.finished_at < now() - make_interval(days => $1)
      AND t.charge_status <> 'held'
      AND NOT EXISTS (SELECT 1 FROM file f WHERE f.id = t.result_file_id AND f.status <> 'deleted')
      AND NOT EXISTS (SELECT 1 FROM task_attempt a JOIN file f ON f.id = a.result_file_id
                      WHERE a.task_id = t.id AND f.status = 'uploading')
    ORDER BY t.finished_at
    LIMIT $2
    FOR UPDATE OF t SKIP LOCKED
)
RETURNING id;

-- name: prune_orphan_dead_letters
-- Receipts of messages that named no known task (missing, invalid) have no task to go with.
DELETE FROM task_dead_letter
WHERE id IN (
    SELECT id FROM task_dead_letter
    WHERE task_id IS NULL AND received_at < now() - make_interval(days => $1)
    ORDER BY received_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
RETURNING id;
