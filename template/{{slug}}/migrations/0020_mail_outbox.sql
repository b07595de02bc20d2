-- Mail (SPEC §4.1): proven addresses, single-use links, and the outbox the worker sends from.

-- When the account's current address was proven (a verification or email-change link followed);
-- NULL: not proven. An email change sets it with the new address, in one statement.
ALTER TABLE account ADD COLUMN email_verified_at timestamptz;

-- The links a mail carries (password reset, address verification, email change). Only a keyed hash
-- of the token is stored (auth/tokens.py): the database alone can neither read nor mint one, and a
-- token of another site never hashes to a row here. A token is used at most once (used_at), and
-- never after expires_at. `email` is the address the link proves (verification, email change).
CREATE TABLE account_token (
    token_hash  bytea PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    purpose     text NOT NULL,
    email       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    CONSTRAINT account_token_hash_length CHECK (octet_length(token_hash) = 32),
    CONSTRAINT account_token_purpose CHECK (purpose IN ('reset', 'verify', 'email')),
    CONSTRAINT account_token_email_normalised CHECK (email = lower(btrim(email)) AND length(email) BETWEEN 3 AND 254),
    CONSTRAINT account_token_expiry_after_creation CHECK (expires_at > created_at),
    CONSTRAINT account_token_used_in_time CHECK (used_at IS NULL OR used_at <= expires_at)
);

CREATE INDEX account_token_account_idx ON account_token (account_id, purpose);
CREATE INDEX account_token_expires_idx ON account_token (expires_at);

-- The outbox: one row per mail, written in the transaction of what caused it, sent after the commit
-- by the worker (or maintenance), at most once. A row is claimed for one attempt with a lease
-- (`sending`, lease_token); only the holder of the token marks it sent or puts it back. A send
-- whose outcome is unknown (the connection broke after the message was handed over, or the
-- sender's lease ran out) is never tried again: `failed` with SEND_UNCERTAIN.
-- The body is composed at send time from `kind`, `params` and `token_seed` (the link's token is a
-- keyed function of the seed: auth/tokens.py); the seed is cleared once the row is finished.
-- error_code is one of mail/errors.py's stable codes: never a server's words.
CREATE TABLE mail_outbox (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id       uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    recipient        text NOT NULL,
    kind             text NOT NULL,
    params           jsonb NOT NULL DEFAULT '{}'::jsonb,
    token_seed       bytea,
    status           text NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL DEFAULT 6,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    lease_token      uuid,
    lease_expires_at timestamptz,
    error_code       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT mail_outbox_kind CHECK (kind IN ('reset', 'verify', 'email_change', 'email_changed')),
    CONSTRAINT mail_outbox_status CHECK (status IN ('pending', 'sending', 'sent', 'failed')),
    CONSTRAINT mail_outbox_recipient_shape CHECK (length(recipient) BETWEEN 3 AND 254 AND recipient LIKE '_%@_%'),
    CONSTRAINT mail_outbox_seed_length CHECK (token_seed IS NULL OR octet_length(token_seed) = 32),
    CONSTRAINT mail_outbox_attempts CHECK (attempts BETWEEN 0 AND max_attempts),
    -- only `sending` holds a lease; only a finished row has finished_at, and no seed
    CONSTRAINT mail_outbox_lease CHECK ((status = 'sending') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT mail_outbox_finished CHECK ((status IN ('sent', 'failed')) = (finished_at IS NOT NULL)),
    CONSTRAINT mail_outbox_finished_seed CHECK (finished_at IS NULL OR token_seed IS NULL),
    -- a mail with a link has its seed until it is finished; one that only tells has none
    CONSTRAINT mail_outbox_link_seed CHECK (CASE WHEN kind = 'email_changed' THEN token_seed IS NULL
                                                 ELSE token_seed IS NOT NULL OR finished_at IS NOT NULL END),
    CONSTRAINT mail_outbox_error_code CHECK (error_code IS NULL OR error_code ~ '^[A-Z_]{1,40}$'),
    CONSTRAINT mail_outbox_sent_clean CHECK (status <> 'sent' OR error_code IS NULL)
);

CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX mail_outbox_lease_idx ON mail_outbox (lease_expires_at) WHERE status = 'sending';
CREATE INDEX mail_outbox_finished_idx ON mail_outbox (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX mail_outbox_account_idx ON mail_outbox (account_id);
