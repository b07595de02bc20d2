"""What a running process holds: settings, the database pool, the object store and the task queue.

Opened once per process (web lifespan, worker boot, a CLI command) and closed
on the way out. Only this module opens and closes them; handlers receive each
part through Litestar's dependency injection, and domain functions take the
parts they use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import asyncpg
import dramatiq

from . import tally
from .db.pool import create_pool
from .files.objects import ObjectStore, open_object_store
from .services.broker import create_broker, open_sender
from .settings import Settings
from .tally import Event
from .tasks.messages import TaskQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    pool: asyncpg.Pool
    objects: ObjectStore | None  # None: the site runs without S3_ENDPOINT_URL
    queue: TaskQueue | None  # None: the site runs without BROKER_URL


@asynccontextmanager
async def open_runtime(settings: Settings, *, pool_size: int = 10,
                       broker: dramatiq.Broker | None = None) -> AsyncIterator[Runtime]:
    """Open what a process needs. A worker passes the broker it consumes from; others get their own."""
    async with AsyncExitStack() as stack:
        _log_orphaned_connection_errors(stack)
        pool = await create_pool(settings.require_database_url(), max_size=pool_size)
        stack.push_async_callback(pool.close)
        objects = await open_object_store(settings, stack, lambda: tally.add_quietly(pool, Event.STORAGE_ERROR))
        if broker is None and (broker := create_broker(settings)) is not None:
            stack.callback(broker.close)
        queue = None
        if broker is not None:
            queue = TaskQueue(broker, settings.site.task_queue, await stack.enter_async_context(open_sender(broker)))
        yield Runtime(settings=settings, pool=pool, objects=objects, queue=queue)


def _log_orphaned_connection_errors(stack: AsyncExitStack) -> None:
    """Log in one line the connection errors that surface from tasks nobody awaits.

    When S3 drops a connection mid-request, aiohttp (3.14) re-raises the failed
    body write from its writer task as well as from the call itself. The call's
    failure is already handled (``StorageUnavailable``); the copy would reach the
    loop's default handler, which logs a traceback holding the request line
    (bucket, account id, key). Anything else goes to the handler that was there.
    """
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, aiohttp.ClientError | OSError):
            log.warning("connection error in a background task: %s", type(error).__name__)
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
    stack.callback(loop.set_exception_handler, previous)
