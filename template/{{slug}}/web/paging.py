"""Keyset cursors over ``(created_at, id)``: opaque to clients, stable under equal timestamps."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Annotated
from uuid import UUID

from litestar.params import QueryParameter

from ..errors import ValidationFailed

PAGE_SIZE = 20

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


def next_cursor(rows: list, key) -> str | None:
    """Given PAGE_SIZE + 1 rows, the cursor of the last row shown, or None on the last page."""
    if len(rows) <= PAGE_SIZE:
        return None
    created_at, row_id = key(rows[PAGE_SIZE - 1])
    return encode_cursor(created_at, row_id)
