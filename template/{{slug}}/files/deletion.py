"""Deleting a file: lock its row, hide it (``deleting``), remove the object, release the quota."""

from __future__ import annotations

import logging
from uuid import UUID

import asyncpg

from ..db.pool import UNAVAILABLE_ERRORS, transaction
from . import store
from .errors import FileInUse, FileNotFound, StorageUnavailable
from .objects import ObjectStore

log = logging.getLogger(__name__)


async def delete_file(pool: asyncpg.Pool, objects: ObjectStore, owner_id: UUID, file_id: UUID) -> bool:
    """True when the object is gone now; False when storage (or the database, after the row was
    hidden) failed and maintenance will finish.

    Either way the file is no longer the owner's to see, and its quota stays
    held until maintenance has marked it deleted.
    """
    async with transaction(pool) as conn:
        row = await conn.fetchrow(store.Q.lock_ready_for_delete, file_id, owner_id)
        if row is None:
            raise FileNotFound()
        if await conn.fetchval(store.Q.file_is_pinned, file_id):
            raise FileInUse()
        await conn.execute(store.Q.mark_deleting, file_id)
    try:
        await objects.delete(row["object_key"])
    except StorageUnavailable:
        log.info("file %s: object delete deferred to maintenance", file_id)
        return False
    try:
        async with transaction(pool) as conn:
            await store.finish_delete(conn, file_id)
    except UNAVAILABLE_ERRORS as error:
        # The object is gone and the row hidden (deleting): the delete happened; maintenance
        # marks it deleted and releases the quota, as after a storage failure.
        log.info("file %s: finishing the delete deferred to maintenance (%s)", file_id, type(error).__name__)
        return False
    return True
