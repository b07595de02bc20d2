-- Private per-account files. The object lives in S3 at object_key; the row is
-- the truth about whether the owner may see it.

CREATE TABLE file (
    id            uuid PRIMARY KEY,
    owner_id      uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    name          text NOT NULL,
    content_type  text NOT NULL,
    size          bigint NOT NULL,
    sha256        bytea,
    status        text NOT NULL DEFAULT 'uploading',
    object_key    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    ready_at      timestamptz,
    expires_at    timestamptz NOT NULL,
    deleted_at    timestamptz,
    CONSTRAINT file_status_known CHECK (status IN ('uploading', 'ready', 'deleting', 'deleted')),
    CONSTRAINT file_size_not_negative CHECK (size >= 0),
    -- uploads are never empty (zero-byte files exist only as task results, 0005)
    CONSTRAINT file_ready_not_empty CHECK (status <> 'ready' OR size > 0),
    CONSTRAINT file_ready_has_digest CHECK (status <> 'ready' OR (sha256 IS NOT NULL AND ready_at IS NOT NULL)),
    CONSTRAINT file_sha256_length CHECK (sha256 IS NULL OR octet_length(sha256) = 32),
    CONSTRAINT file_deleted_has_time CHECK ((status = 'deleted') = (deleted_at IS NOT NULL)),
    CONSTRAINT file_name_safe CHECK (
        length(name) BETWEEN 1 AND 255 AND name !~ '[/\\[:cntrl:]]' AND name NOT IN ('.', '..')
    ),
    CONSTRAINT file_content_type_shape CHECK (content_type ~ '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$'),
    CONSTRAINT file_object_key_unique UNIQUE (object_key)
);

-- The owner's list: newest first, keyset on (created_at, id).
CREATE INDEX file_owner_ready_idx ON file (owner_id, created_at DESC, id DESC) WHERE status = 'ready';
-- Maintenance: expired, deleting and stale uploading rows.
CREATE INDEX file_ready_expiry_idx ON file (expires_at) WHERE status = 'ready';
CREATE INDEX file_pending_cleanup_idx ON file (updated_at) WHERE status IN ('uploading', 'deleting');

-- Bytes held per account: uploading + ready + deleting files. Reserved before
-- an object is written and released only when it is gone, so a failure can
-- never leave quota the owner cannot see or free.
CREATE TABLE storage_usage (
    account_id  uuid PRIMARY KEY REFERENCES account (id) ON DELETE CASCADE,
    used_bytes  bigint NOT NULL DEFAULT 0,
    CONSTRAINT storage_usage_not_negative CHECK (used_bytes >= 0)
);

INSERT INTO storage_usage (account_id) SELECT id FROM account;
