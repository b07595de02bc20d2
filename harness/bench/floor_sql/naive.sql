-- The naive site's two commits (naive_site.py): its row inserted, then marked.
INSERT INTO $schema.naive_task (id, request_key, processor, file_id)
VALUES (gen_random_uuid(), gen_random_uuid()::text, 'text-normalize', $file)
RETURNING id AS tid \gset
UPDATE $schema.naive_task SET status = 'succeeded', finished_at = now() WHERE id = :tid;
