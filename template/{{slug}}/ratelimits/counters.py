"""Fixed-window counters by key: one row per key and window, counted in one statement."""

from __future__ import annotations

import asyncpg

from ..db.queries import Queries

Q = Queries.load(__package__)


async def hit(conn: asyncpg.Connection | asyncpg.Pool, key: str, window_seconds: int, limit: int) -> bool:
    """Count one hit on ``key`` in its current window of ``window_seconds`` (aligned to the clock);
    True while the count, this hit included, is within ``limit``.

    Refused hits count too, so a caller hammering a key stays refused until the window turns. A key
    keeps one window length: windows of two lengths under one key would share rows.
    """
    return await conn.fetchval(Q.hit, key, window_seconds) <= limit


async def purge(conn: asyncpg.Connection | asyncpg.Pool, batch: int) -> int:
    """Delete at most ``batch`` windows that ended over an hour ago; return how many."""
    status = await conn.execute(Q.purge, batch)
    return int(status.split()[-1])
