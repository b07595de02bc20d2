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
-- The session row and its account, only while the session is live.
SELECT a.id, a.email
FROM session s
JOIN account a ON a.id = s.account_id
WHERE s.token_hash = $1
  AND s.revoked_at IS NULL
  AND s.expires_at > now();

-- name: revoke_session
UPDATE session SET revoked_at = now()
WHERE token_hash = $1 AND revoked_at IS NULL;
