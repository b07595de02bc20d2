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


def counter_key(account_id: UUID, bucket: Bucket) -> str:
    """The key of the account's counter for ``bucket`` (the task submit counts in SQL under it)."""
    # The `account:<id>:` prefix ties the counter to the account row (migration 0012): deleted with it.
    return f"account:{account_id}:{bucket}"


async def count_request(conn: asyncpg.Connection | asyncpg.Pool, account_id: UUID, bucket: Bucket,
                        limit: int) -> None:
    """Count one request; RateLimited once the account is over ``limit`` in this bucket this minute."""
    if not await hit(conn, counter_key(account_id, bucket), WINDOW_SECONDS, limit):
        raise RateLimited()
