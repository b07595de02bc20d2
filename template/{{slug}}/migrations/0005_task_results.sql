-- Task results are files of their owner (quota, private key, expiry), reserved
-- per attempt and published with the task's success in one transaction.

ALTER TABLE file ADD COLUMN kind text NOT NULL DEFAULT 'upload';
ALTER TABLE file ADD CONSTRAINT file_kind_known CHECK (kind IN ('upload', 'result'));

-- Zero-byte files exist, but only as results (blank input normalises to nothing).
ALTER TABLE file DROP CONSTRAINT file_ready_not_empty;
ALTER TABLE file ADD CONSTRAINT file_ready_not_empty CHECK (status <> 'ready' OR size > 0 OR kind = 'result');

-- The result reference: history, like the input snapshot, without a foreign key.
ALTER TABLE task ADD COLUMN result_file_id uuid;
-- only succeeded has a result reference
ALTER TABLE task ADD CONSTRAINT task_result_only_succeeded CHECK ((status = 'succeeded') = (result_file_id IS NOT NULL));

-- The result file an attempt reserved before writing its object.
ALTER TABLE task_attempt ADD COLUMN result_file_id uuid REFERENCES file (id) ON DELETE SET NULL;

CREATE INDEX task_attempt_result_idx ON task_attempt (result_file_id) WHERE result_file_id IS NOT NULL;
