"""What a running process holds: settings, the database pool, storage and broker clients.

Opened once per process (web lifespan, worker boot, a CLI command) and closed
on the way out; handlers receive its parts through dependency injection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import dramatiq

from .db.pool import create_pool
from .services.broker import create_broker
from .services.storage import open_storage
from .settings import Settings


@dataclass
class Runtime:
    settings: Settings
    pool: asyncpg.Pool
    storage: Any | None  # aiobotocore S3 client
    broker: dramatiq.Broker | None


@asynccontextmanager
async def open_runtime(settings: Settings, *, pool_size: int = 10,
                       broker: dramatiq.Broker | None = None) -> AsyncIterator[Runtime]:
    """Open what a process needs. A worker passes the broker it consumes from; others get their own."""
    from .tasks.actors import declare_actors

    async with AsyncExitStack() as stack:
        pool = await create_pool(settings.require_database_url(), max_size=pool_size)
        stack.push_async_callback(pool.close)
        storage = await open_storage(settings, stack)
        if broker is None and (broker := create_broker(settings)) is not None:
            declare_actors(broker, settings)
            stack.callback(broker.close)
        yield Runtime(settings=settings, pool=pool, storage=storage, broker=broker)
