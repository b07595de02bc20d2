"""A task's charge: the task row's ``charge_status`` transitions, each with its ledger entry.

The task row says where its money is (``held``, then ``captured`` or ``refunded``; a retry of a
refunded task starts a new round, ``held`` again). Each transition is one guarded statement on
the task (``queries.sql``), so a second settlement matches nothing; the credits move in
``charges.ledger``, inside the same transaction, after the account row is locked. The capture
happens in the publication's one call (``task_publish`` with charges' ``credit_capture``,
migration 0014).
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from ..charges import ledger
from .sql import Q


async def hold_again(conn: asyncpg.Connection, task_id: UUID) -> None:
    """Before a retry: a task whose hold was refunded pays its quote again (free and held tasks: nothing)."""
    row = await conn.fetchrow(Q.start_charge_round, task_id)
    if row is not None:
        await ledger.place_hold(conn, row["owner_id"], task_id, row["price"], row["charge_round"])


async def refund(conn: asyncpg.Connection, task_id: UUID) -> bool:
    """Give a held price back; False when there was nothing held (free, captured, already refunded)."""
    row = await conn.fetchrow(Q.settle_charge, task_id, "refunded")
    if row is None:
        return False
    await ledger.give_back(conn, row["owner_id"], task_id, row["charge_round"], row["price"])
    return True
