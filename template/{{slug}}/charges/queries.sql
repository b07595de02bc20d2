-- Charges. Every statement runs inside the transaction of a task's state
-- change, after the account row is locked (account -> task order).

-- name: debit
-- Takes $2 credits if the balance covers them; no row = insufficient.
UPDATE credit_account SET balance = balance - $2 WHERE account_id = $1 AND balance >= $2 RETURNING balance;

-- name: credit
INSERT INTO credit_account AS c (account_id, balance) VALUES ($1, $2)
ON CONFLICT (account_id) DO UPDATE SET balance = c.balance + EXCLUDED.balance
RETURNING balance;

-- name: balance
SELECT coalesce((SELECT balance FROM credit_account WHERE account_id = $1), 0);

-- name: entry
INSERT INTO credit_ledger (account_id, task_id, charge_round, kind, amount, reason)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: start_round
-- A retry of a refunded task holds its quoted price again, in a new round.
UPDATE task SET charge_status = 'held', charge_round = charge_round + 1, updated_at = now()
WHERE id = $1 AND charge_status = 'refunded'
RETURNING owner_id, price, charge_round;

-- name: settle_hold
-- held -> captured or refunded, once per round.
UPDATE task SET charge_status = $2, updated_at = now()
WHERE id = $1 AND charge_status = 'held'
RETURNING owner_id, price, charge_round;

-- name: recent_entries
SELECT kind, amount, task_id, reason, created_at
FROM credit_ledger
WHERE account_id = $1
ORDER BY created_at DESC, id DESC
LIMIT $2;

-- name: failed_held_with_bad_input
-- Failed tasks still holding credits whose input can no longer be retried.
SELECT t.id, t.owner_id
FROM task t
LEFT JOIN file f ON f.id = t.input_file_id
WHERE t.status = 'failed' AND t.charge_status = 'held'
  AND (f.id IS NULL OR f.status <> 'ready' OR f.expires_at <= now()
       OR f.sha256 <> t.input_sha256 OR f.size <> t.input_size)
ORDER BY t.updated_at
LIMIT $1;
