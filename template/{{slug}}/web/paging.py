"""Keyset cursors over ``(created_at, id)``: opaque to clients, stable under equal timestamps."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Generic, TypeVar
from uuid import UUID

import asyncpg
import msgspec
from litestar.params import QueryParameter

from ..errors import ValidationFailed

PAGE_SIZE = 20

T = TypeVar("T")

# The ``?cursor=`` parameter of every list; bounded like every other input.
Cursor = Annotated[str | None, QueryParameter(max_length=200)]


def encode_cursor(created_at: datetime, row_id: UUID) -> str:
    raw = f"{created_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, row_id = raw.split("|")
        created_at = datetime.fromisoformat(stamp)
        if created_at.tzinfo is None:
            raise ValueError("naive timestamp")
        return created_at, UUID(row_id)
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed("The cursor is not valid; start from the first page.") from None


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
