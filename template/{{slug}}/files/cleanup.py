"""Maintenance of files: expired files, unfinished deletes and uploads, orphan objects.

Each step handles at most ``batch`` rows per run and takes its rows with
``FOR UPDATE SKIP LOCKED``, so maintainers running at once never work on the
same file. No row lock is ever held while storage is called (an object call
may take 15 s): rows are claimed in one short statement, their objects deleted
with no transaction open, then each row is finished in a short transaction of
its own, in (account, file) order. So two maintainers never deadlock on the
quota rows of two accounts, and an upload or an executor reserving quota never
waits behind a slow object delete. The quota is released only by the row's own
guarded transition, so a row finished twice releases it once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg

from ..db.batches import delete_in_batches
from ..db.pool import transaction
from . import store
from .errors import StorageUnavailable
from .objects import ObjectStore

log = logging.getLogger(__name__)

# A user's own delete or upload gets this long to finish before maintenance steps in.
SETTLE_SECONDS = 60
STALE_UPLOAD_SECONDS = 3600
ORPHAN_GRACE = timedelta(hours=1)
# Keys the orphan sweep looks at a pass (maintenance gives it 50 times its ``batch``).
ORPHAN_KEYS = 1000


async def expire_files(pool: asyncpg.Pool, batch: int) -> int:
    """Ready files past their expiry, not pinned, become ``deleting`` (then go with the next step).

    Lock first, then decide in a second statement: the pin check must see pins committed
    by submits that held the row just before us (one statement's snapshot can predate them).
    """
    async with transaction(pool) as conn:
        locked = [row["id"] for row in await conn.fetch(store.Q.lock_expired, batch)]
        if not locked:
            return 0
        return len(await conn.fetch(store.Q.claim_expired, locked))


async def _purge_claimed(pool: asyncpg.Pool, objects: ObjectStore, claim: str, settle: int, batch: int,
                         finish: Callable[[asyncpg.Connection, UUID], Awaitable[bool]]) -> int:
    """Rows claimed by ``claim``: delete each object, then ``finish`` each row; returns rows finished.

    ``claim`` is one statement (its own short transaction) returning ``id, owner_id, object_key``.
    """
    rows = await pool.fetch(claim, batch, settle)
    gone = []
    for row in rows:
        try:
            await objects.delete(row["object_key"])
        except StorageUnavailable:
            log.info("file %s: storage unavailable, retried once its claim lapses", row["id"])
            continue
        gone.append(row)
    done = 0
    # One row per transaction, in one fixed order: a maintainer holds at most one account's
    # quota row at a time, and only for the length of one statement pair.
    for row in sorted(gone, key=lambda r: (r["owner_id"], r["id"])):
        async with transaction(pool) as conn:
            done += await finish(conn, row["id"])
    return done


async def purge_deleting(pool: asyncpg.Pool, objects: ObjectStore, batch: int, settle: int = SETTLE_SECONDS) -> int:
    """``deleting`` rows: remove the object, then mark deleted and release the quota."""
    return await _purge_claimed(pool, objects, store.Q.claim_deleting, settle, batch, store.finish_delete)


async def purge_stale_uploads(pool: asyncpg.Pool, objects: ObjectStore, batch: int,
                              settle: int = STALE_UPLOAD_SECONDS) -> int:
    """Uploads stuck in ``uploading``: remove whatever object landed, the row and its quota."""
    return await _purge_claimed(pool, objects, store.Q.claim_stale_uploading, settle, batch, store.drop_uploading)


async def purge_unpublished_results(pool: asyncpg.Pool, objects: ObjectStore, batch: int,
                                    settle: int = SETTLE_SECONDS) -> int:
    """Result files reserved by task attempts that are no longer running and were never published."""
    return await _purge_claimed(pool, objects, store.Q.claim_unpublished_results, settle, batch,
                                store.drop_uploading)


async def purge_orphans(pool: asyncpg.Pool, objects: ObjectStore, batch: int, grace: timedelta = ORPHAN_GRACE,
                        keys: int = ORPHAN_KEYS) -> int:
    """Objects under the site's prefix with no row at all, older than ``grace``: at most ``batch``
    removed, among the next ``keys`` keys after where the last pass stopped.

    Rows are written before objects, so an object without a row is a leftover
    (a write that landed after its upload gave up); the grace period covers
    any write still in flight. A pass looks at no more than ``keys`` keys, going round to the
    first key at the end of the bucket, so it costs the same whatever the bucket holds, and an
    orphan is found within ⌈objects / keys⌉ passes (``file_orphan_sweep`` keeps the position).
    """
    cutoff = datetime.now(UTC) - grace
    began = await pool.fetchval(store.Q.orphan_sweep_position)
    seen = await objects.keys_after(began, keys)
    if began is not None and len(seen) < keys:  # the end of the bucket: round to where this pass began
        seen += [item for item in await objects.keys_after(None, keys - len(seen)) if item[0] <= began]
    old = [key for key, modified in seen if modified < cutoff]
    known = {row["object_key"] for row in await pool.fetch(store.Q.known_keys, old)} if old else set()
    removed, stopped = 0, began  # stopped: every key up to it is done with
    for key, modified in seen:
        if modified < cutoff and key not in known:
            if removed == batch:
                break
            await objects.delete(key)
            removed += 1
        stopped = key
    else:  # every key looked at: after a pass that saw the whole bucket, the next starts at the first
        if len(seen) < keys:
            stopped = None
    await pool.execute(store.Q.move_orphan_sweep, began, stopped)
    return removed


async def forget_deleted(pool: asyncpg.Pool, days: int, batch: int, limit: int) -> int:
    """Rows of files deleted more than ``days`` ago that no task names as its result (history
    retention: tasks/retention.py runs first). ``batch`` rows a statement, each its own short
    transaction, at most ``limit`` a pass; returns the rows forgotten."""
    return await delete_in_batches(pool, store.Q.forget_deleted, days, batch=batch, limit=limit)
