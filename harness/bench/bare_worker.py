"""The baseline worker: a site's task work done by a bare Dramatiq actor, in a process of its own.

    python -m harness.bench.bare_worker     (configured by the BARE_* environment, see ``Config``)

The actor reads the input object, normalises it by the same rules as
text-normalize@1 (strict UTF-8, CRLF and CR to LF, optional trimming of
trailing spaces and tabs), writes the result object and records one row.
No lifecycle, no ledger, no leases, no checks: what is left is the work
itself on the same broker, database server and S3 endpoint as the sites,
with the same worker shape (one event loop, four worker threads).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import asyncpg
import dramatiq
import msgspec
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO, Middleware

log = logging.getLogger("bare_worker")

ACTOR = "bare_normalize"
THREADS = 4  # as harness.stand.WORKER_THREADS gives each site worker
READY_LINE = "bare worker consuming"
RESULT_TABLE = """
CREATE TABLE IF NOT EXISTS bare_result (
    job_id       uuid PRIMARY KEY,
    size         bigint NOT NULL,
    finished_at  timestamptz NOT NULL DEFAULT now()
)
"""


class Config(msgspec.Struct, frozen=True):
    """Where a reference process finds the run's services: the bare worker's, and the naive site's
    (naive_site.py), passed in the BARE_* environment."""

    broker_url: str
    namespace: str
    queue: str
    database_url: str
    s3_endpoint_url: str
    s3_access_key_id: str
    s3_secret_access_key: str
    s3_region: str
    bucket: str

    def environ(self) -> dict[str, str]:
        return {f"BARE_{name.upper()}": getattr(self, name) for name in self.__struct_fields__}

    @classmethod
    def from_environ(cls) -> Config:
        return cls(**{name: os.environ[f"BARE_{name.upper()}"] for name in cls.__struct_fields__})


def normalize(data: bytes, trim: bool) -> bytes:
    text = data.decode("utf-8")  # strict: a bad input fails the message
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if trim:
        text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return text.encode("utf-8")


def create_broker(url: str, namespace: str) -> dramatiq.Broker:
    if urlsplit(url).scheme in ("redis", "rediss"):
        broker: dramatiq.Broker = RedisBroker(url=url, namespace=namespace)
    else:
        broker = RabbitmqBroker(url=url, confirm_delivery=True)
    broker.add_middleware(AsyncIO())
    return broker


class _Held:
    pool: asyncpg.Pool
    s3: Any
    bucket: str


held = _Held()


async def normalize_object(source_key: str, result_key: str, trim: bool) -> int:
    """The task's work on storage: read the input object, normalise it, write the result; its size.
    (The naive site's actor does the same work, then marks its own row.)"""
    response = await held.s3.get_object(Bucket=held.bucket, Key=source_key)
    async with response["Body"] as body:
        data = await body.read()
    output = normalize(data, trim)
    await held.s3.put_object(Bucket=held.bucket, Key=result_key, Body=output, ContentLength=len(output),
                             ContentType="text/plain")
    return len(output)


async def bare_normalize(job_id: str, source_key: str, result_key: str, trim: bool) -> None:
    size = await normalize_object(source_key, result_key, trim)
    await held.pool.execute("INSERT INTO bare_result (job_id, size) VALUES ($1, $2)", UUID(job_id), size)


def declare(broker: dramatiq.Broker, queue: str) -> dramatiq.Actor:
    return dramatiq.actor(bare_normalize, broker=broker, actor_name=ACTOR, queue_name=queue, max_retries=0)


class Resources(Middleware):
    """Opens the pool and the S3 client on the worker's event loop, as a site worker's runtime does."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.stack = AsyncExitStack()

    async def _open(self) -> None:
        config = self.config
        held.pool = await asyncpg.create_pool(config.database_url, min_size=1, max_size=10)
        self.stack.push_async_callback(held.pool.close)
        held.s3 = await self.stack.enter_async_context(get_session().create_client(
            "s3", endpoint_url=config.s3_endpoint_url, region_name=config.s3_region,
            aws_access_key_id=config.s3_access_key_id, aws_secret_access_key=config.s3_secret_access_key,
            # the sites' client settings (services/storage.py)
            config=AioConfig(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2, "mode": "standard"},
                             s3={"addressing_style": "path"}, signature_version="s3v4"),
        ))
        held.bucket = config.bucket

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        # before the worker threads start taking messages (they start between the two boot hooks)
        get_event_loop_thread().run_coroutine(self._open())

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        get_event_loop_thread().run_coroutine(self.stack.aclose())


def serve(config: Config, declare_actor: Callable[[dramatiq.Broker, str], dramatiq.Actor], ready_line: str) -> int:
    """A worker process: ``declare_actor``'s actor on the config's queue, four threads, until SIGTERM."""
    broker = create_broker(config.broker_url, config.namespace)
    declare_actor(broker, config.queue)
    # After AsyncIO: "before" hooks run in order and "after" hooks in reverse, so its loop runs for both of ours.
    broker.add_middleware(Resources(config), after=AsyncIO)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    worker = dramatiq.Worker(broker, worker_threads=THREADS, worker_timeout=1000)
    worker.start()
    log.info("%s %s with %d threads", ready_line, config.queue, THREADS)
    try:
        stop.wait()
    finally:
        worker.stop(timeout=10_000)
        broker.close()
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return serve(Config.from_environ(), declare, READY_LINE)


if __name__ == "__main__":
    raise SystemExit(main())
