"""List latency with one account holding 100 000 tasks: the first page and a deep cursor page.

The account's tasks are its real ones plus copies of its latest succeeded
task (new ids and request keys, each a millisecond older than the last),
inserted in one statement — a shape the list's keyset index sees exactly as
it would see a long history, without running 100 000 tasks first.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg

from harness.identifiers import quote_ident
from harness.state import SiteRecord

from .accounts import Account
from .measure import BenchError, latency
from .results import Listing

PAGE = 20
# Columns a copy gets fresh values for; every other column is copied as it is.
FRESH = {
    "id": "gen_random_uuid()",
    "request_key": "gen_random_uuid()",
    "created_at": "t.created_at - n * interval '1 millisecond'",
    "updated_at": "t.updated_at - n * interval '1 millisecond'",
    "finished_at": "t.finished_at - n * interval '1 millisecond'",
}


def cursor_for(created_at: datetime, row_id: UUID) -> str:
    """The site's keyset cursor (web/paging.py: microseconds since 1970 UTC, then the row id in
    hex); the deep page's first row proves it still matches."""
    return f"{(created_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)}-{row_id.hex}"


async def seed(conn: asyncpg.Connection, owner: UUID, total: int) -> None:
    have = await conn.fetchval("SELECT count(*) FROM task WHERE owner_id = $1", owner)
    template = await conn.fetchval(
        "SELECT id FROM task WHERE owner_id = $1 AND status = 'succeeded' ORDER BY created_at DESC LIMIT 1", owner)
    if template is None:
        raise BenchError("the list account has no succeeded task to copy")
    columns = [r["column_name"] for r in await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'task' ORDER BY ordinal_position")]
    values = ", ".join(FRESH.get(c, f"t.{quote_ident(c)}") for c in columns)
    await conn.execute(
        f"INSERT INTO task ({', '.join(map(quote_ident, columns))}) SELECT {values} "
        "FROM task t, generate_series(1, $2) AS n WHERE t.id = $1", template, max(total - have, 0))
    await conn.execute("ANALYZE task")  # as autovacuum would have long since, for a table this size


async def _page_times(account: Account, params: dict, samples: int, first_id: str | None = None) -> list[float]:
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        response = await account.http.get("/api/tasks", params=params)
        times.append(time.perf_counter() - began)
        body = response.json() if response.status_code == 200 else {}
        items = body.get("items", [])
        if len(items) != PAGE or (first_id is not None and items[0]["id"] != first_id):
            raise BenchError(f"list answered {response.status_code} with {len(items)} items: {response.text[:200]}")
    return times


async def listing(site: SiteRecord, account: Account, *, total: int, samples: int) -> Listing:
    owner = UUID(account.id)
    conn = await asyncpg.connect(site.database_url)
    try:
        await seed(conn, owner, total)
        deep_offset = total * 9 // 10
        before = await conn.fetchrow(
            "SELECT created_at, id FROM task WHERE owner_id = $1 ORDER BY created_at DESC, id DESC "
            "OFFSET $2 LIMIT 1", owner, deep_offset - 1)
        rows = await conn.fetch(
            "SELECT id FROM task WHERE owner_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1",
            owner, deep_offset)
    finally:
        await conn.close()
    deep_cursor = cursor_for(before["created_at"], before["id"])
    await _page_times(account, {}, 3)  # warm
    first = await _page_times(account, {}, samples)
    deep = await _page_times(account, {"cursor": deep_cursor}, samples, first_id=str(rows[0]["id"]))
    return Listing(site=site.slug, tasks=total, first_page=latency(first), deep_page=latency(deep),
                   deep_offset=deep_offset)
