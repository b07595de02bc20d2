"""Deleting many rows without a long transaction: one bounded statement at a time."""

from __future__ import annotations

import asyncpg


async def delete_in_batches(pool: asyncpg.Pool, statement: str, days: int, batch: int, limit: int) -> int:
    """Run ``statement`` (parameters: ``days``, a row cap; RETURNING one row per row deleted) until it
    deletes fewer than ``batch`` rows or ``limit`` rows went in all; each run is its own short
    transaction, so no lock outlives one batch. Returns the rows deleted."""
    done = 0
    while done < limit:
        deleted = len(await pool.fetch(statement, days, min(batch, limit - done)))
        done += deleted
        if deleted < batch:
            break
    return done
