-- One fixed-window counter table for every limit, owned by the ratelimits package: per-account
-- requests (keys `account:<id>:read|write`, 1-minute windows) and the sign-in and registration
-- throttles (`account:<keyed hash>…`, `address:…`, `register:…`, 15-minute windows). The old
-- tables' counts are dropped, not copied: their windows are minutes long.

DROP TABLE rate_counter;
DROP TABLE login_throttle;

CREATE TABLE rate_limit_window (
    key           text NOT NULL,
    window_start  timestamptz NOT NULL,
    window_end    timestamptz NOT NULL,
    count         integer NOT NULL,
    -- A per-account request counter goes with its account, like everything else the account owns;
    -- throttle keys (a keyed hash, an address) name no account row and have none.
    account_id    uuid GENERATED ALWAYS AS (
                      substring(key FROM '^account:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):')::uuid
                  ) STORED REFERENCES account (id) ON DELETE CASCADE,
    PRIMARY KEY (key, window_start),
    CONSTRAINT rate_limit_window_key_shape CHECK (key ~ '^[a-z]+:.{1,200}$'),
    CONSTRAINT rate_limit_window_ends_after_start CHECK (window_end > window_start),
    CONSTRAINT rate_limit_window_count_positive CHECK (count > 0)
);

CREATE INDEX rate_limit_window_end_idx ON rate_limit_window (window_end);
CREATE INDEX rate_limit_window_account_idx ON rate_limit_window (account_id) WHERE account_id IS NOT NULL;
