-- A task costs three write commits: the submit, the claim and the publication (docs/tasks.md).
--
-- The claim (with its result reservation) and the publication are one call each: a function
-- whose statements run in the fixed lock order (account, task, files), each guarded by its
-- precondition, as the Python transactions they replace did. Each function belongs to the
-- package that owns its tables and is called by others like its Python functions are:
-- account_lock is auth's, file_reserve and file_publish_result are files', credit_capture is
-- charges', task_claim and task_publish are tasks'.

-- auth: serialises an account's writers (auth/queries.sql lock_account calls it); false when the
-- account is gone.
CREATE FUNCTION account_lock(p_account uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM account WHERE id = p_account FOR UPDATE;
    RETURN FOUND;
END $$;

-- files: an ``uploading`` row with its quota taken; false (and nothing written) over the quota.
-- The caller holds the account lock.
CREATE FUNCTION file_reserve(p_id uuid, p_owner uuid, p_name text, p_content_type text, p_size bigint,
                             p_object_key text, p_quota bigint, p_ttl_hours integer, p_kind text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO storage_usage AS u (account_id, used_bytes)
    SELECT p_owner, p_size WHERE p_size <= p_quota
    ON CONFLICT (account_id) DO UPDATE SET used_bytes = u.used_bytes + EXCLUDED.used_bytes
    WHERE u.used_bytes + EXCLUDED.used_bytes <= p_quota;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO file (id, owner_id, name, content_type, size, object_key, expires_at, kind)
    VALUES (p_id, p_owner, p_name, p_content_type, p_size, p_object_key,
            now() + make_interval(hours => p_ttl_hours), p_kind);
    RETURN true;
END $$;

-- files: a task's reserved result becomes a ready file with its final name, size and digest.
-- The reservation took an upper bound of the size; what it took beyond the real size goes back
-- to the quota here. False when the row is no longer that reservation (or the result outgrew it).
CREATE FUNCTION file_publish_result(p_id uuid, p_owner uuid, p_name text, p_size bigint, p_sha256 bytea)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    reserved bigint;
BEGIN
    SELECT size INTO reserved FROM file
    WHERE id = p_id AND owner_id = p_owner AND status = 'uploading' AND kind = 'result' AND size >= p_size
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE file SET status = 'ready', name = p_name, size = p_size, sha256 = p_sha256, ready_at = now(),
                    updated_at = now()
    WHERE id = p_id;
    IF reserved > p_size THEN
        UPDATE storage_usage SET used_bytes = used_bytes - (reserved - p_size) WHERE account_id = p_owner;
    END IF;
    RETURN true;
END $$;

-- charges: the held price of a round is spent; recorded only (the hold took it from the balance).
CREATE FUNCTION credit_capture(p_account uuid, p_task uuid, p_round integer, p_amount integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO credit_ledger (account_id, task_id, charge_round, kind, amount)
    VALUES (p_account, p_task, p_round, 'capture', p_amount);
END $$;

-- tasks: the claim. The message's dispatch version moves a waiting task to running, spends one
-- attempt, takes the execution lease, clears the delivery token, reserves the attempt's result
-- file (the input's size: a processor's output never outgrows its input) and records the
-- attempt with it; the pinned input comes back with it. No row for a duplicate or stale
-- message; ``result_file_id`` is NULL when the quota has no room for the result.
CREATE FUNCTION task_claim(p_task uuid, p_dispatch_version integer, p_lease_seconds integer, p_result_id uuid,
                           p_object_prefix text, p_result_type text, p_quota bigint, p_ttl_hours integer)
RETURNS TABLE (task_id uuid, owner_id uuid, lease_version integer, processor text, processor_version integer,
               params jsonb, input_file_id uuid, input_name text, input_size bigint, input_sha256 bytea,
               attempt_count integer, max_attempts integer, input_status text, input_owner_id uuid,
               input_size_now bigint, input_sha256_now bytea, input_object_key text, result_file_id uuid,
               result_object_key text, result_bytes bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_owner uuid;
    claimed record;
    reserved boolean;
    result_key text;
BEGIN
    -- Read first, so a duplicate or stale message writes nothing (not even a lock).
    SELECT t.owner_id INTO v_owner FROM task t
    WHERE t.id = p_task AND t.dispatch_version = p_dispatch_version AND t.status IN ('pending', 'queued')
      AND t.attempt_count < t.max_attempts;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM account_lock(v_owner);
    UPDATE task t
    SET status = 'running', attempt_count = t.attempt_count + 1, lease_version = t.lease_version + 1,
        lease_expires_at = now() + make_interval(secs => p_lease_seconds),
        delivery_token = NULL, delivery_lease_expires_at = NULL, queued_at = NULL, updated_at = now()
    WHERE t.id = p_task AND t.dispatch_version = p_dispatch_version AND t.status IN ('pending', 'queued')
      AND t.attempt_count < t.max_attempts
    RETURNING t.* INTO claimed;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    result_key := p_object_prefix || '/' || v_owner || '/' || p_result_id;
    reserved := file_reserve(p_result_id, v_owner, claimed.input_name, p_result_type, claimed.input_size, result_key,
                             p_quota, p_ttl_hours, 'result');
    INSERT INTO task_attempt (task_id, lease_version, result_file_id)
    VALUES (p_task, claimed.lease_version, CASE WHEN reserved THEN p_result_id END);
    RETURN QUERY
    SELECT claimed.id, v_owner, claimed.lease_version, claimed.processor, claimed.processor_version, claimed.params,
           claimed.input_file_id, claimed.input_name, claimed.input_size, claimed.input_sha256,
           claimed.attempt_count, claimed.max_attempts, f.status, f.owner_id, f.size, f.sha256, f.object_key,
           CASE WHEN reserved THEN p_result_id END, CASE WHEN reserved THEN result_key END,
           CASE WHEN reserved THEN claimed.input_size END
    FROM (SELECT 1) AS one
    LEFT JOIN task_input_pin p ON p.task_id = p_task
    LEFT JOIN file f ON f.id = p.file_id;
END $$;

-- tasks: the publication. Only while the lease is current and live and its attempt reserved
-- this result: the file becomes ready, the task succeeded (its hold captured), the attempt
-- ends and the pin goes. Answers 'succeeded', 'lease_lost' (nothing written) or
-- 'cancel_requested' (nothing written: the caller settles the cancel and discards the output).
CREATE FUNCTION task_publish(p_task uuid, p_lease_version integer, p_result_id uuid, p_name text, p_size bigint,
                             p_sha256 bytea)
RETURNS text
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_owner uuid;
    leased record;
BEGIN
    SELECT t.owner_id INTO v_owner FROM task t WHERE t.id = p_task;
    IF NOT FOUND THEN
        RETURN 'lease_lost';
    END IF;
    PERFORM account_lock(v_owner);
    SELECT t.cancel_requested_at, t.charge_status, t.charge_round, t.price, a.result_file_id INTO leased
    FROM task t
    JOIN task_attempt a ON a.task_id = t.id AND a.lease_version = t.lease_version
    WHERE t.id = p_task AND t.status = 'running' AND t.lease_version = p_lease_version AND t.lease_expires_at > now()
    FOR UPDATE OF t;
    IF NOT FOUND OR leased.result_file_id IS DISTINCT FROM p_result_id THEN
        RETURN 'lease_lost';
    END IF;
    IF leased.cancel_requested_at IS NOT NULL THEN
        RETURN 'cancel_requested';
    END IF;
    IF NOT file_publish_result(p_result_id, v_owner, p_name, p_size, p_sha256) THEN
        RETURN 'lease_lost';
    END IF;
    UPDATE task t
    SET status = 'succeeded', result_file_id = p_result_id, finished_at = now(), lease_expires_at = NULL,
        charge_status = CASE WHEN t.charge_status = 'held' THEN 'captured' ELSE t.charge_status END,
        updated_at = now()
    WHERE t.id = p_task;
    IF leased.charge_status = 'held' THEN
        PERFORM credit_capture(v_owner, p_task, leased.charge_round, leased.price);
    END IF;
    UPDATE task_attempt a SET ended_at = now(), outcome = 'succeeded'
    WHERE a.task_id = p_task AND a.lease_version = p_lease_version AND a.ended_at IS NULL;
    DELETE FROM task_input_pin p WHERE p.task_id = p_task;
    RETURN 'succeeded';
END $$;
