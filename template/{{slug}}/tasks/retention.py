"""History retention (SPEC §6.6): terminal tasks older than ``[tasks] history_days`` are deleted.

Like Oban's pruner and River's cleaner: the oldest rows first, ``batch`` rows a statement, each
statement its own short transaction (so no lock is held for longer than one batch's delete and
a submit or a claim never waits behind a pass), at most ``limit`` rows a pass. Attempts, the pin
and dead-letter receipts go with their task; the credit ledger and the operator log carry the
task id with no foreign key and are kept (migration 0019).
"""

from __future__ import annotations

import asyncpg

from ..db.batches import delete_in_batches
from ..db.queries import Queries

Q = Queries.load(__package__, "retention.sql")


async def prune_history(pool: asyncpg.Pool, days: int, batch: int, limit: int) -> int:
    """Terminal tasks finished more than ``days`` ago, and dead-letter receipts of that age that name
    no task; returns the rows deleted (at most ``limit`` of each)."""
    return (await delete_in_batches(pool, Q.prune_tasks, days, batch=batch, limit=limit)
            + await delete_in_batches(pool, Q.prune_orphan_dead_letters, days, batch=batch, limit=limit))
