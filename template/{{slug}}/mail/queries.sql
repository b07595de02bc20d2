-- name: enqueue
-- Nothing when $1 is NULL (a reset asked for an address with no account): the same statement runs.
INSERT INTO mail_outbox (account_id, recipient, kind, params, token_seed, max_attempts)
SELECT $1, $2, $3, $4, $5, $6
WHERE $1::uuid IS NOT NULL
RETURNING id;

-- name: claim
-- One attempt at one mail: only a pending row that is due, with attempts left. The lease token is the
-- sender's: only it finishes the row. A row another sender holds, or has finished, claims nothing.
UPDATE mail_outbox
SET status = 'sending', attempts = attempts + 1, lease_token = $2,
    lease_expires_at = now() + make_interval(secs => $3)
WHERE id = $1 AND status = 'pending' AND next_attempt_at <= now() AND attempts < max_attempts
RETURNING id, account_id, recipient, kind, params, token_seed, attempts, max_attempts;

-- name: claim_due
-- Maintenance: pending rows due for $4 seconds already (the worker's message had its chance first).
UPDATE mail_outbox
SET status = 'sending', attempts = attempts + 1, lease_token = $2,
    lease_expires_at = now() + make_interval(secs => $3)
WHERE id IN (
    SELECT id FROM mail_outbox
    WHERE status = 'pending' AND next_attempt_at <= now() - make_interval(secs => $4) AND attempts < max_attempts
    ORDER BY next_attempt_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING id, account_id, recipient, kind, params, token_seed, attempts, max_attempts;

-- name: mark_sent
UPDATE mail_outbox
SET status = 'sent', finished_at = now(), token_seed = NULL, lease_token = NULL, lease_expires_at = NULL,
    error_code = NULL
WHERE id = $1 AND lease_token = $2 AND status = 'sending'
RETURNING id;

-- name: put_back
-- Not handed over (the server was out of reach, or answered "try later"): pending again after a
-- backoff doubling from $3 seconds, or failed for good once the attempts are spent.
UPDATE mail_outbox
SET status = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'failed' END,
    finished_at = CASE WHEN attempts < max_attempts THEN NULL ELSE now() END,
    token_seed = CASE WHEN attempts < max_attempts THEN token_seed END,
    next_attempt_at = now() + make_interval(secs => $3 * power(2, attempts - 1)),
    lease_token = NULL, lease_expires_at = NULL, error_code = $4
WHERE id = $1 AND lease_token = $2 AND status = 'sending'
RETURNING status, ceil(extract(epoch FROM next_attempt_at - now()))::integer AS wait;

-- name: fail
UPDATE mail_outbox
SET status = 'failed', finished_at = now(), token_seed = NULL, lease_token = NULL, lease_expires_at = NULL,
    error_code = $3
WHERE id = $1 AND lease_token = $2 AND status = 'sending'
RETURNING id;

-- name: abandon_expired_leases
-- A sender whose lease ran out may have handed the message over before it stopped: never sent again.
UPDATE mail_outbox
SET status = 'failed', finished_at = now(), token_seed = NULL, lease_token = NULL, lease_expires_at = NULL,
    error_code = 'SEND_UNCERTAIN'
WHERE id IN (
    SELECT id FROM mail_outbox
    WHERE status = 'sending' AND lease_expires_at < now()
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- name: purge_finished
DELETE FROM mail_outbox
WHERE id IN (
    SELECT id FROM mail_outbox WHERE finished_at < now() - make_interval(days => $2) LIMIT $1
);
