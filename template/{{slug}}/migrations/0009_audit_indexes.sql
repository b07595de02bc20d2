-- Indexes the audit walks by (python -m <site> audit, docs/operations.md): an
-- account's files, and the task that references a result file. The first also
-- serves the cascade when an account is deleted.

CREATE INDEX file_owner_idx ON file (owner_id, id);
CREATE INDEX task_result_file_idx ON task (result_file_id) WHERE result_file_id IS NOT NULL;
