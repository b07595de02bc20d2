-- Personal accounts and their sessions.

CREATE TABLE account (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email          text NOT NULL,
    password_hash  text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- emails are stored normalised (trimmed, lower case) so uniqueness is exact
    CONSTRAINT account_email_normalised CHECK (email = lower(btrim(email))),
    CONSTRAINT account_email_shape CHECK (length(email) BETWEEN 3 AND 254 AND email LIKE '_%@_%')
);

CREATE UNIQUE INDEX account_email_key ON account (email);

-- Only a keyed hash of the session token is stored: a leaked table cannot be
-- replayed as cookies, and another site's token never matches here.
CREATE TABLE session (
    token_hash    bytea PRIMARY KEY,
    account_id    uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    CONSTRAINT session_token_hash_length CHECK (octet_length(token_hash) = 32),
    CONSTRAINT session_expiry_after_creation CHECK (expires_at > created_at)
);

CREATE INDEX session_account_idx ON session (account_id);
