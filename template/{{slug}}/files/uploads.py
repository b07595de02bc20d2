"""The upload path: refuse early, receive within the size limit, reserve, write the object, publish.

Order matters: the row and its quota exist before any byte reaches storage,
so every object has an owner row to be found by; a failure afterwards
compensates exactly its own row and object, and anything left by a crash in
between is finished by maintenance (stale ``uploading`` rows, orphan objects).
"""

from __future__ import annotations

import logging
import uuid
from uuid import UUID

import asyncpg

from ..db.pool import transaction
from ..settings import FilesPolicy
from . import store
from .body import Received
from .errors import QuotaExceeded, StorageUnavailable
from .objects import ObjectStore

log = logging.getLogger(__name__)


async def check_headroom(pool: asyncpg.Pool, policy: FilesPolicy, owner_id: UUID, at_least: int) -> None:
    """Refuse a body announced larger than the account's free quota before reading a byte of it
    (the reservation after the body arrived still decides; this only spares receiving it)."""
    async with pool.acquire() as conn:
        used = await store.used_bytes(conn, owner_id)
    if used + at_least > policy.quota_bytes:
        raise QuotaExceeded()


async def store_upload(pool: asyncpg.Pool, objects: ObjectStore, policy: FilesPolicy, owner_id: UUID, name: str,
                       content_type: str, received: Received) -> store.FileOut:
    file_id = uuid.uuid4()
    key = objects.key_for(owner_id, file_id)
    async with transaction(pool) as conn:
        await store.reserve(
            conn, file_id=file_id, owner_id=owner_id, name=name, content_type=content_type,
            size=received.size, object_key=key, quota_bytes=policy.quota_bytes, ttl_hours=policy.ttl_hours,
        )
    try:
        await objects.put(key, received.file, received.size, content_type)
    except StorageUnavailable:
        await _compensate(pool, objects, file_id, key)
        raise
    async with transaction(pool) as conn:
        return await store.mark_ready(conn, file_id, received.sha256)


async def _compensate(pool: asyncpg.Pool, objects: ObjectStore, file_id: UUID, key: str) -> None:
    # The write may have landed even though it reported failure; try to remove
    # it, but never let that hide the row/quota release (orphan cleanup exists).
    try:
        await objects.delete(key)
    except StorageUnavailable:
        log.info("upload %s: object left for orphan cleanup", file_id)
    async with transaction(pool) as conn:
        await store.drop_uploading(conn, file_id)
