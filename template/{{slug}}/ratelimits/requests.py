"""Per-account request limits (docs/security.md): reads and writes counted apart, per minute."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import asyncpg

from ..errors import RateLimited
from .counters import hit

Bucket = Literal["read", "write"]

# RateLimited's Retry-After (60) is this window: the next minute has a fresh count.
WINDOW_SECONDS = 60


async def count_request(conn: asyncpg.Connection | asyncpg.Pool, account_id: UUID, bucket: Bucket,
                        limit: int) -> None:
    """Count one request; RateLimited once the account is over ``limit`` in this bucket this minute."""
    # The `account:<id>:` prefix ties the counter to the account row (migration 0012): deleted with it.
    if not await hit(conn, f"account:{account_id}:{bucket}", WINDOW_SECONDS, limit):
        raise RateLimited()
