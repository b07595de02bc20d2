"""Tasks as the owner sees them: idempotent submit, reads, cancel and manual retry.

Every statement here checks ownership in its WHERE; another account's task
is indistinguishable from a missing one.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from ..auth import accounts
from ..files import store as files
from ..files.errors import FileNotFound
from ..settings import TasksPolicy
from . import billing
from .contract import Processor
from .errors import ActiveLimit, NotRetryable, TaskNotFound, TaskRejected
from .registry import REGISTRY
from .sql import Q
from .states import ACTIVE, MANUAL_RETRY, TaskStatus

# --- wire shapes -------------------------------------------------------------------


class TaskInput(msgspec.Struct, rename="camel", frozen=True):
    file_id: UUID
    name: str
    size: int


class Attempts(msgspec.Struct, frozen=True):
    used: int
    max: int


class TaskResult(msgspec.Struct, rename="camel", frozen=True):
    file_id: UUID
    name: str
    size: int
    sha256: str
    content_type: str


class TaskOut(msgspec.Struct, rename="camel", frozen=True):
    """The public view of a task: no leases, tokens, digests, versions or queue details.

    ``result`` is set only while the owner can still download it; ``result_gone`` says that a
    succeeded task's result was deleted or has expired (so ``result`` is null).
    """

    id: UUID
    status: str
    processor: str
    processor_version: int
    params: dict[str, Any]
    input: TaskInput
    attempts: Attempts
    error_code: str | None
    cancel_requested: bool
    retryable: bool
    result: TaskResult | None
    result_gone: bool
    dead_lettered_at: datetime | None
    price: int
    charge_status: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


def is_retryable(row: asyncpg.Record | dict[str, Any]) -> bool:
    """Failed with a code the owner may retry, budget left, and its processor version still deployed."""
    return (row["status"] == TaskStatus.FAILED and row["error_code"] in MANUAL_RETRY
            and row["attempt_count"] < row["max_attempts"] and REGISTRY.known(row["processor"],
                                                                              row["processor_version"]))


def to_public(row: asyncpg.Record | dict[str, Any]) -> TaskOut:
    result = None
    if row["status"] == TaskStatus.SUCCEEDED and not row["result_gone"]:
        result = TaskResult(
            file_id=row["result_file_id"],
            name=row["result_name"],
            size=row["result_size"],
            sha256=bytes(row["result_sha256"]).hex(),
            content_type=row["result_content_type"],
        )
    return TaskOut(
        id=row["id"],
        status=row["status"],
        processor=row["processor"],
        processor_version=row["processor_version"],
        params=row["params"],
        input=TaskInput(file_id=row["input_file_id"], name=row["input_name"], size=row["input_size"]),
        attempts=Attempts(used=row["attempt_count"], max=row["max_attempts"]),
        error_code=row["error_code"],
        cancel_requested=row["cancel_requested_at"] is not None,
        retryable=is_retryable(row),
        result=result,
        result_gone=row["result_gone"],
        dead_lettered_at=row["dead_lettered_at"],
        price=row["price"],
        charge_status=row["charge_status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        finished_at=row["finished_at"],
    )


# --- submit ----------------------------------------------------------------------


async def request_key_known(conn: asyncpg.Connection, owner_id: UUID, request_key: UUID) -> bool:
    """A resubmit of a known request creates nothing, so it needs no captcha (its token is spent)."""
    return await conn.fetchrow(Q.task_by_request_key, owner_id, request_key) is not None


def fingerprint(processor: str, version: int, file_id: UUID, params: dict[str, Any]) -> bytes:
    """Hash of the canonical input and parameters (the captcha token is not part of it)."""
    canonical = msgspec.json.encode(
        {"processor": processor, "version": version, "fileId": str(file_id), "params": params}, order="sorted",
    )
    return hashlib.sha256(canonical).digest()


async def lock_input(conn: asyncpg.Connection, owner_id: UUID, file_id: UUID, processor: Processor,
                     ) -> asyncpg.Record:
    """Lock the input file row (the lock delete takes too) and check it can be this processor's input."""
    row = await files.lock_task_input(conn, owner_id, file_id)
    if row is None or row["status"] != "ready" or not row["unexpired"]:
        raise FileNotFound("The input file is not available (deleted, expired or not yours).")
    if not processor.accepts_type(row["content_type"]):
        raise TaskRejected(f"{processor.title} takes files of type {', '.join(processor.accepts)}.")
    return row


async def check_active_limit(conn: asyncpg.Connection, owner_id: UUID, max_active: int) -> None:
    if await conn.fetchval(Q.count_active, owner_id) >= max_active:
        raise ActiveLimit()


