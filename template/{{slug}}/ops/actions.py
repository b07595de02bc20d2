"""What an operator does to a task, by the owner's own rules, and the log that records it.

Retry and cancel are ``tasks.store``'s, with the owner check lifted (``ANY_OWNER``): the same
eligibility, the same attempt budget (never reset), the same lock order. Each action writes its
``ops_action`` row in the transaction of the change, so the log holds exactly what happened: a
refused action (not retryable, missing task) rolls back and leaves no row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import asyncpg
import msgspec

from ..auth.sessions import Account
from ..db.queries import Queries
from ..settings import TasksPolicy
from ..tasks import store

Q = Queries.load(__package__)

Action = Literal["retry", "cancel", "audit"]


class OpsAction(msgspec.Struct, rename="camel", frozen=True):
    """Who did what, to which task (none for an audit run), with what outcome, when."""

    id: UUID
    operator_email: str
    action: Action
    task_id: UUID | None
    outcome: str
    created_at: datetime


async def record(conn: asyncpg.Connection, operator: Account, action: Action, task_id: UUID | None,
                 outcome: str) -> None:
    await conn.execute(Q.insert_action, operator.id, operator.email, action, task_id, outcome)


async def retry(conn: asyncpg.Connection, policy: TasksPolicy, operator: Account, task_id: UUID) -> None:
    """The owner's retry of any account's task, logged, in the caller's transaction (the caller sends
    the task after the commit, as the owner's retry does)."""
    await store.retry(conn, policy, store.ANY_OWNER, task_id)
    await record(conn, operator, "retry", task_id, "pending")


async def cancel(conn: asyncpg.Connection, operator: Account, task_id: UUID) -> str:
    """The owner's cancel of any account's task, logged with what it did, in the caller's transaction."""
    outcome = await store.cancel(conn, store.ANY_OWNER, task_id)
    await record(conn, operator, "cancel", task_id, outcome)
    return outcome


async def recent(conn: asyncpg.Connection, task_id: UUID | None, after: tuple[datetime, UUID] | None,
                 limit: int) -> list[OpsAction]:
    """The log, newest first: every action, or one task's."""
    created_at, action_id = after if after else (None, None)
    return [OpsAction(**row) for row in await conn.fetch(Q.recent_actions, task_id, created_at, action_id, limit)]
