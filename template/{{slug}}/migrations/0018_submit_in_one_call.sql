-- The submit as one call (issue 33): the account lock, the request's count against the write
-- limit, the request key, the active limit, the input's lock and checks, the task with its pin and
-- its hold — one round trip and one commit where there were eight round trips (BEGIN and COMMIT
-- among them). As in migration 0014, each function belongs to the package that owns its tables
-- and is called by others like its Python functions are: rate_limit_hit is ratelimits',
-- file_lock_task_input files', credit_covers and credit_hold charges', task_submit tasks'. The
-- packages' own statements call the same functions (ratelimits hit, files lock_task_input, charges
-- hold), so each rule is written once.

-- ratelimits: one hit on ``p_key`` in its current window of ``p_window_seconds`` (aligned to
-- 2000-01-01); the count, this hit included.
CREATE FUNCTION rate_limit_hit(p_key text, p_window_seconds integer) RETURNS integer
LANGUAGE sql AS $$
    INSERT INTO rate_limit_window AS w (key, window_start, window_end, count)
    SELECT p_key, s, s + make_interval(secs => p_window_seconds), 1
    FROM date_bin(make_interval(secs => p_window_seconds), now(), TIMESTAMPTZ '2000-01-01') AS s
    ON CONFLICT (key, window_start) DO UPDATE SET count = w.count + 1
    RETURNING count;
$$;

-- files: the owner's file row a task would take as input, locked (the lock a delete takes too:
-- whoever locks first decides); no row when it is not the owner's.
CREATE FUNCTION file_lock_task_input(p_file uuid, p_owner uuid)
RETURNS TABLE (id uuid, name text, size bigint, sha256 bytea, content_type text, status text, unexpired boolean)
LANGUAGE sql AS $$
    SELECT f.id, f.name, f.size, f.sha256, f.content_type, f.status, f.expires_at > now()
    FROM file f
    WHERE f.id = p_file AND f.owner_id = p_owner
    FOR UPDATE;
$$;

-- charges: whether the balance covers ``p_amount``. Only holds take from a balance, and only under
-- the account lock the caller holds: what this answers stands until the caller's hold.
CREATE FUNCTION credit_covers(p_account uuid, p_amount integer) RETURNS boolean
LANGUAGE sql AS $$
    SELECT coalesce((SELECT balance >= p_amount FROM credit_account WHERE account_id = p_account), false);
$$;

