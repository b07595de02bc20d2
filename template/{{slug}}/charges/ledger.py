"""Credits: balances and the ledger. Holds, captures and refunds run inside the transaction of a
task's own state change (``tasks/billing.py`` moves the task's ``charge_status`` and calls these).

The ledger's UNIQUE (task, round, kind) is the database's own guarantee that a round is settled
once. The balance is what can be spent: a hold takes from it, a refund gives back, a capture only
records.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import asyncpg
import msgspec

from ..auth import accounts
from ..db.pool import transaction
from ..db.queries import Queries
from ..errors import SiteError
from ..settings import ChargesPolicy

Q = Queries.load(__package__)


class InsufficientCredits(SiteError):
    domain = "task"  # what the client tried to do: start a task
    code = "INSUFFICIENT_CREDITS"
    status = 402
    default_message = "Not enough credits for this task."


class Entry(msgspec.Struct, rename="camel", frozen=True):
    id: int
    kind: Literal["grant", "hold", "capture", "refund"]
    amount: int
    task_id: UUID | None
    reason: str | None
    created_at: datetime


class TaskEntry(msgspec.Struct, rename="camel", frozen=True):
    """One ledger entry of a task, as the operator console shows it."""

    kind: Literal["hold", "capture", "refund"]
    amount: int
    charge_round: int
    created_at: datetime


class Credits(msgspec.Struct, frozen=True):
    balance: int
    entries: list[Entry]


def quote(policy: ChargesPolicy, processor: str, version: int) -> int:
    """The price of a new task, fixed on the task at creation (later price changes never touch it)."""
    return policy.prices.get(f"{processor}@{version}", 0) if policy.enabled else 0


async def place_hold(conn: asyncpg.Connection, owner_id: UUID, task_id: UUID, price: int, charge_round: int) -> None:
    """Take ``price`` from the balance for this round; the caller holds the account lock."""
    if not await conn.fetchval(Q.hold, owner_id, task_id, charge_round, price):
        raise InsufficientCredits()


async def give_back(conn: asyncpg.Connection, owner_id: UUID, task_id: UUID, charge_round: int, price: int) -> None:
    """The held price returns to the balance."""
    await conn.execute(Q.credit, owner_id, price)
    await conn.execute(Q.entry, owner_id, task_id, charge_round, "refund", price, None)


async def grant(conn: asyncpg.Connection, account_id: UUID, amount: int, reason: str) -> int:
    """Add credits (operators); returns the new balance."""
    balance = await conn.fetchval(Q.credit, account_id, amount)
    await conn.execute(Q.entry, account_id, None, None, "grant", amount, reason)
    return balance


async def grant_by_email(pool: asyncpg.Pool, email: str, amount: int, reason: str) -> int | None:
    """``grant-credits``: add credits to the account with this normalised email; its new balance,
    or None when there is no such account."""
    async with transaction(pool) as conn:
        account = await accounts.find_by_email(conn, email)
        if account is None:
            return None
        await accounts.lock(conn, account.id)
        return await grant(conn, account.id, amount, reason)


async def credits(conn: asyncpg.Connection, account_id: UUID, limit: int = 20) -> Credits:
    rows = await conn.fetch(Q.recent_entries, account_id, limit)
    return Credits(balance=await conn.fetchval(Q.balance, account_id),
                   entries=[Entry(**row) for row in rows])


async def entries(conn: asyncpg.Connection, account_id: UUID, after: tuple[datetime, int] | None,
                  limit: int) -> list[Entry]:
    """The account's own entries, newest first, after the ``(created_at, id)`` of the last one shown."""
    created_at, entry_id = after if after else (None, None)
    rows = await conn.fetch(Q.entries_after, account_id, created_at, entry_id, limit)
    return [Entry(**row) for row in rows]


async def task_entries(conn: asyncpg.Connection, task_id: UUID) -> list[TaskEntry]:
    return [TaskEntry(**row) for row in await conn.fetch(Q.task_entries, task_id)]
