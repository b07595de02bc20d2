-- Files: every statement that reads or writes the file and storage_usage tables.
-- Ownership is part of every WHERE that serves a request: another account's id
-- matches no row, which the caller answers as 404.

-- name: reserve
-- The uploading row and its quota, or false over the quota (migration 0014, file_reserve: the
-- tasks' claim reserves its result with the same function).
SELECT file_reserve($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: release_quota
UPDATE storage_usage SET used_bytes = used_bytes - $2 WHERE account_id = $1;

-- name: used_bytes
SELECT coalesce((SELECT used_bytes FROM storage_usage WHERE account_id = $1), 0);

-- name: mark_ready
UPDATE file
SET status = 'ready', sha256 = $2, ready_at = now(), updated_at = now()
WHERE id = $1 AND status = 'uploading'
RETURNING id, name, content_type, size, sha256, created_at, expires_at;

-- name: drop_uploading
-- Compensation of a failed upload: only its own row, only while still uploading.
DELETE FROM file WHERE id = $1 AND status = 'uploading' RETURNING owner_id, size;

-- name: list_ready
SELECT id, name, content_type, size, sha256, created_at, expires_at
FROM file
WHERE owner_id = $1 AND status = 'ready' AND expires_at > now()
  AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4;

-- name: get_ready
SELECT id, name, content_type, size, sha256, created_at, expires_at, object_key
FROM file
WHERE id = $1 AND owner_id = $2 AND status = 'ready' AND expires_at > now();

-- name: lock_ready_for_delete
-- The same row lock a task submit takes on its input: whoever locks first decides.
SELECT id, object_key, size
FROM file
WHERE id = $1 AND owner_id = $2 AND status = 'ready'
FOR UPDATE;

-- name: file_is_pinned
SELECT EXISTS (SELECT 1 FROM task_input_pin WHERE file_id = $1);

-- name: mark_deleting
UPDATE file SET status = 'deleting', updated_at = now() WHERE id = $1 AND status = 'ready';

-- name: finish_delete
-- Only the transition deleting -> deleted releases quota, so it happens once.
UPDATE file
SET status = 'deleted', deleted_at = now(), updated_at = now()
WHERE id = $1 AND status = 'deleting'
RETURNING owner_id, size;

-- name: lock_expired
-- Expired ready files, locked (SKIP LOCKED: concurrent maintainers take different rows).
-- The pin test here reads this statement's snapshot, which can predate a pin a submit
-- commits before this lock is taken: it only filters; claim_expired decides.
SELECT id FROM file
WHERE status = 'ready' AND expires_at <= now()
  AND NOT EXISTS (SELECT 1 FROM task_input_pin p WHERE p.file_id = file.id)
ORDER BY expires_at
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: claim_expired
-- Locked expired ready files become deleting, unless pinned. A statement of its own, after
-- lock_expired, so its snapshot is taken under the row lock: a submit pins a file only
-- while holding that lock, so every pin that could exist has committed and is seen here.
UPDATE file SET status = 'deleting', updated_at = now()
WHERE id = ANY($1::uuid[]) AND status = 'ready' AND expires_at <= now()
  -- an active task still needs it; it expires for the owner all the same
  AND NOT EXISTS (SELECT 1 FROM task_input_pin p WHERE p.file_id = file.id)
RETURNING id;

-- name: claim_deleting
-- Rows whose object still has to go; a fresh user delete is left to its own request for $2
-- seconds. Claimed, not held: updated_at moves to now(), so other maintainers leave these rows
-- alone for another $2 seconds, and the statement commits at once — no lock is held while the
-- objects are deleted (cleanup.purge_claimed). If this maintainer dies, they are due again then.
UPDATE file SET updated_at = now()
WHERE id IN (
    SELECT id FROM file
    WHERE status = 'deleting' AND updated_at <= now() - make_interval(secs => $2)
    ORDER BY updated_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING id, owner_id, object_key;

-- name: claim_stale_uploading
-- Uploads that never finished (the process died between reserve and ready), claimed like
-- claim_deleting. Unpublished task results are the tasks module's to clean (they follow
-- their attempt).
UPDATE file SET updated_at = now()
WHERE id IN (
    SELECT id FROM file
    WHERE status = 'uploading' AND kind = 'upload' AND updated_at <= now() - make_interval(secs => $2)
    ORDER BY updated_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
RETURNING id, owner_id, object_key;

-- name: known_keys
SELECT object_key FROM file WHERE object_key = ANY($1::text[]);

-- name: orphan_sweep_position
SELECT after_key FROM file_orphan_sweep;

-- name: move_orphan_sweep
-- Only from where this pass found it: of two maintainers sweeping at once, the one that finishes
-- second leaves the position the first one moved it to.
UPDATE file_orphan_sweep SET after_key = $2, moved_at = now()
WHERE after_key IS NOT DISTINCT FROM $1;

-- ---------------------------------------------------------------- for tasks (tasks/store.py, tasks/results.py)

-- name: lock_task_input
-- The same row lock a file delete takes: whoever locks first decides (migration 0018,
-- file_lock_task_input: the task submit locks its input with the same function).
SELECT * FROM file_lock_task_input($1, $2);

-- name: claim_unpublished_results
-- Results reserved by attempts that are no longer the running one: never published. Claimed
-- like files' claim_deleting (updated_at moves to now(); committed at once), so no row lock is
-- held while their objects are deleted.
UPDATE file SET updated_at = now()
WHERE id IN (
    SELECT f.id
    FROM task_attempt a
    JOIN task t ON t.id = a.task_id
    JOIN file f ON f.id = a.result_file_id
    WHERE f.status = 'uploading' AND f.kind = 'result'
      AND NOT (t.status = 'running' AND t.lease_version = a.lease_version)
      AND f.updated_at <= now() - make_interval(secs => $2)
    ORDER BY f.updated_at
    LIMIT $1
    FOR UPDATE OF f SKIP LOCKED
)
RETURNING id, owner_id, object_key;

-- ---------------------------------------------------------------- for account deletion (auth/routes.py)

-- name: account_object_keys
SELECT object_key FROM file WHERE owner_id = $1 AND status <> 'deleted';

-- ---------------------------------------------------------------- history retention (cleanup.forget_deleted)

-- name: forget_deleted
-- Rows of files deleted more than $1 days ago that no task names as its result any more (tasks'
-- retention prunes such tasks first): their object went long ago and nothing reads the row.
DELETE FROM file
WHERE id IN (
    SELECT f.id FROM file f
    WHERE f.status = 'deleted' AND f.deleted_at < now() - make_interval(days => $1)
      AND NOT EXISTS (SELECT 1 FROM task t WHERE t.result_file_id = f.id)
    ORDER BY f.deleted_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
RETURNING id;
