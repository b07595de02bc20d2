"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import msgspec
from litestar import Request, Response, get
from litestar.datastructures import State
from litestar.openapi import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from ..runtime import Runtime
from ..services.broker import broker_reachable
from .dependencies import runtime_of

Check = Literal["ok", "down", "absent"]

# Probes come every few seconds from every balancer, and anyone may call /readyz: each process
# answers from its last check for this long instead of asking the database, broker and S3 each time.
READY_CACHE_SECONDS = 3.0


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


@get("/readyz", tags=["health"],
     responses={503: ResponseSpec(Readiness, description="A service the site needs is down.")})
async def readyz(request: Request, state: State) -> Response[Readiness]:
    """Database, broker and storage reachable (checked at most every few seconds per process).
    A service the site runs without is "absent"."""
    checks = await readiness(state, runtime_of(request))
    return Response(
        checks,
        status_code=HTTP_200_OK if checks.status == "ready" else HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Cache-Control": "no-store"},
    )


async def readiness(state: State, runtime: Runtime) -> Readiness:
    """This process's last check, or a new one if it is older than ``READY_CACHE_SECONDS``
    (for /readyz and for /metrics' ``sitekit_ready``)."""
    checked_at, checks = state.get("readiness", (-READY_CACHE_SECONDS, None))
    if checks is None or time.monotonic() - checked_at >= READY_CACHE_SECONDS:
        checks = await _check(runtime)
        state.readiness = (time.monotonic(), checks)
    return checks


async def _check(runtime: Runtime) -> Readiness:
    async def optional(client, probe) -> Check:
        if client is None:
            return "absent"
        return "ok" if await probe() else "down"

    database, broker, storage = await asyncio.gather(
        _database_ok(runtime),
        optional(runtime.queue, lambda: broker_reachable(runtime.queue.broker)),
        optional(runtime.objects, lambda: runtime.objects.reachable()),
    )
    return Readiness(
        status="ready" if database and "down" not in (broker, storage) else "unready",
        database="ok" if database else "down",
        broker=broker,
        storage=storage,
    )
