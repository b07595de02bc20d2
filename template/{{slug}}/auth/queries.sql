-- name: insert_account
INSERT INTO account (email, password_hash)
VALUES ($1, $2)
ON CONFLICT (email) DO NOTHING
RETURNING id, email;

-- name: account_for_login
SELECT id, email, password_hash FROM account WHERE email = $1;

-- name: account_by_email
SELECT id, email FROM account WHERE email = $1;

-- name: insert_session
INSERT INTO session (token_hash, account_id, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3));

-- name: account_for_session
-- The session's account, only while the session is live: not revoked, within
-- its absolute expiry and used within the idle timeout ($2 seconds), with its
-- standing as of now (the guards read it here instead of asking again). Use is
-- recorded at most once a minute, so reads stay cheap.
WITH live AS (
    SELECT a.id, a.email, a.operator, a.email_verified_at IS NOT NULL AS email_verified, s.last_seen_at
    FROM session s
    JOIN account a ON a.id = s.account_id
    WHERE s.token_hash = $1
      AND s.revoked_at IS NULL
      AND s.expires_at > now()
      AND s.last_seen_at > now() - make_interval(secs => $2)
), touched AS (
    UPDATE session SET last_seen_at = now()
    WHERE token_hash = $1 AND EXISTS (SELECT 1 FROM live WHERE last_seen_at < now() - interval '60 seconds')
)
SELECT id, email, operator, email_verified FROM live;

-- name: revoke_all_sessions
UPDATE session SET revoked_at = now() WHERE account_id = $1 AND revoked_at IS NULL;

-- name: replace_password
-- Only the hash the caller checked the current password against ($2): a change that committed
-- while it was checked (with no lock held) leaves no row, and the later change is refused.
UPDATE account SET password_hash = $3 WHERE id = $1 AND password_hash = $2 RETURNING id;

-- name: account_password
SELECT password_hash FROM account WHERE id = $1;

-- name: lock_account
-- Serialises an account's writers: quota (uploads, submits, results), credits, password, deletion.
-- The lock is account_lock (migration 0014), which the tasks' claim and publication take too.
SELECT account_lock($1);

-- name: delete_account
-- Everything personal goes with the row (ON DELETE CASCADE): sessions, files,
-- tasks, pins, attempts, receipts, counters, credits and ledger. Only while the password is the
-- one checked ($2, checked with no lock held): a change committed meanwhile keeps the account.
DELETE FROM account WHERE id = $1 AND password_hash = $2 RETURNING id;

-- name: revoke_session
UPDATE session SET revoked_at = now()
WHERE token_hash = $1 AND revoked_at IS NULL;

-- name: set_operator
-- Only the `operator grant|revoke` command runs this; no web route does.
UPDATE account SET operator = $2 WHERE email = $1 RETURNING id;

-- name: purge_ended_sessions
-- Sessions past their absolute expiry by a day (revoked and idle ones end earlier and go then too):
-- no request can match them any more. Oldest first, $1 rows a statement.
DELETE FROM session
WHERE token_hash IN (
    SELECT token_hash FROM session
    WHERE expires_at < now() - interval '1 day'
    ORDER BY expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING token_hash;

-- name: insert_account_token
-- Nothing when $2 is NULL (a reset asked for an address with no account): the same statement runs.
INSERT INTO account_token (token_hash, account_id, purpose, email, expires_at)
SELECT $1, $2, $3, $4, now() + make_interval(secs => $5)
WHERE $2::uuid IS NOT NULL;

-- name: use_account_token
-- Single use: only an unused, unexpired token of this purpose; the account and the address it proves.
UPDATE account_token SET used_at = now()
WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
RETURNING account_id, email;

-- name: purge_account_tokens
DELETE FROM account_token
WHERE token_hash IN (
    SELECT token_hash FROM account_token WHERE expires_at < now() - interval '1 day' LIMIT $1
);

-- name: account_for_reset
-- The account a reset is asked for, or none: the caller does the same work either way.
SELECT id FROM account WHERE email = $1;

-- name: reset_password
-- The new hash, whatever the old one was (the token proved the address); every session then ends.
UPDATE account SET password_hash = $2 WHERE id = $1 RETURNING id;

-- name: verify_email
-- Only while the account's address is still the one the link was sent to.
UPDATE account SET email_verified_at = coalesce(email_verified_at, now())
WHERE id = $1 AND email = $2
RETURNING id;

-- name: change_email
-- The new address takes effect proven; refused (no row) when another account holds it by now.
UPDATE account SET email = $2, email_verified_at = now()
WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM account WHERE email = $2 AND id <> $1)
RETURNING (SELECT email FROM account WHERE id = $1) AS old_email;

-- name: account_by_id_exists
SELECT EXISTS (SELECT 1 FROM account WHERE id = $1);

-- name: account_token_usable
SELECT EXISTS (
    SELECT 1 FROM account_token WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
);

-- name: password_is
SELECT EXISTS (SELECT 1 FROM account WHERE id = $1 AND password_hash = $2);
