-- ratelimits: the key's shape and the account a key names, checked without bounded regex repetitions
-- (issue 33). PostgreSQL's regex engine expands `.{1,200}` into 200 copies of its state and builds
-- its matcher again at every evaluation: the old shape check cost 60 µs, and the old `account_id`
-- (a capture around `[0-9a-f]{8}`…`{12}`) 30 µs, each evaluated twice by a hit that finds its window
-- (the row proposed, then the row updated). Every counted request and every throttle paid them.
-- The same keys pass and the same accounts are found (tests/test_ratelimits.py): `[a-z]+` cannot
-- take a colon, so the part the old `.{1,200}$` matched is whatever follows the first colon.

ALTER TABLE rate_limit_window DROP CONSTRAINT rate_limit_window_key_shape;
ALTER TABLE rate_limit_window ADD CONSTRAINT rate_limit_window_key_shape
    CHECK (key ~ '^[a-z]+:' AND char_length(key) - strpos(key, ':') BETWEEN 1 AND 200);

-- A stored generated column's expression cannot be changed before PostgreSQL 17: the column is made
-- again (its index and foreign key with it). The match has no capture, and the id is where it matched.
ALTER TABLE rate_limit_window DROP COLUMN account_id;
ALTER TABLE rate_limit_window ADD COLUMN account_id uuid GENERATED ALWAYS AS (
    CASE WHEN key ~ '^account:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:'
         THEN substr(key, 9, 36)::uuid END
) STORED REFERENCES account (id) ON DELETE CASCADE;
CREATE INDEX rate_limit_window_account_idx ON rate_limit_window (account_id) WHERE account_id IS NOT NULL;
