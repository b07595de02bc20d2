"""Results: reserve a result file in the current lease, write its object, publish.

The result reuses the files module: the owner's quota, a private key, the
files' expiry. While ``uploading`` it is not listed and not downloadable.
Publication — file ready, task succeeded, attempt ended, pin released — is
one transaction that re-checks the lease, the attempt's reserved result and
the file, so a stale executor can never overwrite a newer outcome.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from ..db.pool import transaction
from ..files import store as files
from ..files.errors import QuotaExceeded, StorageUnavailable
from ..files.objects import ObjectStore
from ..settings import FilesPolicy
from . import billing
from .errors import ExecutionFailure, LeaseLost
from .lifecycle import Claim, lock_lease, settle_canceled
from .processors import result_name
from .sql import Q
from .states import ErrorCode, TaskStatus

log = logging.getLogger(__name__)

RESULT_TYPE = "text/plain"


@dataclass(frozen=True)
class Reserved:
    file_id: UUID
    object_key: str


async def reserve(pool: asyncpg.Pool, objects: ObjectStore, policy: FilesPolicy, held: Claim,
                  size: int) -> Reserved:
    """An ``uploading`` result file linked to this attempt, with its quota taken."""
    if size > policy.max_file_bytes:
        raise ExecutionFailure(ErrorCode.RESULT_TOO_LARGE)
    file_id = uuid.uuid4()
    key = objects.key_for(held.owner_id, file_id)
    try:
        async with transaction(pool) as conn:
            await lock_lease(conn, held)  # account, then task: the lease must be ours
            await files.reserve(
                conn, file_id=file_id, owner_id=held.owner_id, name=result_name(held.input_name),
                content_type=RESULT_TYPE, size=size, object_key=key, quota_bytes=policy.quota_bytes,
                ttl_hours=policy.ttl_hours, kind="result", account_locked=True,
            )
            if await conn.fetchval(Q.attach_result, held.task_id, held.lease_version, file_id) is None:
                raise LeaseLost()
    except QuotaExceeded:
        raise ExecutionFailure(ErrorCode.STORAGE_FULL) from None
    return Reserved(file_id=file_id, object_key=key)


async def write(objects: ObjectStore, reserved: Reserved, output: bytes) -> None:
    try:
        await objects.put(reserved.object_key, output, len(output), RESULT_TYPE)
    except StorageUnavailable:
        raise ExecutionFailure(ErrorCode.STORAGE_UNAVAILABLE) from None


async def publish(pool: asyncpg.Pool, held: Claim, reserved: Reserved, output: bytes) -> TaskStatus:
    """Succeed with the result — or, if cancel was requested meanwhile, settle canceled (output discarded)."""
    digest = hashlib.sha256(output).digest()
    async with transaction(pool) as conn:
        row = await lock_lease(conn, held)
        if row["attempt_result_id"] != reserved.file_id:
            raise LeaseLost()
        if row["cancel_requested_at"] is not None:
            await settle_canceled(conn, held.task_id, held.lease_version)
            return TaskStatus.CANCELED
        if not await files.publish_result(conn, reserved.file_id, held.owner_id, digest):
            raise LeaseLost()
        await billing.capture(conn, held.task_id)
        await conn.execute(Q.settle_succeeded, held.task_id, held.lease_version, reserved.file_id)
        await conn.execute(Q.end_attempt, held.task_id, held.lease_version, "succeeded", None)
        await conn.execute(Q.release_pin, held.task_id)
        return TaskStatus.SUCCEEDED


async def discard(pool: asyncpg.Pool, objects: ObjectStore, reserved: Reserved) -> None:
    """Remove this attempt's result — only while it is unpublished.

    The row goes first, and only if still ``uploading``: if a publish commit
    succeeded but its answer was lost, the row is ``ready`` and nothing here
    touches it or its object.
    """
    async with transaction(pool) as conn:
        dropped = await files.drop_uploading(conn, reserved.file_id)
    if not dropped:
        return
    try:
        await objects.delete(reserved.object_key)
    except StorageUnavailable:
        log.info("result %s: object left for orphan cleanup", reserved.file_id)
