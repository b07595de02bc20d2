"""The upload path: receive within the size limit, reserve, write the object, publish.

Order matters: the row and its quota exist before any byte reaches storage,
so every object has an owner row to be found by; a failure afterwards
compensates exactly its own row and object, and anything left by a crash in
between is finished by maintenance (stale ``uploading`` rows, orphan objects).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from uuid import UUID

from ..db.pool import transaction
from ..runtime import Runtime
from . import store
from .errors import FileRejected, FileTooLarge, StorageUnavailable
from .objects import ObjectStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Received:
    body: bytes
    sha256: bytes

    @property
    def size(self) -> int:
        return len(self.body)


async def receive(chunks: AsyncIterator[bytes], limit: int) -> Received:
    """Read the body, refusing it as soon as it passes ``limit`` bytes (the policy caps it at 64 MiB)."""
    body = bytearray()
    async for chunk in chunks:
        if len(body) + len(chunk) > limit:
            raise FileTooLarge(f"Files may be at most {limit} bytes.")
        body += chunk
    if not body:
        raise FileRejected("The file is empty.")
    return Received(body=bytes(body), sha256=hashlib.sha256(body).digest())


def object_store(runtime: Runtime) -> ObjectStore:
    site = runtime.settings.site
    return ObjectStore(runtime.storage, site.bucket, site.object_prefix)


async def store_upload(runtime: Runtime, owner_id: UUID, name: str, content_type: str,
                       received: Received) -> store.FileOut:
    policy = runtime.settings.policy.files
    objects = object_store(runtime)
    file_id = uuid.uuid4()
    key = objects.key_for(owner_id, file_id)
    async with transaction(runtime.pool) as conn:
        await store.reserve(
            conn, file_id=file_id, owner_id=owner_id, name=name, content_type=content_type,
            size=received.size, object_key=key, quota_bytes=policy.quota_bytes, ttl_hours=policy.ttl_hours,
        )
    try:
        await objects.put(key, received.body, received.size, content_type)
    except StorageUnavailable:
        await _compensate(runtime, objects, file_id, key)
        raise
    async with transaction(runtime.pool) as conn:
        return await store.mark_ready(conn, file_id, received.sha256)


async def _compensate(runtime: Runtime, objects: ObjectStore, file_id: UUID, key: str) -> None:
    # The write may have landed even though it reported failure; try to remove
    # it, but never let that hide the row/quota release (orphan cleanup exists).
    try:
        await objects.delete(key)
    except StorageUnavailable:
        log.info("upload %s: object left for orphan cleanup", file_id)
    async with transaction(runtime.pool) as conn:
        await store.drop_uploading(conn, file_id)
