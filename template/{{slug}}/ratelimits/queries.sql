-- name: take
-- One atomic upsert per request: the count after this request in the current minute.
INSERT INTO rate_counter AS c (account_id, bucket, window_start, count)
VALUES ($1, $2, date_trunc('minute', now()), 1)
ON CONFLICT (account_id, bucket, window_start) DO UPDATE SET count = c.count + 1
RETURNING count;

-- name: purge_old_windows
DELETE FROM rate_counter
WHERE ctid IN (
    SELECT ctid FROM rate_counter
    WHERE window_start < date_trunc('minute', now()) - interval '1 hour'
    LIMIT $1
);
