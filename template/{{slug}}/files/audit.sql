-- The files' books (audit.py). Read-only; every statement reads one batch,
-- keyset-paged on a primary key, so a large table is walked in slices.

-- name: usage_batch
-- Each account's recorded storage use beside the bytes its files hold:
-- uploading, ready and deleting files count until their object is gone.
WITH batch AS (
    SELECT id FROM account WHERE id > $1 ORDER BY id LIMIT $2
)
SELECT b.id AS account_id,
       u.used_bytes,
       coalesce((SELECT sum(f.size) FROM file f
                 WHERE f.owner_id = b.id AND f.status IN ('uploading', 'ready', 'deleting')), 0)::bigint AS file_bytes
FROM batch b
LEFT JOIN storage_usage u ON u.account_id = b.id
ORDER BY b.id;

-- name: rows_for_keys
SELECT object_key, status FROM file WHERE object_key = ANY($1::text[]);

-- name: count_with_object
-- Rows whose object must exist: what the users see, and deletes not finished yet.
SELECT count(*) FROM file WHERE status IN ('ready', 'deleting');

-- name: with_object_batch
SELECT id, object_key, status FROM file
WHERE status IN ('ready', 'deleting') AND id > $1
ORDER BY id
LIMIT $2;

-- name: status_of
SELECT status FROM file WHERE id = $1;

-- name: unreferenced_results_batch
-- Ready results are published together with their task's success, so each has one.
SELECT f.id, f.owner_id
FROM file f
WHERE f.kind = 'result' AND f.status = 'ready' AND f.id > $1
  AND NOT EXISTS (SELECT 1 FROM task t WHERE t.result_file_id = f.id)
ORDER BY f.id
LIMIT $2;