-- charges: the price of a task's round taken from the balance and recorded; false (nothing
-- written) when the balance does not cover it. The caller holds the account lock.
CREATE FUNCTION credit_hold(p_account uuid, p_task uuid, p_round integer, p_amount integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE credit_account SET balance = balance - p_amount WHERE account_id = p_account AND balance >= p_amount;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO credit_ledger (account_id, task_id, charge_round, kind, amount)
    VALUES (p_account, p_task, p_round, 'hold', p_amount);
    RETURN true;
END $$;

-- tasks: the submit. Answers one row: ``outcome`` and, for 'created', the new task as the owner
-- sees it (task_view's columns of a task without a result), for 'known' the id of the task this
-- request key already made. The checks come in the order the Python submit made them, and each
-- refusal returns before anything but the request's count is written (the count of a refused
-- request stands: refusals count too): 'no_account' (deleted while this waited for its lock:
-- nothing written), 'rate_limited', 'conflict' (the key was used for another input),
-- 'active_limit', 'file_missing' (not the owner's, not ready or expired), 'file_type',
-- 'insufficient'. ``p_rate_key`` NULL: the request was counted already (a captcha's submit).
-- The processor's declaration comes with it (tasks/contract.py): the input types it accepts, and
-- its result's bound (``p_bound_times`` × the input's size + ``p_bound_plus``, at most a file's
-- limit ``p_bound_max``) and type (NULL: the input's own), stored for the claim (migration 0016).
CREATE FUNCTION task_submit(p_owner uuid, p_rate_key text, p_rate_window integer, p_rate_limit integer,
                            p_request_key uuid, p_fingerprint bytea, p_max_active integer, p_file uuid,
                            p_accepts text[], p_task uuid, p_processor text, p_version integer, p_params jsonb,
                            p_max_attempts integer, p_price integer, p_token uuid, p_lease_seconds integer,
                            p_bound_times integer, p_bound_plus bigint, p_bound_max bigint, p_result_type text)
RETURNS TABLE (outcome text, id uuid, status text, processor text, processor_version integer, params jsonb,
               input_file_id uuid, input_name text, input_size bigint, attempt_count integer, max_attempts integer,
               error_code text, cancel_requested_at timestamptz, result_file_id uuid,
               dead_lettered_at timestamptz, price integer, charge_status text, created_at timestamptz,
               updated_at timestamptz, finished_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    seen record;
    input record;
BEGIN
    IF NOT account_lock(p_owner) THEN
        outcome := 'no_account';
        RETURN NEXT;
        RETURN;
    END IF;
    IF p_rate_key IS NOT NULL AND rate_limit_hit(p_rate_key, p_rate_window) > p_rate_limit THEN
        outcome := 'rate_limited';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT t.id, t.request_fingerprint INTO seen FROM task t WHERE t.owner_id = p_owner AND t.request_key = p_request_key;
    IF FOUND THEN
        -- the same request again is never run twice; the same key for another input is a conflict
        outcome := CASE WHEN seen.request_fingerprint = p_fingerprint THEN 'known' ELSE 'conflict' END;
        id := seen.id;
        RETURN NEXT;
        RETURN;
    END IF;
    IF (SELECT count(*) FROM task a WHERE a.owner_id = p_owner AND task_is_active(a.status)) >= p_max_active THEN
        outcome := 'active_limit';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT * INTO input FROM file_lock_task_input(p_file, p_owner);
    IF NOT FOUND OR input.status <> 'ready' OR NOT input.unexpired THEN
        outcome := 'file_missing';
        RETURN NEXT;
        RETURN;
    END IF;
    IF input.content_type <> ALL (p_accepts) THEN
        outcome := 'file_type';
        RETURN NEXT;
        RETURN;
    END IF;
    IF p_price > 0 AND NOT credit_covers(p_owner, p_price) THEN
        outcome := 'insufficient';
        RETURN NEXT;
        RETURN;
    END IF;
    -- The first delivery round (dispatch version 1), already queued under the submit's own delivery
    -- lease: the sender sends after the commit and writes nothing more unless the send fails.
    RETURN QUERY
    WITH created AS (
        INSERT INTO task AS t (id, owner_id, request_key, request_fingerprint, processor, processor_version,
                               input_file_id, input_name, input_size, input_sha256, params, max_attempts,
                               price, charge_status, charge_round, dispatch_version,
                               status, queued_at, delivery_token, delivery_lease_expires_at, result_bound, result_type)
        VALUES (p_task, p_owner, p_request_key, p_fingerprint, p_processor, p_version,
                input.id, input.name, input.size, input.sha256, p_params, p_max_attempts,
                p_price, CASE WHEN p_price > 0 THEN 'held' ELSE 'free' END, CASE WHEN p_price > 0 THEN 1 ELSE 0 END, 1,
                'queued', now(), p_token, now() + make_interval(secs => p_lease_seconds),
                least(p_bound_times * input.size + p_bound_plus, p_bound_max),
                coalesce(p_result_type, input.content_type))
        RETURNING t.*
    ), pinned AS (
        INSERT INTO task_input_pin (task_id, file_id) SELECT c.id, c.input_file_id FROM created c
    )
    SELECT 'created', c.id, c.status, c.processor, c.processor_version, c.params, c.input_file_id, c.input_name,
           c.input_size, c.attempt_count, c.max_attempts, c.error_code, c.cancel_requested_at, c.result_file_id,
           c.dead_lettered_at, c.price, c.charge_status, c.created_at, c.updated_at, c.finished_at
    FROM created c;
    IF p_price > 0 AND NOT credit_hold(p_owner, p_task, 1, p_price) THEN
        RAISE EXCEPTION 'task_submit: the balance checked under the account lock no longer covers the hold';
    END IF;
END $$;
