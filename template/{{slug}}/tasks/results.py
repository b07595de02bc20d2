"""Results: write the object of the result file the claim reserved, then publish it.

The result reuses the files module: the owner's quota, a private key, the
files' expiry. While ``uploading`` it is not listed and not downloadable.
Publication — file ready, task succeeded, hold captured, attempt ended, pin
released — is one call that re-checks the lease, the attempt's reserved result
and the file (migration 0014, task_publish), so a stale executor can never
overwrite a newer outcome.
"""

from __future__ import annotations

import hashlib
import logging

import asyncpg

from ..db.pool import transaction
from ..files import store as files
from ..files.errors import StorageUnavailable
from ..files.objects import ObjectStore
from ..settings import FilesPolicy
from .errors import ExecutionFailure, LeaseLost
from .lifecycle import Claim, Reserved, lock_lease, settle_canceled
from .registry import REGISTRY
from .sql import Q
from .states import ErrorCode, TaskStatus

log = logging.getLogger(__name__)


def check_room(policy: FilesPolicy, held: Claim, output: bytes) -> Reserved:
    """The reservation this output goes into: a result larger than a file may be, or than the
    claim reserved (its processor's declared bound), fails RESULT_TOO_LARGE; no reservation (the
    quota was full) STORAGE_FULL."""
    if len(output) > policy.max_file_bytes or (held.result is not None and len(output) > held.result.size):
        raise ExecutionFailure(ErrorCode.RESULT_TOO_LARGE)
    if held.result is None:
        raise ExecutionFailure(ErrorCode.STORAGE_FULL)
    return held.result


async def write(objects: ObjectStore, reserved: Reserved, output: bytes) -> None:
    try:
        await objects.put(reserved.object_key, output, len(output), reserved.content_type)
    except StorageUnavailable:
        raise ExecutionFailure(ErrorCode.STORAGE_UNAVAILABLE) from None


async def publish(pool: asyncpg.Pool, held: Claim, reserved: Reserved, output: bytes) -> TaskStatus:
    """Succeed with the result — or, if cancel was requested meanwhile, settle canceled (output discarded)."""
    name, _ = REGISTRY.get(held.processor, held.processor_version).result_file(held.input_name, reserved.content_type)
    outcome = await pool.fetchval(Q.publish_result, held.task_id, held.lease_version, reserved.file_id,
                                  name, len(output), hashlib.sha256(output).digest())
    if outcome == "succeeded":
        return TaskStatus.SUCCEEDED
    if outcome == "cancel_requested":
        async with transaction(pool) as conn:
            await lock_lease(conn, held)
            await settle_canceled(conn, held.task_id, held.lease_version)
        return TaskStatus.CANCELED
    raise LeaseLost()


async def discard(pool: asyncpg.Pool, objects: ObjectStore, reserved: Reserved, written: bool = True) -> None:
    """Remove this attempt's result — only while it is unpublished; its object too if ``written``
    (a write was at least attempted).

    The row goes first, and only if still ``uploading``: if a publish commit
    succeeded but its answer was lost, the row is ``ready`` and nothing here
    touches it or its object.
    """
    async with transaction(pool) as conn:
        dropped = await files.drop_uploading(conn, reserved.file_id)
    if not dropped or not written:
        return
    try:
        await objects.delete(reserved.object_key)
    except StorageUnavailable:
        log.info("result %s: object left for orphan cleanup", reserved.file_id)
