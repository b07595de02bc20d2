"""Claim, settlement of failures, and recovery of lost leases.

Each transition is one guarded statement (tasks/queries.sql): the WHERE holds
the precondition — status, lease version, lease expiry — so a transition that
is no longer valid simply matches no row.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from .. import tally
from ..auth import accounts
from ..db.pool import transaction
from ..files import store as files
from ..files.objects import ObjectStore
from ..settings import FilesPolicy
from ..tally import Event
from . import billing, delivery
from .errors import LeaseLost
from .messages import TaskQueue
from .registry import REGISTRY
from .sql import Q
from .states import AUTO_RETRY, EXECUTION_LEASE_SECONDS, MANUAL_RETRY, ErrorCode, TaskStatus, retry_delay_seconds

log = logging.getLogger(__name__)

# The result type of tasks submitted before processors declared theirs (text-normalize@1's);
# newer tasks carry their processor's (migration 0016).
LEGACY_RESULT_TYPE = "text/plain"


class PinnedInput(msgspec.Struct, frozen=True):
    """The input file's row as the claim found it (the snapshot on the task is what it must match)."""

    status: str
    owner_id: UUID
    size: int
    sha256: bytes | None
    object_key: str


class Reserved(msgspec.Struct, frozen=True):
    """The attempt's ``uploading`` result file, with room for ``size`` bytes taken from the quota."""

    file_id: UUID
    object_key: str
    size: int
    content_type: str


class Claim(msgspec.Struct, frozen=True):
    """What an executor holds after a successful claim.

    ``input`` is None when the task's pin is gone; ``result`` is None when the owner's quota had
    no room for the result.
    """

    task_id: UUID
    owner_id: UUID
    lease_version: int
    processor: str
    processor_version: int
    params: dict[str, Any]
    input_file_id: UUID
    input_name: str
    input_size: int
    input_sha256: bytes
    attempt_count: int
    max_attempts: int
    input: PinnedInput | None
    result: Reserved | None


async def claim(pool: asyncpg.Pool, objects: ObjectStore, policy: FilesPolicy, task_id: UUID,
                dispatch_version: int) -> Claim | None:
    """Claim the task for the message's dispatch version and reserve its result (the bound its
    processor declared at submit, under the files' quota and expiry); None for a duplicate or stale
    message.

    One call, one commit: claim, reservation and attempt row (migrations 0014 and 0016, task_claim).
    """
    result_id = uuid.uuid4()
    row = await pool.fetchrow(Q.claim_task, task_id, dispatch_version, EXECUTION_LEASE_SECONDS, result_id,
                              objects.prefix, LEGACY_RESULT_TYPE, policy.quota_bytes, policy.ttl_hours)
    if row is None:
        return None
    pinned = None
    if row["input_status"] is not None:
        pinned = PinnedInput(status=row["input_status"], owner_id=row["input_owner_id"], size=row["input_size_now"],
                             sha256=row["input_sha256_now"], object_key=row["input_object_key"])
    reserved = None
    if row["result_file_id"] is not None:
        reserved = Reserved(file_id=row["result_file_id"], object_key=row["result_object_key"],
                            size=row["result_bytes"], content_type=row["result_type"])
    return Claim(
        task_id=row["task_id"], owner_id=row["owner_id"], lease_version=row["lease_version"],
        processor=row["processor"], processor_version=row["processor_version"], params=row["params"],
        input_file_id=row["input_file_id"], input_name=row["input_name"], input_size=row["input_size"],
        input_sha256=row["input_sha256"], attempt_count=row["attempt_count"], max_attempts=row["max_attempts"],
        input=pinned, result=reserved,
    )


async def lock_lease(conn: asyncpg.Connection, held: Claim) -> asyncpg.Record:
    """Lock the account, then the task — only while ``held`` is still its live lease."""
    await accounts.lock(conn, held.owner_id)
    row = await conn.fetchrow(Q.lock_leased, held.task_id, held.lease_version)
    if row is None:
        raise LeaseLost()
    return row


async def settle_canceled(conn: asyncpg.Connection, task_id: UUID, lease_version: int) -> None:
    await billing.refund(conn, task_id)
    await conn.execute(Q.settle_canceled, task_id, lease_version)
    await conn.execute(Q.end_attempt, task_id, lease_version, "canceled", None)
    await conn.execute(Q.release_pin, task_id)


