-- The credits' books (audit.py). Read-only, one keyset batch of accounts at a time.

-- name: balance_batch
-- A hold takes from the balance, a refund and a grant give; a capture only records.
WITH batch AS (
    SELECT id FROM account WHERE id > $1 ORDER BY id LIMIT $2
)
SELECT b.id AS account_id,
       c.balance,
       coalesce((SELECT sum(CASE l.kind WHEN 'hold' THEN -l.amount WHEN 'capture' THEN 0 ELSE l.amount END)
                 FROM credit_ledger l WHERE l.account_id = b.id), 0)::bigint AS ledger
FROM batch b
LEFT JOIN credit_account c ON c.account_id = b.id
ORDER BY b.id;
