-- Priced tasks: the quote on the task, a ledger linked to tasks, the account balance.
--
-- Money moves only with a task's state change, in the same transaction:
-- submit (and a retry after a refund) places a hold, success captures it,
-- cancel / final failure / abandon refund it. Each charge round of a task has
-- at most one hold, one capture and one refund.

ALTER TABLE task ADD COLUMN price integer NOT NULL DEFAULT 0;
ALTER TABLE task ADD COLUMN charge_status text NOT NULL DEFAULT 'free';
ALTER TABLE task ADD COLUMN charge_round integer NOT NULL DEFAULT 0;
ALTER TABLE task ADD CONSTRAINT task_price_not_negative CHECK (price >= 0);
ALTER TABLE task ADD CONSTRAINT task_charge_status_known
    CHECK (charge_status IN ('free', 'held', 'captured', 'refunded'));
ALTER TABLE task ADD CONSTRAINT task_free_iff_no_price CHECK ((price = 0) = (charge_status = 'free'));
-- a success has been paid for; a cancel never keeps money
ALTER TABLE task ADD CONSTRAINT task_succeeded_is_captured
    CHECK (status <> 'succeeded' OR charge_status IN ('free', 'captured'));
ALTER TABLE task ADD CONSTRAINT task_canceled_is_not_held CHECK (status <> 'canceled' OR charge_status <> 'held');

CREATE TABLE credit_account (
    account_id  uuid PRIMARY KEY REFERENCES account (id) ON DELETE CASCADE,
    balance     bigint NOT NULL DEFAULT 0,
    CONSTRAINT credit_account_not_negative CHECK (balance >= 0)
);

CREATE TABLE credit_ledger (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    task_id       uuid REFERENCES task (id) ON DELETE CASCADE,
    charge_round  integer,
    kind          text NOT NULL,
    amount        bigint NOT NULL,
    reason        text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT credit_ledger_kind_known CHECK (kind IN ('grant', 'hold', 'capture', 'refund')),
    CONSTRAINT credit_ledger_amount_positive CHECK (amount > 0),
    CONSTRAINT credit_ledger_task_entries CHECK ((kind = 'grant') = (task_id IS NULL AND charge_round IS NULL)),
    CONSTRAINT credit_ledger_grant_reason CHECK ((kind = 'grant') = (reason IS NOT NULL)),
    -- nothing settles twice
    CONSTRAINT credit_ledger_once UNIQUE (task_id, charge_round, kind)
);

CREATE INDEX credit_ledger_account_idx ON credit_ledger (account_id, created_at DESC, id DESC);
CREATE INDEX task_failed_held_idx ON task (updated_at) WHERE status = 'failed' AND charge_status = 'held';
