"""The naive site: what one would write without the kit — one Litestar endpoint and one Dramatiq actor.

    python -m harness.bench.naive_site web --port N    (one uvicorn process)
    python -m harness.bench.naive_site worker          (one Dramatiq process, four threads)

Both are configured by the BARE_* environment (``bare_worker.Config``) and run
in a site's interpreter (it has uvicorn; the kit does not need it).

``POST /api/tasks`` takes the kit's submit body, inserts one ``task`` row and
sends one message; the actor reads the input object, normalises it by the
bare actor's rules (``bare_worker.normalize_object``), writes the result
object and marks the row. That is all: no accounts or sessions, no rate
limit, no idempotency (a resent request key makes a second task), no active
limit, no outbox (a crash between the insert and the send loses the task),
no leases or retries, no files table — the input object is put straight
into the bucket by whoever drives it, under ``input_key(fileId)``. The
difference to a kit site is the price of those guarantees.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from uuid import UUID, uuid4

import asyncpg
import dramatiq
import msgspec
from litestar import Litestar, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody

from . import bare_worker
from .bare_worker import held

log = logging.getLogger("naive_site")

ACTOR = "naive_normalize"
WEB_READY = "naive web serving"
WORKER_READY = "naive worker consuming"
HOST = "127.0.0.1"

TABLE = """
CREATE TABLE IF NOT EXISTS task (
    id           uuid PRIMARY KEY,
    request_key  text NOT NULL,
    processor    text NOT NULL,
    file_id      uuid NOT NULL,
    status       text NOT NULL DEFAULT 'queued',
    error_code   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
)
"""
INSERT_TASK = "INSERT INTO task (id, request_key, processor, file_id) VALUES ($1, $2, $3, $4)"
MARK_SUCCEEDED = "UPDATE task SET status = 'succeeded', finished_at = now() WHERE id = $1"
MARK_FAILED = "UPDATE task SET status = 'failed', error_code = $2, finished_at = now() WHERE id = $1"


def input_key(file_id: UUID | str) -> str:
    return f"inputs/{file_id}"


def result_key(task_id: UUID | str) -> str:
    return f"results/{task_id}"


# --- the actor ---------------------------------------------------------------------


async def naive_normalize(task_id: str, source_key: str, result_key: str, trim: bool) -> None:
    try:
        await bare_worker.normalize_object(source_key, result_key, trim)
    except Exception as error:
        # without this the row would stay queued and the client would only learn of it by timing out
        await held.pool.execute(MARK_FAILED, UUID(task_id), type(error).__name__)
        raise
    await held.pool.execute(MARK_SUCCEEDED, UUID(task_id))


def declare(broker: dramatiq.Broker, queue: str) -> dramatiq.Actor:
    return dramatiq.actor(naive_normalize, broker=broker, actor_name=ACTOR, queue_name=queue, max_retries=0)


# --- the web app -------------------------------------------------------------------


class Params(msgspec.Struct, rename="camel", frozen=True):
    trim_trailing_whitespace: bool = False


class Submit(msgspec.Struct, rename="camel", frozen=True):
    """The kit's submit body, as accounts.submit_body sends it."""

    request_key: str
    processor: str
    file_id: UUID
    params: Params = msgspec.field(default_factory=Params)


class Created(msgspec.Struct, frozen=True):
    id: UUID
    status: str


def create_app(config: bare_worker.Config) -> Litestar:
    broker = bare_worker.create_broker(config.broker_url, config.namespace)
    actor = declare(broker, config.queue)

    @asynccontextmanager
    async def resources(app: Litestar) -> AsyncIterator[None]:
        app.state.pool = await asyncpg.create_pool(config.database_url, min_size=1, max_size=10)
        log.info("%s on %s", WEB_READY, config.queue)
        try:
            yield
        finally:
            await app.state.pool.close()
            broker.close()

    @post("/api/tasks")
    async def submit(data: JSONBody[Submit], pool: NamedDependency[asyncpg.Pool]) -> Created:
        task_id = uuid4()
        await pool.execute(INSERT_TASK, task_id, data.request_key, data.processor, data.file_id)
        # the broker client blocks: off the event loop, as the baseline's driver sends
        await asyncio.to_thread(actor.send, str(task_id), input_key(data.file_id), result_key(task_id),
                                data.params.trim_trailing_whitespace)
        return Created(id=task_id, status="queued")

    def provide_pool(state: State) -> asyncpg.Pool:
        return state.pool

    return Litestar(route_handlers=[submit], lifespan=[resources],
                    dependencies={"pool": Provide(provide_pool, sync_to_thread=False)})


def serve_web(config: bare_worker.Config, port: int) -> int:
    import uvicorn

    # As a site's `serve --reuse-port` makes it: a socket created as TCP, so asyncio turns
    # Nagle's algorithm off (docs/benchmarks.md, "40 ms on every kept-alive response").
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    # Listening before the app starts up: a client let in by the ready line (logged at
    # start-up) waits in the backlog until uvicorn accepts, instead of being refused.
    sock.listen(2048)
    # The sites' uvicorn settings, access log included (template cli.py, cmd_serve).
    server = uvicorn.Server(uvicorn.Config(create_app(config), host=HOST, port=port, log_config=None,
                                           access_log=True, server_header=False, timeout_graceful_shutdown=10))
    server.run(sockets=[sock])
    return 0 if server.started else 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.naive_site")
    parser.add_argument("role", choices=("web", "worker"))
    parser.add_argument("--port", type=int, default=0, help="web: the port on 127.0.0.1")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = bare_worker.Config.from_environ()
    if args.role == "web":
        return serve_web(config, args.port)
    return bare_worker.serve(config, declare, WORKER_READY)


if __name__ == "__main__":
    sys.exit(main())
