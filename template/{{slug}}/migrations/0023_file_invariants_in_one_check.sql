-- files: the file row's nine invariants (migrations 0002 and 0005), checked by one function, for the
-- reason migration 0022 gives for task's: PostgreSQL parses and plans a table's CHECK expressions
-- again for every statement that writes it, and a plpgsql function keeps its plan. A task writes
-- its result's row twice (the claim's reservation, the publication); every upload does too. The
-- same invariants, each refused under its own name with check_violation
-- (tests/test_migrations_data.py). A later invariant replaces this function.
CREATE FUNCTION file_invariants_hold(
    status text, kind text, name text, content_type text, size bigint, sha256 bytea, ready_at timestamptz,
    deleted_at timestamptz
) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    violated text;
BEGIN
    -- As a CHECK: an invariant that answers NULL holds.
    violated := CASE
        WHEN NOT (content_type ~ '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$') THEN 'file_content_type_shape'
        WHEN NOT ((status = 'deleted') = (deleted_at IS NOT NULL)) THEN 'file_deleted_has_time'
        WHEN NOT (kind IN ('upload', 'result')) THEN 'file_kind_known'
        WHEN NOT (length(name) BETWEEN 1 AND 255 AND name !~ '[/\\[:cntrl:]]' AND name NOT IN ('.', '..'))
            THEN 'file_name_safe'
        WHEN NOT (status <> 'ready' OR (sha256 IS NOT NULL AND ready_at IS NOT NULL)) THEN 'file_ready_has_digest'
        -- uploads are never empty (zero-byte files exist only as task results, 0005)
        WHEN NOT (status <> 'ready' OR size > 0 OR kind = 'result') THEN 'file_ready_not_empty'
        WHEN NOT (sha256 IS NULL OR octet_length(sha256) = 32) THEN 'file_sha256_length'
        WHEN NOT (size >= 0) THEN 'file_size_not_negative'
        WHEN NOT (status IN ('uploading', 'ready', 'deleting', 'deleted')) THEN 'file_status_known'
    END;
    IF violated IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "file" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', CONSTRAINT = violated, TABLE = 'file';
    END IF;
    RETURN true;
END $$;

ALTER TABLE file
    DROP CONSTRAINT file_content_type_shape,
    DROP CONSTRAINT file_deleted_has_time,
    DROP CONSTRAINT file_kind_known,
    DROP CONSTRAINT file_name_safe,
    DROP CONSTRAINT file_ready_has_digest,
    DROP CONSTRAINT file_ready_not_empty,
    DROP CONSTRAINT file_sha256_length,
    DROP CONSTRAINT file_size_not_negative,
    DROP CONSTRAINT file_status_known,
    ADD CONSTRAINT file_invariants CHECK (file_invariants_hold(
        status, kind, name, content_type, size, sha256, ready_at, deleted_at));
