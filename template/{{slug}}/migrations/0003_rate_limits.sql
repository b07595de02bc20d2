-- Per-account request counters, one row per account, bucket and minute.
-- Incremented atomically by one upsert, so concurrent requests cannot both
-- take the last slot.

CREATE TABLE rate_counter (
    account_id    uuid NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    bucket        text NOT NULL,
    window_start  timestamptz NOT NULL,
    count         integer NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, bucket, window_start),
    CONSTRAINT rate_counter_bucket_known CHECK (bucket IN ('read', 'write')),
    CONSTRAINT rate_counter_count_not_negative CHECK (count >= 0)
);

CREATE INDEX rate_counter_window_idx ON rate_counter (window_start);
