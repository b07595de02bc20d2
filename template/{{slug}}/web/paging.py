"""Keyset cursors over ``(created_at, id)``: opaque to clients, stable under equal timestamps."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Generic, TypeVar
from uuid import UUID

import asyncpg
import msgspec
from litestar.params import QueryParameter

PAGE_SIZE = 20

T = TypeVar("T")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# The ``?cursor=`` parameter of every list: ``<microseconds since 1970 UTC>-<row id, 32 hex digits>``
# (the key of the last row shown). Clients pass back what ``nextCursor`` gave them; the pattern is
# the whole rule, so every cursor it matches is a valid one (17 digits stay within datetime's range).
CURSOR_PATTERN = r"^[0-9]{1,17}-[0-9a-f]{32}$"
Cursor = Annotated[str | None, QueryParameter(pattern=CURSOR_PATTERN, max_length=50)]


def encode_cursor(created_at: datetime, row_id: UUID) -> str:
    return f"{(created_at - EPOCH) // timedelta(microseconds=1)}-{row_id.hex}"


def decode_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    """The key in a cursor the ``Cursor`` parameter has already matched against its pattern."""
    if not cursor:
        return None
    micros, row_id = cursor.split("-")
    return EPOCH + timedelta(microseconds=int(micros)), UUID(row_id)


class Page(msgspec.Struct, Generic[T], rename="camel", frozen=True):
    """One page of a list, newest first, and the cursor of the next (None on the last page)."""

    items: list[T]
    next_cursor: str | None


Fetch = Callable[[asyncpg.Connection, tuple[datetime, UUID] | None, int], Awaitable[list[T]]]


async def read_page(pool: asyncpg.Pool, cursor: str | None, fetch: Fetch[T],
                    key: Callable[[T], tuple[datetime, UUID]]) -> Page[T]:
    """The page after ``cursor``: ``fetch(conn, after, limit)`` reads one row more than it shows, to
    know whether another page exists; ``key`` is a row's ``(created_at, id)``."""
    after = decode_cursor(cursor)
    async with pool.acquire() as conn:
        rows = await fetch(conn, after, PAGE_SIZE + 1)
    if len(rows) <= PAGE_SIZE:
        return Page(items=rows, next_cursor=None)
    return Page(items=rows[:PAGE_SIZE], next_cursor=encode_cursor(*key(rows[PAGE_SIZE - 1])))
