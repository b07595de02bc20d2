"""Fixed one-minute windows, separate read and write buckets, counted in one statement."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import asyncpg

from ..db.queries import Queries
from ..errors import RateLimited

Q = Queries.load(__package__)

Bucket = Literal["read", "write"]


async def take(conn: asyncpg.Connection | asyncpg.Pool, account_id: UUID, bucket: Bucket, limit: int) -> None:
    """Count one request; RateLimited once the account is over ``limit`` this minute."""
    if await conn.fetchval(Q.take, account_id, bucket) > limit:
        raise RateLimited()


async def purge_old_windows(conn: asyncpg.Connection | asyncpg.Pool, batch: int) -> int:
    status = await conn.execute(Q.purge_old_windows, batch)
    return int(status.split()[-1])