class Submitted(msgspec.Struct, frozen=True):
    """What a submit did: ``token`` is the new task's delivery lease (its sender sends the first
    round after the commit) and ``task`` the new task as committed; both None for a known request,
    which is never sent again."""

    task_id: UUID
    token: UUID | None = None
    task: TaskOut | None = None

    @property
    def created(self) -> bool:
        return self.token is not None


# --- reads -----------------------------------------------------------------------


async def get_task(conn: asyncpg.Connection, owner_id: UUID, task_id: UUID) -> TaskOut:
    row = await conn.fetchrow(Q.public_task, task_id, owner_id)
    if row is None:
        raise TaskNotFound()
    return to_public(row)


async def list_tasks(conn: asyncpg.Connection, owner_id: UUID, after: tuple[datetime, UUID] | None,
                     limit: int) -> list[TaskOut]:
    created_at, task_id = after if after else (None, None)
    return [to_public(row) for row in await conn.fetch(Q.list_tasks, owner_id, created_at, task_id, limit)]


# --- cancel and retry ------------------------------------------------------------
#
# The owner and an operator change a task by the same rules: the same statements, the same
# budget, the same lock order. The only difference is the owner check, a parameter:
# ``owner_id`` is the caller's account, whose task it must be, or ``ANY_OWNER`` for an
# operator's action on any account's task (the console: ops/actions.py).

ANY_OWNER = None


async def lock_for_change(conn: asyncpg.Connection, owner_id: UUID | None, task_id: UUID) -> asyncpg.Record:
    """Lock the task's owner account, then the task (the lock order everywhere), or TaskNotFound.

    With ``ANY_OWNER`` the owner is read first; it never changes, so the row locked next is the
    same task of the same account.
    """
    if owner_id is ANY_OWNER:
        owner_id = await conn.fetchval(Q.task_owner, task_id)
        if owner_id is None:
            raise TaskNotFound()
    await accounts.lock(conn, owner_id)
    task = await conn.fetchrow(Q.lock_own_task, task_id, owner_id)
    if task is None:
        raise TaskNotFound()
    return task


async def cancel(conn: asyncpg.Connection, owner_id: UUID | None, task_id: UUID) -> str:
    """Waiting → canceled now (pin released, hold refunded); running/reconciling → request recorded.

    Terminal tasks are unchanged — except that a failed task still holding
    credits (a retryable failure) is abandoned: its hold is refunded. Returns what
    happened: ``canceled``, ``cancel_requested``, ``refunded`` or ``unchanged``.
    """
    task = await lock_for_change(conn, owner_id, task_id)
    status = TaskStatus(task["status"])
    if status in (TaskStatus.PENDING, TaskStatus.QUEUED, TaskStatus.RETRY_WAIT):
        await billing.refund(conn, task_id)
        await conn.execute(Q.cancel_waiting, task_id)
        await conn.execute(Q.release_pin, task_id)
        return "canceled"
    if status in ACTIVE:
        await conn.execute(Q.request_cancel, task_id)
        return "cancel_requested"
    if status == TaskStatus.FAILED and await billing.refund(conn, task_id):
        return "refunded"
    return "unchanged"


async def retry(conn: asyncpg.Connection, policy: TasksPolicy, owner_id: UUID | None, task_id: UUID) -> None:
    """A failed task with an eligible code and budget left goes back to pending, re-pinned.

    Re-checks what submit checked: the owner's active limit, the processor version and
    the original input (still ready, unexpired and byte-for-byte the same).
    The attempt budget is never reset.
    """
    task = await lock_for_change(conn, owner_id, task_id)
    if not REGISTRY.known(task["processor"], task["processor_version"]):
        raise NotRetryable("This task's processor version is no longer available. Start a new task.")
    if not is_retryable(task):
        raise NotRetryable()
    await check_active_limit(conn, task["owner_id"], policy.max_active)
    try:
        file = await lock_input(conn, task["owner_id"], task["input_file_id"],
                                REGISTRY.get(task["processor"], task["processor_version"]))
    except (FileNotFound, TaskRejected):
        raise NotRetryable("The input file is no longer available. Upload it again and start a new task.") from None
    if bytes(file["sha256"]) != bytes(task["input_sha256"]) or file["size"] != task["input_size"]:
        raise NotRetryable("The input file changed. Start a new task.")
    await conn.execute(Q.retry_failed, task_id)
    await conn.execute(Q.insert_pin, task_id, file["id"])
    await billing.hold_again(conn, task_id)
