"""Looking behind a site: plain SQL against its own database, from outside the site's code."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from harness.state import SiteRecord


def fetch(site: SiteRecord, sql: str, *args: Any) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(site.database_url)
        try:
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(run())


def fetchval(site: SiteRecord, sql: str, *args: Any) -> Any:
    rows = fetch(site, sql, *args)
    return rows[0][0] if rows else None


def execute(site: SiteRecord, sql: str, *args: Any) -> str:
    async def run() -> str:
        conn = await asyncpg.connect(site.database_url)
        try:
            return await conn.execute(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(run())


def fetchrow(site: SiteRecord, sql: str, *args: Any) -> asyncpg.Record | None:
    rows = fetch(site, sql, *args)
    return rows[0] if rows else None
