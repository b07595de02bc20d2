-- Processors declare their result (SPEC §6.0, docs/processors.md): its content type and an upper
-- bound of its size for the input's size. The submit stores both on the task, computed by the
-- processor version the task records, and the claim reserves that bound (publication gives back
-- what the real result did not use, as before). Tasks submitted before this migration have
-- neither: their processor (text-normalize@1) never outgrew its input, which the claim still
-- reserves for them, typed as the caller's default.

ALTER TABLE task ADD COLUMN result_bound bigint, ADD COLUMN result_type text;
ALTER TABLE task ADD CONSTRAINT task_result_bound_not_negative CHECK (result_bound >= 0);
ALTER TABLE task ADD CONSTRAINT task_result_type_shape
    CHECK (result_type ~ '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$');

-- The owner's view also says what type the result is, so a page previews only text.
CREATE OR REPLACE VIEW task_view AS
SELECT t.id, t.owner_id, t.status, t.processor, t.processor_version, t.params, t.input_file_id,
       t.input_name, t.input_size, t.attempt_count, t.max_attempts, t.error_code, t.cancel_requested_at,
       t.result_file_id, r.name AS result_name, r.size AS result_size, r.sha256 AS result_sha256,
       (t.result_file_id IS NOT NULL AND (r.id IS NULL OR r.status <> 'ready' OR r.expires_at <= now()))
           AS result_gone,
       t.dead_lettered_at, t.price, t.charge_status, t.created_at, t.updated_at, t.finished_at,
       r.content_type AS result_content_type
FROM task t
LEFT JOIN file r ON r.id = t.result_file_id;

-- tasks: the claim of 0014, reserving the processor's declared bound with its result type (which
-- it also returns: the result object is written with it).
DROP FUNCTION task_claim(uuid, integer, integer, uuid, text, text, bigint, integer);
CREATE FUNCTION task_claim(p_task uuid, p_dispatch_version integer, p_lease_seconds integer, p_result_id uuid,
                           p_object_prefix text, p_result_type text, p_quota bigint, p_ttl_hours integer)
RETURNS TABLE (task_id uuid, owner_id uuid, lease_version integer, processor text, processor_version integer,
               params jsonb, input_file_id uuid, input_name text, input_size bigint, input_sha256 bytea,
               attempt_count integer, max_attempts integer, input_status text, input_owner_id uuid,
               input_size_now bigint, input_sha256_now bytea, input_object_key text, result_file_id uuid,
               result_object_key text, result_bytes bigint, result_type text)
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
    reserved := file_reserve(p_result_id, v_owner, claimed.input_name, coalesce(claimed.result_type, p_result_type),
                             coalesce(claimed.result_bound, claimed.input_size), result_key, p_quota, p_ttl_hours,
                             'result');
    INSERT INTO task_attempt (task_id, lease_version, result_file_id)
    VALUES (p_task, claimed.lease_version, CASE WHEN reserved THEN p_result_id END);
    RETURN QUERY
    SELECT claimed.id, v_owner, claimed.lease_version, claimed.processor, claimed.processor_version, claimed.params,
           claimed.input_file_id, claimed.input_name, claimed.input_size, claimed.input_sha256,
           claimed.attempt_count, claimed.max_attempts, f.status, f.owner_id, f.size, f.sha256, f.object_key,
           CASE WHEN reserved THEN p_result_id END, CASE WHEN reserved THEN result_key END,
           CASE WHEN reserved THEN coalesce(claimed.result_bound, claimed.input_size) END,
           CASE WHEN reserved THEN coalesce(claimed.result_type, p_result_type) END
    FROM (SELECT 1) AS one
    LEFT JOIN task_input_pin p ON p.task_id = p_task
    LEFT JOIN file f ON f.id = p.file_id;
END $$;
