"""Deleting a file: lock its row, hide it (``deleting``), remove the object, release the quota."""

from __future__ import annotations

import logging
from uuid import UUID

from ..db.pool import transaction
from ..runtime import Runtime
from . import store
from .errors import FileInUse, FileNotFound, StorageUnavailable
from .uploads import object_store

log = logging.getLogger(__name__)


async def delete_file(runtime: Runtime, owner_id: UUID, file_id: UUID) -> bool:
    """True when the object is gone now; False when storage failed and maintenance will finish.

    Either way the file is no longer the owner's to see, and its quota stays
    held until the object is really gone.
    """
    async with transaction(runtime.pool) as conn:
        row = await conn.fetchrow(store.Q.lock_ready_for_delete, file_id, owner_id)
        if row is None:
            raise FileNotFound()
        if await conn.fetchval(store.Q.file_is_pinned, file_id):
            raise FileInUse()
        await conn.execute(store.Q.mark_deleting, file_id)
    try:
        await object_store(runtime).delete(row["object_key"])
    except StorageUnavailable:
        log.info("file %s: object delete deferred to maintenance", file_id)
        return False
    async with transaction(runtime.pool) as conn:
        await store.finish_delete(conn, file_id)
    return True
