"""Looking behind a site: plain SQL against its own database, from outside the site's code."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import asyncpg

from harness.state import SiteRecord

T = TypeVar("T")


def _run(statement: Callable[[asyncpg.Connection], Awaitable[T]], site: SiteRecord) -> T:
    async def run() -> T:
        conn = await asyncpg.connect(site.database_url)
        try:
            return await statement(conn)
        finally:
            await conn.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    # Playwright's sync API keeps an event loop on this thread; a loop of our own needs another one.
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, run()).result()


def fetch(site: SiteRecord, sql: str, *args: Any) -> list[asyncpg.Record]:
    return _run(lambda conn: conn.fetch(sql, *args), site)


def fetchval(site: SiteRecord, sql: str, *args: Any) -> Any:
    rows = fetch(site, sql, *args)
    return rows[0][0] if rows else None


def execute(site: SiteRecord, sql: str, *args: Any) -> str:
    return _run(lambda conn: conn.execute(sql, *args), site)


def fetchrow(site: SiteRecord, sql: str, *args: Any) -> asyncpg.Record | None:
    rows = fetch(site, sql, *args)
    return rows[0] if rows else None
