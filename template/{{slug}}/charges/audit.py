"""The credits' books: every account's balance against its ledger. Read-only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import UUID

import asyncpg

from ..db.queries import Queries
from ..findings import BATCH, Finding

Q = Queries.load(__package__, "audit.sql")


async def audit_balances(conn: asyncpg.Connection, batch: int = BATCH) -> AsyncIterator[Finding]:
    after = UUID(int=0)
    while rows := await conn.fetch(Q.balance_batch, after, batch):
        for row in rows:
            # An account gets its balance row with its first grant: no row means zero.
            if (row["balance"] or 0) != row["ledger"]:
                yield Finding("BALANCE_MISMATCH", f"account {row['account_id']}",
                              f"balance is {row['balance'] or 0}, the ledger sums to {row['ledger']}")
        after = rows[-1]["account_id"]
