-- tasks: the task row's eighteen invariants (migrations 0004, 0007, 0016), checked by one function
-- (issue 33). PostgreSQL keeps a table's CHECK expressions as text and parses and plans each of them
-- again for every statement that writes the table (ExecConstraints builds them per execution; only
-- domain constraints are cached): on task, written three times a task, that was 0.15 ms of each
-- write (pgbench, an UPDATE of one row: 0.32 ms with them, 0.17 without). A plpgsql function is
-- compiled once per session and keeps its expression's plan, so one CHECK that calls it costs a few
-- microseconds. Nothing is checked less: the same invariants, each still refused under its own
-- name (the first violated, in the order of their names, as PostgreSQL reported them), with
-- check_violation (tests/test_tasks_execution.py). A later invariant replaces this function.
CREATE FUNCTION task_invariants_hold(
    status text, attempt_count integer, max_attempts integer, lease_expires_at timestamptz,
    delivery_token uuid, delivery_lease_expires_at timestamptz, queued_at timestamptz,
    next_attempt_at timestamptz, error_code text, finished_at timestamptz, result_file_id uuid,
    request_fingerprint bytea, input_sha256 bytea, price integer, charge_status text,
    result_bound bigint, result_type text
) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    violated text;
BEGIN
    -- As a CHECK: an invariant that answers NULL holds.
    violated := CASE
        WHEN NOT (max_attempts >= 1 AND attempt_count BETWEEN 0 AND max_attempts) THEN 'task_budget'
        WHEN NOT (status <> 'canceled' OR charge_status <> 'held') THEN 'task_canceled_is_not_held'
        WHEN NOT (charge_status IN ('free', 'held', 'captured', 'refunded')) THEN 'task_charge_status_known'
        WHEN NOT ((delivery_token IS NULL) = (delivery_lease_expires_at IS NULL)
                  AND (delivery_token IS NULL OR status IN ('pending', 'queued'))) THEN 'task_delivery_only_waiting'
        WHEN NOT ((status = 'failed') = (error_code IS NOT NULL)) THEN 'task_failed_has_code'
        WHEN NOT (octet_length(request_fingerprint) = 32) THEN 'task_fingerprint_length'
        WHEN NOT (task_is_active(status) = (finished_at IS NULL)) THEN 'task_finished_iff_terminal'
        WHEN NOT ((price = 0) = (charge_status = 'free')) THEN 'task_free_iff_no_price'
        WHEN NOT (octet_length(input_sha256) = 32) THEN 'task_input_sha256_length'
        WHEN NOT ((status = 'running') = (lease_expires_at IS NOT NULL)) THEN 'task_lease_only_running'
        WHEN NOT (price >= 0) THEN 'task_price_not_negative'
        WHEN NOT (status <> 'queued' OR queued_at IS NOT NULL) THEN 'task_queued_has_time'
        WHEN NOT (result_bound >= 0) THEN 'task_result_bound_not_negative'
        WHEN NOT ((status = 'succeeded') = (result_file_id IS NOT NULL)) THEN 'task_result_only_succeeded'
        WHEN NOT (result_type ~ '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$') THEN 'task_result_type_shape'
        WHEN NOT ((status = 'retry_wait') = (next_attempt_at IS NOT NULL)) THEN 'task_retry_wait_has_time'
        WHEN NOT (status IN ('pending', 'queued', 'running', 'retry_wait', 'reconciling', 'succeeded', 'failed',
                             'canceled')) THEN 'task_status_known'
        WHEN NOT (status <> 'succeeded' OR charge_status IN ('free', 'captured')) THEN 'task_succeeded_is_captured'
    END;
    IF violated IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "task" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', CONSTRAINT = violated, TABLE = 'task';
    END IF;
    RETURN true;
END $$;

ALTER TABLE task
    DROP CONSTRAINT task_budget,
    DROP CONSTRAINT task_canceled_is_not_held,
    DROP CONSTRAINT task_charge_status_known,
    DROP CONSTRAINT task_delivery_only_waiting,
    DROP CONSTRAINT task_failed_has_code,
    DROP CONSTRAINT task_fingerprint_length,
    DROP CONSTRAINT task_finished_iff_terminal,
    DROP CONSTRAINT task_free_iff_no_price,
    DROP CONSTRAINT task_input_sha256_length,
    DROP CONSTRAINT task_lease_only_running,
    DROP CONSTRAINT task_price_not_negative,
    DROP CONSTRAINT task_queued_has_time,
    DROP CONSTRAINT task_result_bound_not_negative,
    DROP CONSTRAINT task_result_only_succeeded,
    DROP CONSTRAINT task_result_type_shape,
    DROP CONSTRAINT task_retry_wait_has_time,
    DROP CONSTRAINT task_status_known,
    DROP CONSTRAINT task_succeeded_is_captured,
    ADD CONSTRAINT task_invariants CHECK (task_invariants_hold(
        status, attempt_count, max_attempts, lease_expires_at, delivery_token, delivery_lease_expires_at,
        queued_at, next_attempt_at, error_code, finished_at, result_file_id, request_fingerprint, input_sha256,
        price, charge_status, result_bound, result_type));
