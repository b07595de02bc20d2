-- A task as its owner sees it (tasks/store.py reads it for one task and for a page of them):
-- the public columns and its result file's name, size and digest — while the owner can still
-- get that result; ``result_gone`` says it was deleted, is being deleted or has expired.

CREATE VIEW task_view AS
SELECT t.id, t.owner_id, t.status, t.processor, t.processor_version, t.params, t.input_file_id,
       t.input_name, t.input_size, t.attempt_count, t.max_attempts, t.error_code, t.cancel_requested_at,
       t.result_file_id, r.name AS result_name, r.size AS result_size, r.sha256 AS result_sha256,
       (t.result_file_id IS NOT NULL AND (r.id IS NULL OR r.status <> 'ready' OR r.expires_at <= now()))
           AS result_gone,
       t.dead_lettered_at, t.price, t.charge_status, t.created_at, t.updated_at, t.finished_at
FROM task t
LEFT JOIN file r ON r.id = t.result_file_id;
