-- Durable tasks: the task, one attempt row per claim, and the input pin.
-- The lifecycle is documented once, in tasks/states.py; the CHECKs below are
-- the database's copy of its invariants.

-- Active statuses, named once for every query and index that needs them.
CREATE FUNCTION task_is_active(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN status IN ('pending', 'queued', 'running', 'retry_wait', 'reconciling');

CREATE TABLE task (
    id                          uuid PRIMARY KEY,
    owner_id                    uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    request_key                 uuid NOT NULL,
    request_fingerprint         bytea NOT NULL,
    processor                   text NOT NULL,
    processor_version           integer NOT NULL,
    -- input snapshot: history, deliberately without a foreign key, so file
    -- expiry or deletion never touches task history
    input_file_id               uuid NOT NULL,
    input_name                  text NOT NULL,
    input_size                  bigint NOT NULL,
    input_sha256                bytea NOT NULL,
    params                      jsonb NOT NULL,
    status                      text NOT NULL DEFAULT 'pending',
    attempt_count               integer NOT NULL DEFAULT 0,
    max_attempts                integer NOT NULL,
    lease_version               integer NOT NULL DEFAULT 0,
    lease_expires_at            timestamptz,
    delivery_token              uuid,
    delivery_lease_expires_at   timestamptz,
    queued_at                   timestamptz,
    next_attempt_at             timestamptz,
    cancel_requested_at         timestamptz,
    error_code                  text,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    finished_at                 timestamptz,
    CONSTRAINT task_request_key_unique UNIQUE (owner_id, request_key),
    CONSTRAINT task_status_known CHECK (
        status IN ('pending', 'queued', 'running', 'retry_wait', 'reconciling', 'succeeded', 'failed', 'canceled')
    ),
    CONSTRAINT task_fingerprint_length CHECK (octet_length(request_fingerprint) = 32),
    CONSTRAINT task_input_sha256_length CHECK (octet_length(input_sha256) = 32),
    CONSTRAINT task_budget CHECK (max_attempts >= 1 AND attempt_count BETWEEN 0 AND max_attempts),
    -- only running has an execution lease
    CONSTRAINT task_lease_only_running CHECK ((status = 'running') = (lease_expires_at IS NOT NULL)),
    -- a delivery lease exists only while the task waits to be delivered
    CONSTRAINT task_delivery_only_waiting CHECK (
        (delivery_token IS NULL) = (delivery_lease_expires_at IS NULL)
        AND (delivery_token IS NULL OR status IN ('pending', 'queued'))
    ),
    CONSTRAINT task_queued_has_time CHECK (status <> 'queued' OR queued_at IS NOT NULL),
    CONSTRAINT task_retry_wait_has_time CHECK ((status = 'retry_wait') = (next_attempt_at IS NOT NULL)),
    CONSTRAINT task_finished_iff_terminal CHECK (task_is_active(status) = (finished_at IS NULL)),
    CONSTRAINT task_failed_has_code CHECK ((status = 'failed') = (error_code IS NOT NULL))
);

CREATE INDEX task_owner_list_idx ON task (owner_id, created_at DESC, id DESC);
CREATE INDEX task_owner_active_idx ON task (owner_id) WHERE task_is_active(status);
CREATE INDEX task_running_lease_idx ON task (lease_expires_at) WHERE status = 'running';
CREATE INDEX task_pending_idx ON task (updated_at) WHERE status = 'pending';
CREATE INDEX task_queued_idx ON task (queued_at) WHERE status = 'queued';
CREATE INDEX task_retry_wait_idx ON task (next_attempt_at) WHERE status = 'retry_wait';

-- One row per claim: the claim statement inserts it in the same transaction.
CREATE TABLE task_attempt (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id        uuid NOT NULL REFERENCES task (id) ON DELETE CASCADE,
    lease_version  integer NOT NULL,
    started_at     timestamptz NOT NULL DEFAULT now(),
    ended_at       timestamptz,
    outcome        text,
    error_code     text,
    CONSTRAINT task_attempt_version_unique UNIQUE (task_id, lease_version),
    CONSTRAINT task_attempt_outcome_known CHECK (
        outcome IN ('succeeded', 'failed', 'retry', 'canceled', 'lease_expired', 'reconciling')
    ),
    CONSTRAINT task_attempt_ended_has_outcome CHECK ((ended_at IS NULL) = (outcome IS NULL))
);

-- The input file an active task holds. A pinned file cannot be deleted or
-- cleaned up; the pin goes when the task reaches a terminal state.
CREATE TABLE task_input_pin (
    task_id     uuid PRIMARY KEY REFERENCES task (id) ON DELETE CASCADE,
    file_id     uuid NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX task_input_pin_file_idx ON task_input_pin (file_id);
