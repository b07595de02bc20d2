"""Holds, captures and refunds — each inside the transaction of the task's own state change.

The task row says where its money is (``charge_status``); every transition of
it is a guarded statement (``held -> captured|refunded``), so a second
settlement matches nothing, and the ledger's UNIQUE (task, round, kind) is
the database's own guarantee of the same. The balance is what can be spent:
a hold takes from it, a refund gives back, a capture only records.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import asyncpg
import msgspec

from ..db.queries import Queries
from ..settings import Settings
from ..tasks.errors import TaskError

Q = Queries.load(__package__)


class InsufficientCredits(TaskError):
    code = "INSUFFICIENT_CREDITS"
    status = 402
    default_message = "Not enough credits for this task."


class Entry(msgspec.Struct, rename="camel", frozen=True):
    kind: Literal["grant", "hold", "capture", "refund"]
    amount: int
    task_id: UUID | None
    reason: str | None
    created_at: datetime


class Credits(msgspec.Struct, frozen=True):
    balance: int
    entries: list[Entry]


def quote(settings: Settings, processor: str, version: int) -> int:
    """The price of a new task, fixed on the task at creation (later price changes never touch it)."""
    charges = settings.policy.charges
    return charges.prices.get(f"{processor}@{version}", 0) if charges.enabled else 0


async def place_hold(conn: asyncpg.Connection, owner_id: UUID, task_id: UUID, price: int, charge_round: int) -> None:
    """Take ``price`` from the balance for this round; the caller holds the account lock."""
    if await conn.fetchval(Q.debit, owner_id, price) is None:
        raise InsufficientCredits()
    await conn.execute(Q.entry, owner_id, task_id, charge_round, "hold", price, None)


async def hold_again(conn: asyncpg.Connection, task_id: UUID) -> None:
    """Before a retry: a task whose hold was refunded pays its quote again (free and held tasks: nothing)."""
    row = await conn.fetchrow(Q.start_round, task_id)
    if row is not None:
        await place_hold(conn, row["owner_id"], task_id, row["price"], row["charge_round"])


async def capture(conn: asyncpg.Connection, task_id: UUID) -> None:
    row = await conn.fetchrow(Q.settle_hold, task_id, "captured")
    if row is not None:
        await conn.execute(Q.entry, row["owner_id"], task_id, row["charge_round"], "capture", row["price"], None)


async def refund(conn: asyncpg.Connection, task_id: UUID) -> bool:
    """Give a held price back; False when there was nothing held (free, captured, already refunded)."""
    row = await conn.fetchrow(Q.settle_hold, task_id, "refunded")
    if row is None:
        return False
    await conn.execute(Q.credit, row["owner_id"], row["price"])
    await conn.execute(Q.entry, row["owner_id"], task_id, row["charge_round"], "refund", row["price"], None)
    return True


async def grant(conn: asyncpg.Connection, account_id: UUID, amount: int, reason: str) -> int:
    """Add credits (operators); returns the new balance."""
    balance = await conn.fetchval(Q.credit, account_id, amount)
    await conn.execute(Q.entry, account_id, None, None, "grant", amount, reason)
    return balance


async def credits(conn: asyncpg.Connection, account_id: UUID, limit: int = 20) -> Credits:
    rows = await conn.fetch(Q.recent_entries, account_id, limit)
    return Credits(
        balance=await conn.fetchval(Q.balance, account_id),
        entries=[Entry(kind=r["kind"], amount=r["amount"], task_id=r["task_id"], reason=r["reason"],
                       created_at=r["created_at"]) for r in rows],
    )
