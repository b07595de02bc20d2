-- name: hit
-- One atomic upsert per hit, so concurrent hits cannot both take the last slot: the key's count in
-- its current window, this hit included. Windows of $2 seconds are aligned to 2000-01-01, so
-- 60 seconds are the clock's minutes and 900 its quarter hours (migration 0018, rate_limit_hit:
-- the task submit counts its request with the same function).
SELECT rate_limit_hit($1, $2);

-- name: take
-- A hit counted only while the key is under $3 in its current window: a refused hit adds nothing,
-- so limits checked one after another never count what an earlier one refused. The count taken
-- (NULL when refused) and the whole seconds until the window ends (the wait a refusal states).
WITH win AS (
    SELECT date_bin(make_interval(secs => $2), now(), TIMESTAMPTZ '2000-01-01') AS s
), taken AS (
    INSERT INTO rate_limit_window AS w (key, window_start, window_end, count)
    SELECT $1, s, s + make_interval(secs => $2), 1 FROM win
    ON CONFLICT (key, window_start) DO UPDATE SET count = w.count + 1 WHERE w.count < $3
    RETURNING count
)
SELECT (SELECT count FROM taken) AS count,
       ceil(extract(epoch FROM (SELECT s FROM win) + make_interval(secs => $2) - now()))::integer AS wait;

-- name: purge
-- An hour after a window ends: long past any statement still counting into it (now() is its
-- transaction's start).
DELETE FROM rate_limit_window
WHERE ctid IN (
    SELECT ctid FROM rate_limit_window
    WHERE window_end < now() - interval '1 hour'
    LIMIT $1
);
