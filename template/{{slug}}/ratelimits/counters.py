"""Fixed-window counters by key: one row per key and window, counted in one statement.

A window is aligned to the clock, so a client may spend a limit at the end of one window and again
at the start of the next: at most twice the limit in any window's length (docs/security.md).
"""

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


async def take(conn: asyncpg.Connection | asyncpg.Pool, key: str, window_seconds: int, limit: int) -> int:
    """Count one hit on ``key`` in its current window only while the count is under ``limit``;
    0 when counted, else the seconds until the window ends (the refused hit is not counted).

    For limits checked narrowest first (one client, then everyone): what a narrower limit refused
    never reaches a wider one.
    """
    row = await conn.fetchrow(Q.take, key, window_seconds, limit)
    return 0 if row["count"] is not None else max(1, row["wait"])


async def purge(conn: asyncpg.Connection | asyncpg.Pool, batch: int) -> int:
    """Delete at most ``batch`` windows that ended over an hour ago; return how many."""
    status = await conn.execute(Q.purge, batch)
    return int(status.split()[-1])
