-- Dispatch versions and dead-letter receipts.
--
-- Every send, manual retry and lease recovery bumps dispatch_version; a
-- message claims only the version it carries, so an old message can never
-- start a newer round, and a late dead letter cannot end one.

ALTER TABLE task ADD COLUMN dispatch_version integer NOT NULL DEFAULT 0;
ALTER TABLE task ADD COLUMN dead_lettered_at timestamptz;

CREATE TABLE task_dead_letter (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue_name        text NOT NULL,
    message_id        text NOT NULL,
    -- the verified task reference; NULL when the message named no known task
    -- (the raw id of such a message is not stored)
    task_id           uuid REFERENCES task (id) ON DELETE CASCADE,
    dispatch_version  integer,
    classification    text NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT task_dead_letter_once UNIQUE (queue_name, message_id),
    CONSTRAINT task_dead_letter_class_known CHECK (
        classification IN ('applied', 'deferred', 'stale', 'missing', 'invalid')
    ),
    CONSTRAINT task_dead_letter_ref CHECK ((task_id IS NULL) = (classification IN ('missing', 'invalid')))
);

CREATE INDEX task_dead_letter_task_idx ON task_dead_letter (task_id) WHERE task_id IS NOT NULL;
