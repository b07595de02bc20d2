"""Deleting many rows without a long transaction: one bounded statement at a time."""

from __future__ import annotations

import asyncpg


async def delete_in_batches(pool: asyncpg.Pool, statement: str, *params: object, batch: int, limit: int) -> int:
    """Run ``statement`` (its parameters: ``params``, then a row cap; RETURNING a row per row deleted) until
    it deletes fewer than ``batch`` rows or ``limit`` rows went in all. Each run is its own short
    transaction, so no lock outlives one batch. Returns the rows deleted."""
    done = 0
    while done < limit:
        deleted = len(await pool.fetch(statement, *params, min(batch, limit - done)))
        done += deleted
        if deleted < batch:
            break
    return done
