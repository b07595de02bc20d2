"""The file rows: reservation with quota, publication, listing, deletion states."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import asyncpg
import msgspec

from ..auth import accounts
from ..db.queries import Queries
from .errors import FileNotFound, QuotaExceeded

Q = Queries.load(__package__)


class FileOut(msgspec.Struct, rename="camel", frozen=True):
    """A file as its owner sees it."""

    id: UUID
    name: str
    content_type: str
    size: int
    sha256: str
    created_at: datetime
    expires_at: datetime


class StoredFile(msgspec.Struct, frozen=True):
    """A ready file with where its bytes are."""

    public: FileOut
    object_key: str


def to_public(row: asyncpg.Record) -> FileOut:
    return FileOut(
        id=row["id"],
        name=row["name"],
        content_type=row["content_type"],
        size=row["size"],
        sha256=bytes(row["sha256"]).hex(),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
    )


async def reserve(conn: asyncpg.Connection, *, file_id: UUID, owner_id: UUID, name: str, content_type: str,
                  size: int, object_key: str, quota_bytes: int, ttl_hours: int, kind: str = "upload") -> None:
    """Insert the ``uploading`` row and take its quota, in the caller's transaction.

    The account row is locked first, so concurrent uploads (and task submits)
    of one account queue up here and none can overshoot the quota.
    """
    await accounts.lock(conn, owner_id)
    if not await conn.fetchval(Q.reserve, file_id, owner_id, name, content_type, size, object_key, quota_bytes,
                               ttl_hours, kind):
        raise QuotaExceeded()


async def mark_ready(conn: asyncpg.Connection, file_id: UUID, sha256: bytes) -> FileOut:
    row = await conn.fetchrow(Q.mark_ready, file_id, sha256)
    if row is None:  # someone (maintenance) gave up on this upload meanwhile
        raise FileNotFound()
    return to_public(row)


async def _release_after(conn: asyncpg.Connection, transition: str, file_id: UUID) -> bool:
    """Run a transition that returns ``owner_id, size`` and, only if it matched, give that size
    back to the owner's quota: a row finished twice releases its quota once."""
    row = await conn.fetchrow(transition, file_id)
    if row is None:
        return False
    await conn.execute(Q.release_quota, row["owner_id"], row["size"])
    return True


async def drop_uploading(conn: asyncpg.Connection, file_id: UUID) -> bool:
    """Undo a reservation: its own row and quota, only if it never became ready."""
    return await _release_after(conn, Q.drop_uploading, file_id)


async def finish_delete(conn: asyncpg.Connection, file_id: UUID) -> bool:
    """deleting -> deleted and release its quota; False if another caller finished first."""
    return await _release_after(conn, Q.finish_delete, file_id)


async def get_ready(conn: asyncpg.Connection, file_id: UUID, owner_id: UUID) -> StoredFile:
    row = await conn.fetchrow(Q.get_ready, file_id, owner_id)
    if row is None:
        raise FileNotFound()
    return StoredFile(public=to_public(row), object_key=row["object_key"])


async def list_ready(conn: asyncpg.Connection, owner_id: UUID, after: tuple[datetime, UUID] | None,
                     limit: int) -> list[FileOut]:
    created_at, file_id = after if after else (None, None)
    rows = await conn.fetch(Q.list_ready, owner_id, created_at, file_id, limit)
    return [to_public(row) for row in rows]


async def used_bytes(conn: asyncpg.Connection, owner_id: UUID) -> int:
    return await conn.fetchval(Q.used_bytes, owner_id)


async def object_keys(conn: asyncpg.Connection, owner_id: UUID) -> list[str]:
    """Every object an account's files may hold (for removal after the account is deleted)."""
    return [row["object_key"] for row in await conn.fetch(Q.account_object_keys, owner_id)]


# --- for tasks -------------------------------------------------------------------


async def lock_task_input(conn: asyncpg.Connection, owner_id: UUID, file_id: UUID) -> asyncpg.Record | None:
    """Lock the owner's file row that a task would take as input (the lock a delete takes too:
    whoever locks first decides); None when it is not the owner's."""
    return await conn.fetchrow(Q.lock_task_input, file_id, owner_id)
