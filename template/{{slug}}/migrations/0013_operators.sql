-- The operator console (docs/operations.md): who may use it, and the log of what operators did.
--
-- `account.operator` is set only by `python -m <pkg> operator grant|revoke EMAIL`; no web route
-- writes it. Every console request checks it in SQL (auth/queries.sql: account_is_operator).

ALTER TABLE account ADD COLUMN operator boolean NOT NULL DEFAULT false;

-- One row per operator action, in the transaction of the action itself. History, like a task's
-- input snapshot: no foreign keys, so deleting an operator's or an owner's account never rewrites
-- or removes a row, and the append-only trigger below never blocks such a deletion.
CREATE TABLE ops_action (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    operator_id     uuid NOT NULL,
    operator_email  text NOT NULL,
    action          text NOT NULL,
    task_id         uuid,
    outcome         text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ops_action_known CHECK (action IN ('retry', 'cancel', 'audit')),
    CONSTRAINT ops_action_task_ref CHECK ((action = 'audit') = (task_id IS NULL)),
    CONSTRAINT ops_action_outcome_shape CHECK (length(outcome) BETWEEN 1 AND 100)
);

CREATE INDEX ops_action_recent_idx ON ops_action (created_at DESC, id DESC);
CREATE INDEX ops_action_task_idx ON ops_action (task_id) WHERE task_id IS NOT NULL;

-- Append-only, kept by the database: any UPDATE, DELETE or TRUNCATE of the log fails.
CREATE FUNCTION ops_action_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ops_action is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER ops_action_no_change BEFORE UPDATE OR DELETE ON ops_action
    FOR EACH ROW EXECUTE FUNCTION ops_action_append_only();
CREATE TRIGGER ops_action_no_truncate BEFORE TRUNCATE ON ops_action
    FOR EACH STATEMENT EXECUTE FUNCTION ops_action_append_only();

-- The console's reads across every account: tasks newest first, what finished lately, recent dead letters.
CREATE INDEX task_created_idx ON task (created_at DESC, id DESC);
CREATE INDEX task_finished_idx ON task (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX task_dead_letter_received_idx ON task_dead_letter (received_at);
