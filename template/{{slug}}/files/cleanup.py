"""Maintenance of files: expired files, unfinished deletes and uploads, orphan objects.

Each step handles at most ``batch`` rows per run and locks its rows with
``FOR UPDATE SKIP LOCKED``, so maintainers running at once never work on the
same file; the object is removed while its row is locked, and the quota is
released only by the row's own transition.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from ..db.pool import transaction
from ..runtime import Runtime
from . import store
from .errors import StorageUnavailable
from .uploads import object_store

log = logging.getLogger(__name__)

# A user's own delete or upload gets this long to finish before maintenance steps in.
SETTLE_SECONDS = 60
STALE_UPLOAD_SECONDS = 3600
ORPHAN_GRACE = timedelta(hours=1)


async def expire_files(runtime: Runtime, batch: int) -> int:
    """Ready files past their expiry, not pinned, become ``deleting`` (then go with the next step).

    Lock first, then decide in a second statement: the pin check must see pins committed
    by submits that held the row just before us (one statement's snapshot can predate them).
    """
    async with transaction(runtime.pool) as conn:
        locked = [row["id"] for row in await conn.fetch(store.Q.lock_expired, batch)]
        if not locked:
            return 0
        return len(await conn.fetch(store.Q.claim_expired, locked))


async def purge_locked(runtime: Runtime, statement: str, settle: int, batch: int, finish) -> int:
    """Rows selected (and locked) by ``statement``: delete each object, then ``finish`` its row."""
    objects = object_store(runtime)
    done = 0
    async with transaction(runtime.pool) as conn:
        for row in await conn.fetch(statement, batch, settle):
            try:
                await objects.delete(row["object_key"])
            except StorageUnavailable:
                log.info("file %s: storage unavailable, retried next run", row["id"])
                continue
            await finish(conn, row["id"])
            done += 1
    return done


async def purge_deleting(runtime: Runtime, batch: int, settle: int = SETTLE_SECONDS) -> int:
    """``deleting`` rows: remove the object, then mark deleted and release the quota."""
    return await purge_locked(runtime, store.Q.lock_deleting, settle, batch, store.finish_delete)


async def purge_stale_uploads(runtime: Runtime, batch: int, settle: int = STALE_UPLOAD_SECONDS) -> int:
    """Uploads stuck in ``uploading``: remove whatever object landed, the row and its quota."""
    return await purge_locked(runtime, store.Q.lock_stale_uploading, settle, batch, store.drop_uploading)


async def purge_orphans(runtime: Runtime, batch: int, grace: timedelta = ORPHAN_GRACE) -> int:
    """Objects under the site's prefix with no row at all, older than ``grace``.

    Rows are written before objects, so an object without a row is a leftover
    (a write that landed after its upload gave up); the grace period covers
    any write still in flight.
    """
    objects = object_store(runtime)
    cutoff = datetime.now(UTC) - grace
    removed = 0
    candidates: list[str] = []
    async for key, modified in objects.list_keys():
        if modified < cutoff:
            candidates.append(key)
        if len(candidates) >= 200:
            removed += await _delete_orphans(runtime, candidates, batch - removed)
            candidates = []
            if removed >= batch:
                return removed
    if candidates:
        removed += await _delete_orphans(runtime, candidates, batch - removed)
    return removed


async def _delete_orphans(runtime: Runtime, keys: list[str], limit: int) -> int:
    known = {row["object_key"] for row in await runtime.pool.fetch(store.Q.known_keys, keys)}
    orphans = [key for key in keys if key not in known][:limit]
    objects = object_store(runtime)
    for key in orphans:
        await objects.delete(key)
    return len(orphans)
