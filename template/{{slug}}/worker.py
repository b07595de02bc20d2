"""``worker``: consume the site's task and dead-letter queues with Dramatiq, until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import signal
import threading
from contextlib import AsyncExitStack

import dramatiq
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import AsyncIO, Middleware

from .mail.actors import declare_mail_actor
from .runtime import Runtime, open_runtime
from .services.broker import create_broker
from .settings import Settings, SettingsError
from .tasks.actors import declare_actors

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_MS = 30_000
# How long an idle consumer sleeps at most between polls; the task queue's own is shorter
# (services/broker.py, TASK_QUEUE_IDLE_MS).
CONSUMER_IDLE_MS = 1000


class WorkerRuntime(Middleware):
    """Opens the site's runtime (pool, object store) on the worker's event loop, and closes it last."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stack: AsyncExitStack | None = None
        self._runtime: Runtime | None = None

    def current(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the worker's runtime is not open")
        return self._runtime

    async def _open(self, broker: dramatiq.Broker) -> Runtime:
        self._stack = AsyncExitStack()
        return await self._stack.enter_async_context(open_runtime(self.settings, broker=broker))

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        # Worker.start starts the threads that take messages between the before and after boot
        # hooks: opened any later, the first messages would find no runtime.
        self._runtime = get_event_loop_thread().run_coroutine(self._open(broker))

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if self._stack is not None:
            get_event_loop_thread().run_coroutine(self._stack.aclose())
        self._runtime = None


def consume_with(broker: dramatiq.Broker, settings: Settings) -> WorkerRuntime:
    """Declare the site's actors on ``broker``, with the middleware that opens what they use."""
    opened = WorkerRuntime(settings)
    declare_actors(broker, settings.site, opened.current)
    declare_mail_actor(broker, settings.site, opened.current)
    # After AsyncIO: "before" hooks run in middleware order, "after" hooks in reverse, so its
    # loop runs when our boot hook opens the runtime and still runs when our shutdown hook closes it.
    broker.add_middleware(opened, after=AsyncIO)
    return opened


def run_worker(settings: Settings, threads: int) -> int:
    settings.require_database_url()
    broker = create_broker(settings)
    if broker is None:
        raise SettingsError("BROKER_URL is not set (the worker consumes the site's queues from it)")
    consume_with(broker, settings)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=CONSUMER_IDLE_MS)
    worker.start()
    log.info("worker consuming %s and %s with %d threads",
             settings.site.task_queue, settings.site.dead_queue, threads)
    try:
        stop.wait()
    finally:
        log.info("worker stopping")
        worker.stop(timeout=SHUTDOWN_TIMEOUT_MS)
        broker.close()
    return 0