async def settle_failure(pool: asyncpg.Pool, held: Claim, code: ErrorCode) -> TaskStatus:
    """Record a classified failure of the current attempt.

    A requested cancel wins; STORAGE_UNAVAILABLE with budget left waits and
    retries; anything else fails the task and releases its pin.
    """
    async with transaction(pool) as conn:
        row = await lock_lease(conn, held)
        if row["cancel_requested_at"] is not None:
            await settle_canceled(conn, held.task_id, held.lease_version)
            return TaskStatus.CANCELED
        if code in AUTO_RETRY and row["attempt_count"] < row["max_attempts"]:
            await conn.execute(Q.settle_retry_wait, held.task_id, held.lease_version,
                               retry_delay_seconds(row["attempt_count"]))
            await conn.execute(Q.end_attempt, held.task_id, held.lease_version, "retry", code.value)
            return TaskStatus.RETRY_WAIT
        retryable = (code in MANUAL_RETRY and row["attempt_count"] < row["max_attempts"]
                     and REGISTRY.known(held.processor, held.processor_version))
        await settle_failed(conn, held.task_id, held.lease_version, code, retryable=retryable)
        return TaskStatus.FAILED


async def settle_failed(conn: asyncpg.Connection, task_id: UUID, lease_version: int, code: ErrorCode,
                        retryable: bool) -> None:
    """Fail the current attempt. A failure the owner may retry keeps its hold (they may abandon it
    to get it back); any other failure refunds at once."""
    if not retryable:
        await billing.refund(conn, task_id)
    await conn.execute(Q.settle_failed, task_id, lease_version, code.value)
    await conn.execute(Q.end_attempt, task_id, lease_version, "failed", code.value)
    await conn.execute(Q.release_pin, task_id)


async def recover_expired_leases(pool: asyncpg.Pool, queue: TaskQueue | None, batch: int) -> int:
    """Maintenance: running tasks whose 2-minute lease passed.

    Known deterministic processor with budget left → pending and redelivered
    under a new dispatch version; budget spent → failed / LEASE_EXPIRED;
    unknown processor → reconciling (pin kept, no automatic delivery); a
    requested cancel is settled now. Without a broker (``queue`` None) redelivery is left to the
    re-send step of a maintainer that has one.
    """
    recovered = 0
    redeliver: list[UUID] = []
    for candidate in await pool.fetch(Q.expired_leases, batch):
        async with transaction(pool) as conn:
            await accounts.lock(conn, candidate["owner_id"])
            row = await conn.fetchrow(Q.lock_expired_lease, candidate["id"])
            if row is None:  # settled meanwhile, or another maintainer has it
                continue
            task_id, version = row["id"], row["lease_version"]
            # The lost attempt ends now, and its result reservation goes back to the quota in this
            # transaction: the new round may be claimed the moment this commits, and its own
            # reservation must find the room (the object, if one was written, is an orphan now).
            deployed = REGISTRY.known(row["processor"], row["processor_version"])
            reconcile = row["cancel_requested_at"] is None and not deployed
            reserved = await conn.fetchval(Q.end_lost_attempt, task_id, version,
                                           "reconciling" if reconcile else "lease_expired",
                                           ErrorCode.LEASE_EXPIRED.value)
            if reserved is not None:
                await files.drop_uploading(conn, reserved)
            if row["cancel_requested_at"] is not None:
                await settle_canceled(conn, task_id, version)
            elif reconcile:
                await conn.execute(Q.settle_reconciling, task_id, version)
            elif row["attempt_count"] < row["max_attempts"]:
                await conn.execute(Q.settle_pending, task_id, version)
                redeliver.append(task_id)
            else:
                await settle_failed(conn, task_id, version, ErrorCode.LEASE_EXPIRED, retryable=False)
            await tally.add(conn, Event.LEASE_RECOVERED)
        recovered += 1
    for task_id in redeliver if queue is not None else ():
        await delivery.dispatch(pool, queue, task_id)
    return recovered


async def refund_unretryable(pool: asyncpg.Pool, batch: int) -> int:
    """Maintenance: failed tasks that still hold credits although their input is gone or changed
    (so they can never be retried) get their hold back."""
    refunded = 0
    for candidate in await pool.fetch(Q.failed_held_with_bad_input, batch):
        async with transaction(pool) as conn:
            await accounts.lock(conn, candidate["owner_id"])
            if await conn.fetchval(Q.lock_failed_held, candidate["id"]) is None:
                continue
            refunded += await billing.refund(conn, candidate["id"])
    return refunded
