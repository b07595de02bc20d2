-- Charges. Every statement runs inside the transaction of a task's state
-- change, after the account row is locked (account -> task order).

-- name: hold
-- A round's price taken and recorded (migration 0018, credit_hold; the task submit holds with it
-- too); false when the balance does not cover it.
SELECT credit_hold($1, $2, $3, $4);

-- name: credit
INSERT INTO credit_account AS c (account_id, balance) VALUES ($1, $2)
ON CONFLICT (account_id) DO UPDATE SET balance = c.balance + EXCLUDED.balance
RETURNING balance;

-- name: balance
SELECT coalesce((SELECT balance FROM credit_account WHERE account_id = $1), 0);

-- name: entry
INSERT INTO credit_ledger (account_id, task_id, charge_round, kind, amount, reason)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: recent_entries
SELECT id, kind, amount, task_id, reason, created_at
FROM credit_ledger
WHERE account_id = $1
ORDER BY created_at DESC, id DESC
LIMIT $2;

-- name: entries_after
-- One page of the account's own entries, newest first, after the key ($2, $3) of the last one shown.
SELECT id, kind, amount, task_id, reason, created_at
FROM credit_ledger
WHERE account_id = $1
  AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::bigint))
ORDER BY created_at DESC, id DESC
LIMIT $4;

-- name: task_entries
-- A task's own entries, oldest first (the operator console's task view).
SELECT kind, amount, charge_round, created_at
FROM credit_ledger
WHERE task_id = $1
ORDER BY created_at, id;
