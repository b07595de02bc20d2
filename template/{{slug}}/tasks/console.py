"""The operator console's reads of tasks (every account's): the overview's figures, a filtered
page of tasks and one task with its attempts, dead-letter receipts and charge entries.

What an operator sees of a task is what its owner sees (``store.TaskOut``, from ``task_view``)
plus the owner's email and the history rows — never a lease, token, input digest, request
fingerprint, dispatch version, queue name or message id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated
from uuid import UUID

import asyncpg
import msgspec
from msgspec import Meta

from ..charges import ledger
from .errors import TaskNotFound
from .sql import Q
from .states import TaskStatus
from .store import TaskOut, to_public


class ConsoleTask(TaskOut, frozen=True):
    """A task as the owner sees it, and whose it is."""

    owner_email: str


class FinishedMinute(msgspec.Struct, frozen=True):
    minute: datetime
    succeeded: int
    failed: int
    canceled: int


class Overview(msgspec.Struct, rename="camel", frozen=True):
    """Tasks by state (the active states now, the finished ones over the last 24 hours: never the
    whole history), finished per minute over the last hour (oldest first, every minute present),
    and dead letters received in the last 24 hours."""

    states: dict[str, int]
    finished_per_minute: list[FinishedMinute]
    dead_letters_last_day: int


class ConsoleAttempt(msgspec.Struct, rename="camel", frozen=True):
    number: int
    started_at: datetime
    ended_at: datetime | None
    outcome: str | None
    error_code: str | None


class DeadLetterReceipt(msgspec.Struct, rename="camel", frozen=True):
    classification: str
    received_at: datetime


class ConsoleTaskDetail(msgspec.Struct, rename="camel", frozen=True):
    task: ConsoleTask
    attempts: list[ConsoleAttempt]
    dead_letters: list[DeadLetterReceipt]
    charges: list[ledger.TaskEntry]


class TaskFilter(msgspec.Struct, frozen=True):
    """The list's filters; None is "any". Times are compared with ``created_at`` in [since, until)."""

    status: TaskStatus | None = None
    error_code: Annotated[str, Meta(max_length=40)] | None = None
    owner_email: Annotated[str, Meta(max_length=254)] | None = None
    since: datetime | None = None
    until: datetime | None = None


def _aware(moment: datetime | None) -> datetime | None:
    """A time without a zone is read as UTC (the site's one clock)."""
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _console_task(row: asyncpg.Record) -> ConsoleTask:
    return ConsoleTask(**msgspec.structs.asdict(to_public(row)), owner_email=row["owner_email"])


async def overview(conn: asyncpg.Connection) -> Overview:
    states = {status.value: 0 for status in TaskStatus}
    states |= {row["status"]: row["n"] for row in await conn.fetch(Q.console_states)}
    per_minute = [FinishedMinute(**row) for row in await conn.fetch(Q.console_finished_last_hour)]
    return Overview(states=states, finished_per_minute=per_minute,
                    dead_letters_last_day=await conn.fetchval(Q.console_dead_letters_last_day))


async def list_tasks(conn: asyncpg.Connection, where: TaskFilter, after: tuple[datetime, UUID] | None,
                     limit: int) -> list[ConsoleTask]:
    created_at, task_id = after if after else (None, None)
    email = where.owner_email.strip().lower() if where.owner_email else None
    status = where.status.value if where.status else None
    rows = await conn.fetch(Q.console_tasks, status, where.error_code, email, _aware(where.since),
                            _aware(where.until), created_at, task_id, limit)
    return [_console_task(row) for row in rows]


async def task_detail(conn: asyncpg.Connection, task_id: UUID) -> ConsoleTaskDetail:
    row = await conn.fetchrow(Q.console_task, task_id)
    if row is None:
        raise TaskNotFound()
    return ConsoleTaskDetail(
        task=_console_task(row),
        attempts=[ConsoleAttempt(**a) for a in await conn.fetch(Q.console_attempts, task_id)],
        dead_letters=[DeadLetterReceipt(**d) for d in await conn.fetch(Q.console_dead_letters, task_id)],
        charges=await ledger.task_entries(conn, task_id),
    )
