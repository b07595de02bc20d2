"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
from typing import Literal

import msgspec
from litestar import Response, get
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from ..runtime import Runtime
from ..services.broker import broker_reachable
from ..services.storage import storage_reachable
from .dependencies import SiteRuntime

Check = Literal["ok", "down", "absent"]


class Health(msgspec.Struct, frozen=True):
    status: Literal["ok"]


class Readiness(msgspec.Struct, frozen=True):
    status: Literal["ready", "unready"]
    database: Check
    broker: Check
    storage: Check


@get("/healthz", tags=["health"], cache_control=None)
async def healthz() -> Health:
    """The process is up and serving."""
    return Health(status="ok")


async def _database_ok(runtime: Runtime) -> bool:
    try:
        async with asyncio.timeout(5):
            return await runtime.pool.fetchval("SELECT 1") == 1
    except Exception:
        return False


@get("/readyz", tags=["health"])
async def readyz(runtime: SiteRuntime) -> Response[Readiness]:
    """Database, broker and storage reachable. A service the site runs without is "absent"."""

    async def optional(client, probe) -> Check:
        if client is None:
            return "absent"
        return "ok" if await probe() else "down"

    database, broker, storage = await asyncio.gather(
        _database_ok(runtime),
        optional(runtime.broker, lambda: broker_reachable(runtime.broker)),
        optional(runtime.storage, lambda: storage_reachable(runtime.storage, runtime.settings.site.bucket)),
    )
    checks = Readiness(
        status="ready" if database and "down" not in (broker, storage) else "unready",
        database="ok" if database else "down",
        broker=broker,
        storage=storage,
    )
    return Response(
        checks,
        status_code=HTTP_200_OK if checks.status == "ready" else HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Cache-Control": "no-store"},
    )
