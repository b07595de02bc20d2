-- Counters updated in place, and the result published in one statement (issue 33). What a task
-- writes, read from the WAL (python -m harness.bench.wal), and where PostgreSQL's CPU goes in a
-- live batch (perf), found three statements doing more than their rows ask:
--
-- * INSERT … ON CONFLICT DO UPDATE on a row that exists builds the row it would insert first: a
--   rate_limit_window row computes its generated account_id (a regex) and passes the table's three
--   CHECKs, then the existing row is locked (a WAL record of its own) and updated, and the CHECKs
--   run again. Almost every hit finds its window (one a minute per key is new), so the hit now
--   updates first and upserts only when there is no row: 30-40 µs less a hit on the server alone
--   (pgbench, one client, 4 interleaved pairs: 202-224 against 170-194 µs a call). The same for a
--   reservation's storage_usage row, which exists from an account's first file on.
-- * file_publish_result locked the reservation's row and then updated it: two statements and a
--   lock record for one transition. Now one UPDATE whose WHERE is the precondition; the reserved
--   size it gives back to the quota is read in the same statement, and the row is updated only if
--   it still holds that size.
--
-- Nothing is counted, reserved or published differently: the upsert stays as the fallback, so two
-- hits opening a window together still count two (tests/test_ratelimits.py), and the callers hold
-- the account lock as before.

-- ratelimits: one hit on ``p_key`` in its current window of ``p_window_seconds`` (aligned to
-- 2000-01-01); the count, this hit included.
CREATE OR REPLACE FUNCTION rate_limit_hit(p_key text, p_window_seconds integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    counted integer;
BEGIN
    UPDATE rate_limit_window SET count = count + 1
    WHERE key = p_key AND window_start = date_bin(make_interval(secs => p_window_seconds), now(), TIMESTAMPTZ '2000-01-01')
    RETURNING count INTO counted;
    IF FOUND THEN
        RETURN counted;
    END IF;
    -- The window's first hit, or one racing another to open it: the upsert decides.
    INSERT INTO rate_limit_window AS w (key, window_start, window_end, count)
    SELECT p_key, s, s + make_interval(secs => p_window_seconds), 1
    FROM date_bin(make_interval(secs => p_window_seconds), now(), TIMESTAMPTZ '2000-01-01') AS s
    ON CONFLICT (key, window_start) DO UPDATE SET count = w.count + 1
    RETURNING count INTO counted;
    RETURN counted;
END $$;

-- files: an ``uploading`` row with its quota taken; false (and nothing written) over the quota.
-- The caller holds the account lock.
CREATE OR REPLACE FUNCTION file_reserve(p_id uuid, p_owner uuid, p_name text, p_content_type text, p_size bigint,
                                        p_object_key text, p_quota bigint, p_ttl_hours integer, p_kind text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE storage_usage SET used_bytes = used_bytes + p_size
    WHERE account_id = p_owner AND used_bytes + p_size <= p_quota;
    IF NOT FOUND THEN
        -- No row yet (the account's first file), or over the quota: the upsert tells them apart.
        INSERT INTO storage_usage AS u (account_id, used_bytes)
        SELECT p_owner, p_size WHERE p_size <= p_quota
        ON CONFLICT (account_id) DO UPDATE SET used_bytes = u.used_bytes + EXCLUDED.used_bytes
        WHERE u.used_bytes + EXCLUDED.used_bytes <= p_quota;
        IF NOT FOUND THEN
            RETURN false;
        END IF;
    END IF;
    INSERT INTO file (id, owner_id, name, content_type, size, object_key, expires_at, kind)
    VALUES (p_id, p_owner, p_name, p_content_type, p_size, p_object_key,
            now() + make_interval(hours => p_ttl_hours), p_kind);
    RETURN true;
END $$;

-- files: a task's reserved result becomes a ready file with its final name, size and digest.
-- The reservation took an upper bound of the size; what it took beyond the real size goes back
-- to the quota here. False when the row is no longer that reservation (or the result outgrew it).
CREATE OR REPLACE FUNCTION file_publish_result(p_id uuid, p_owner uuid, p_name text, p_size bigint, p_sha256 bytea)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    reserved bigint;
BEGIN
    -- ``held`` is the row as this statement's snapshot saw it; a row changed meanwhile is checked
    -- again as it is now, and updated only while it still holds the size given back below.
    UPDATE file f SET status = 'ready', name = p_name, size = p_size, sha256 = p_sha256, ready_at = now(),
                      updated_at = now()
    FROM file held
    WHERE f.id = p_id AND held.id = p_id AND f.size = held.size
      AND f.owner_id = p_owner AND f.status = 'uploading' AND f.kind = 'result' AND f.size >= p_size
    RETURNING held.size INTO reserved;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF reserved > p_size THEN
        UPDATE storage_usage SET used_bytes = used_bytes - (reserved - p_size) WHERE account_id = p_owner;
    END IF;
    RETURN true;
END $$;
