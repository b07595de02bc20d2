"""The files' books: storage use per account, rows against objects, unreferenced results.

Read-only. Objects are listed page by page and looked up by key; rows that
must have an object are only walked one by one (a HEAD each) when the counts
say some object is missing, and a missing one is confirmed by a fresh read
before it is reported, so a delete finishing during the audit is not a finding.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from uuid import UUID

import asyncpg

from ..db.queries import Queries
from ..findings import BATCH, Finding
from .cleanup import ORPHAN_GRACE
from .objects import ObjectStore

Q = Queries.load(__package__, "audit.sql")

FIRST_ID = UUID(int=0)
LIVE = ("ready", "deleting")


async def audit_usage(conn: asyncpg.Connection, batch: int = BATCH) -> AsyncIterator[Finding]:
    after = FIRST_ID
    while rows := await conn.fetch(Q.usage_batch, after, batch):
        for row in rows:
            # An account gets its usage row with its first upload: no row means nothing used.
            if (row["used_bytes"] or 0) != row["file_bytes"]:
                yield Finding("USAGE_MISMATCH", f"account {row['account_id']}",
                              f"storage_usage says {row['used_bytes'] or 0} bytes, "
                              f"its files hold {row['file_bytes']} bytes")
        after = rows[-1]["account_id"]


async def audit_unreferenced_results(conn: asyncpg.Connection, batch: int = BATCH) -> AsyncIterator[Finding]:
    after = FIRST_ID
    while rows := await conn.fetch(Q.unreferenced_results_batch, after, batch):
        for row in rows:
            yield Finding("RESULT_UNREFERENCED", f"file {row['id']}",
                          f"ready result of account {row['owner_id']} that no task references")
        after = rows[-1]["id"]


async def audit_objects(conn: asyncpg.Connection, confirm: asyncpg.Pool, objects: ObjectStore, started: datetime,
                        batch: int = BATCH, grace: timedelta = ORPHAN_GRACE) -> AsyncIterator[Finding]:
    """``conn`` reads the snapshot being audited; ``confirm`` re-reads a row before it is reported."""
    with_object = 0
    async for page in objects.list_pages():
        rows = {row["object_key"]: row["status"] for row in await conn.fetch(Q.rows_for_keys, [k for k, _ in page])}
        for key, modified in page:
            status = rows.get(key)
            if status in LIVE:
                with_object += 1
            elif modified < started - grace:  # younger ones may be uploads whose row is not visible yet
                held = "no row" if status is None else f"its row is {status}"
                yield Finding("OBJECT_ORPHANED", f"object {key}", f"{held}; last written {modified:%Y-%m-%d %H:%M}")
    if with_object == await conn.fetchval(Q.count_with_object):
        return
    after = FIRST_ID
    while rows := await conn.fetch(Q.with_object_batch, after, batch):
        for row in rows:
            if await objects.exists(row["object_key"]):
                continue
            status = await confirm.fetchval(Q.status_of, row["id"])
            if status in LIVE and not await objects.exists(row["object_key"]):
                yield Finding("OBJECT_MISSING", f"file {row['id']}",
                              f"{status} row, but object {row['object_key']} is not in bucket {objects.bucket}")
        after = rows[-1]["id"]
