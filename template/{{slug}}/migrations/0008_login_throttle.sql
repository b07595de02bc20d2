-- Login attempts per account and per client address, in fixed 15-minute windows.
-- The account key is a keyed hash of the normalised email, so unknown emails
-- are throttled exactly like known ones and no email is stored here.

CREATE TABLE login_throttle (
    key           text NOT NULL,
    window_start  timestamptz NOT NULL,
    count         integer NOT NULL DEFAULT 0,
    PRIMARY KEY (key, window_start),
    CONSTRAINT login_throttle_key_shape CHECK (key ~ '^(account|address):.{1,100}$'),
    CONSTRAINT login_throttle_count_not_negative CHECK (count >= 0)
);

CREATE INDEX login_throttle_window_idx ON login_throttle (window_start);
