"""Executing one task message: claim, read and verify the input, process, publish.

Classified failures settle the task (``ExecutionFailure``). Anything else is
an infrastructure problem: it propagates, and the actor asks Dramatiq to
redeliver the message in 10 s (``actors.py``). A redelivered message whose
task is already running or finished claims nothing and is acknowledged.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Literal
from uuid import UUID

import asyncpg

from ..files.errors import StorageUnavailable
from ..files.objects import ObjectMissing, ObjectStore
from ..settings import FilesPolicy
from . import lifecycle, results
from .errors import ExecutionFailure, LeaseLost
from .registry import REGISTRY
from .states import ErrorCode, TaskStatus

log = logging.getLogger(__name__)

Outcome = Literal["stale", "succeeded", "failed", "retry_wait", "canceled", "lease_lost"]


async def read_input(objects: ObjectStore, held: lifecycle.Claim) -> bytes:
    """The pinned input, verified against the snapshot taken at submit — metadata and actual bytes.

    An input that expired after the task was accepted is still read: the pin
    keeps it for the task, without giving the owner any download right.
    """
    pinned = held.input
    if pinned is None or pinned.status != "ready" or pinned.owner_id != held.owner_id:
        raise ExecutionFailure(ErrorCode.INPUT_MISSING)
    if pinned.size != held.input_size or pinned.sha256 != held.input_sha256:
        raise ExecutionFailure(ErrorCode.INPUT_INVALID)
    try:
        data = await objects.read(pinned.object_key)
    except ObjectMissing:
        raise ExecutionFailure(ErrorCode.INPUT_MISSING) from None
    except StorageUnavailable:
        raise ExecutionFailure(ErrorCode.STORAGE_UNAVAILABLE) from None
    if len(data) != held.input_size or hashlib.sha256(data).digest() != held.input_sha256:
        raise ExecutionFailure(ErrorCode.INPUT_INVALID)
    return data


async def execute(pool: asyncpg.Pool, objects: ObjectStore, policy: FilesPolicy, task_id: UUID,
                  dispatch_version: int) -> Outcome:
    """Run one delivery of a task: ``policy`` bounds the result (size, quota, expiry)."""
    held = await lifecycle.claim(pool, objects, policy, task_id, dispatch_version)
    if held is None:
        return "stale"
    written = False  # whether an object may exist under the reserved key
    try:
        processor = REGISTRY.get(held.processor, held.processor_version)
        params = processor.parse_params(held.params)
        output = await processor.run(await read_input(objects, held), params)
        reserved = results.check_room(policy, held, output)
        written = True
        await results.write(objects, reserved, output)
        status = await results.publish(pool, held, reserved, output)
    except ExecutionFailure as failure:
        try:
            status = await lifecycle.settle_failure(pool, held, failure.code)
        except LeaseLost:
            status = None
    except LeaseLost:
        status = None
    if status is not TaskStatus.SUCCEEDED and held.result is not None:
        await results.discard(pool, objects, held.result, written)
    if status is None:
        log.info("task %s: lease %d lost; its outcome was discarded", task_id, held.lease_version)
        return "lease_lost"
    return status.value  # type: ignore[return-value]
