-- The rows SPEC §6 asks of a task, three commits of one statement each. The submit: the task, queued
-- under the submit's own delivery lease, and its input's pin.
WITH t AS (
    INSERT INTO $schema.task (id, owner_id, request_key, request_fingerprint, processor, processor_version,
                              input_file_id, input_name, input_size, input_sha256, params, max_attempts, price,
                              charge_status, charge_round, dispatch_version, status, queued_at, delivery_token,
                              delivery_lease_expires_at, result_bound, result_type)
    VALUES (gen_random_uuid(), $owner, gen_random_uuid(), decode(repeat('ab', 32), 'hex'), 'text-normalize', 1,
            $file, 'input.txt', $size, decode(repeat('cd', 32), 'hex'), '{"trimTrailingWhitespace": true}', 3, 0,
            'free', 0, 1, 'queued', now(), gen_random_uuid(), now() + interval '30 seconds', $size, 'text/plain')
    RETURNING id
), p AS (
    INSERT INTO $schema.task_input_pin (task_id, file_id) SELECT id, $file FROM t
)
SELECT id AS tid, gen_random_uuid() AS rid FROM t \gset
-- The claim: the task running under a lease, its result file reserved, its attempt recorded.
WITH c AS (
    UPDATE $schema.task
    SET status = 'running', attempt_count = attempt_count + 1, lease_version = lease_version + 1,
        lease_expires_at = now() + interval '2 minutes', delivery_token = NULL, delivery_lease_expires_at = NULL,
        queued_at = NULL, updated_at = now()
    WHERE id = :tid
    RETURNING id, lease_version
), f AS (
    INSERT INTO $schema.file (id, owner_id, name, content_type, size, object_key, expires_at, kind)
    VALUES (:rid, $owner, 'input.txt', 'text/plain', $size, '$prefix/' || $owner || '/' || :rid, now() + interval '24 hours',
            'result')
)
INSERT INTO $schema.task_attempt (task_id, lease_version, result_file_id) SELECT id, lease_version, :rid FROM c;
-- The publication: the file ready, the task succeeded, the attempt ended, the pin gone.
WITH f AS (
    UPDATE $schema.file
    SET status = 'ready', name = 'result.txt', size = $result_size, sha256 = decode(repeat('ef', 32), 'hex'),
        ready_at = now(), updated_at = now()
    WHERE id = :rid
), t AS (
    UPDATE $schema.task
    SET status = 'succeeded', result_file_id = :rid, finished_at = now(), lease_expires_at = NULL, updated_at = now()
    WHERE id = :tid
), a AS (
    UPDATE $schema.task_attempt SET ended_at = now(), outcome = 'succeeded' WHERE task_id = :tid AND lease_version = 1
)
DELETE FROM $schema.task_input_pin WHERE task_id = :tid;
