"""``worker``: consume the site's task and dead-letter queues with Dramatiq, until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import signal
import threading

import dramatiq

from .services.broker import create_broker
from .settings import Settings, SettingsError
from .tasks.actors import SiteRuntime, declare_actors

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_MS = 30_000


def run_worker(settings: Settings, threads: int) -> int:
    settings.require_database_url()
    broker = create_broker(settings)
    if broker is None:
        raise SettingsError("BROKER_URL is not set (the worker consumes the site's queues from it)")
    declare_actors(broker, settings)
    SiteRuntime.install(broker, settings)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=1000)
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
