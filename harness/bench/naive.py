"""Driving the naive site (naive_site.py) on the run's own broker, database server and S3.

The same shape as a kit site in the bench: one web process (uvicorn), then 1
and 2 worker processes with 4 threads each, driven by the same closed loop
with the same submit body over HTTP; scratch resources, processes and the
timed batch as reference.py gives every reference. Its processes run in the
first site's interpreter, so they use the site's own Litestar, uvicorn,
Dramatiq, asyncpg and aiobotocore.

The naive site has no upload endpoint: each client's input object is put
into its bucket directly before the loop, under the file id the client then
submits. Every result object is read back and checked afterwards.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from uuid import UUID

import asyncpg
import httpx
import msgspec

from harness import KIT_ROOT, processes, services
from harness.state import SiteRecord, SitesFile

from . import cpu, naive_site, vacuum
from .accounts import input_text, normalized, submit_body
from .bare_worker import Config
from .loop import TASKS_FINISHED
from .measure import BenchError
from .reference import Command, Jobs, per_worker_count, put_inputs, running, scratch, storage
from .results import Naive

MODULE = "harness.bench.naive_site"


class Stood(msgspec.Struct, frozen=True):
    """The naive site with its web process up: how to drive it, and how to start its workers."""

    jobs: Jobs
    web_pids: list[int]
    environ: dict[str, str]
    worker: Command


def naive(sites: SitesFile, via: SiteRecord, *, tasks: int, concurrency: int, workers: tuple[int, ...],
          logs: Path, seconds: float = 0.0, round_number: int = 1,
          paces: Mapping[int, float] | None = None) -> list[Naive]:
    """A batch at each worker count; with ``paces``, at each count it names, held to its rate."""
    counts = tuple(count for count in workers if count in paces) if paces is not None else workers
    with scratch(sites, via, "naive") as config:
        return asyncio.run(_measure(config, via.venv_python, tasks, concurrency, counts, logs,
                                    cpu.service_groups(sites, via), seconds, round_number,
                                    vacuum.for_batch(sites.services, config.database_url), paces))


async def _check_results(config: Config, jobs: list[UUID], client_of: dict[UUID, int]) -> None:
    """Every job's result object holds its client's input, normalised with trimming."""
    wrong = missing = 0
    async with services.s3_client(storage(config)) as s3:
        for job in jobs:
            try:
                response = await s3.get_object(Bucket=config.bucket, Key=naive_site.result_key(job))
            except s3.exceptions.NoSuchKey:
                missing += 1
                continue
            async with response["Body"] as body:
                wrong += await body.read() != normalized(input_text(client_of[job]))
    if wrong or missing:
        raise BenchError(f"the naive site's results: {missing} of {len(jobs)} missing, {wrong} with wrong bytes")


def worker_command(python: str) -> Command:
    return Command(name="naive-worker", argv=[python, "-m", MODULE, "worker"], ready=naive_site.WORKER_READY)


@asynccontextmanager
async def stood(config: Config, python: str, concurrency: int, logs: Path) -> AsyncIterator[Stood]:
    """The naive site's table, its clients' inputs and its web process; its workers are the caller's to start."""
    file_ids = [uuid.uuid4() for _ in range(concurrency)]
    await put_inputs(config, [naive_site.input_key(file_id) for file_id in file_ids])
    environ = {**config.environ(), "PYTHONPATH": str(KIT_ROOT)}  # the site's interpreter, the kit's module
    port = processes.free_port()
    web = Command(name="naive-web", argv=[python, "-m", MODULE, "web", "--port", str(port)],
                  ready=naive_site.WEB_READY)
    conn = await asyncpg.connect(config.database_url)
    try:
        await conn.execute(naive_site.TABLE)
        async with running([web], environ, logs) as web_pids, \
                httpx.AsyncClient(base_url=f"http://{naive_site.HOST}:{port}", timeout=60) as http:
            client_of: dict[UUID, int] = {}

            async def start(client: int, _: int) -> UUID:
                response = await http.post("/api/tasks", json=submit_body(str(file_ids[client])))
                if response.status_code != 201:
                    raise BenchError(f"naive site: submit answered {response.status_code}: {response.text[:200]}")
                task_id = UUID(response.json()["id"])
                client_of[task_id] = client
                return task_id

            async def check(jobs: list[UUID]) -> None:
                await _check_results(config, jobs, client_of)

            yield Stood(jobs=Jobs(start, conn, TASKS_FINISHED, check), web_pids=web_pids, environ=environ,
                        worker=worker_command(python))
    finally:
        await conn.close()


async def _measure(config: Config, python: str, tasks: int, concurrency: int, workers: tuple[int, ...],
                   logs: Path, shared: cpu.Groups, seconds: float, round_number: int,
                   vacuumed: vacuum.Vacuum | None, paces: Mapping[int, float] | None) -> list[Naive]:
    async with stood(config, python, concurrency, logs) as naive:
        return await per_worker_count(Naive, naive.jobs, naive.worker, counts=workers, tasks=tasks,
                                      concurrency=concurrency, environ=naive.environ, logs=logs,
                                      groups={**shared, "web": set(naive.web_pids)}, worker_group="worker",
                                      seconds=seconds, round_number=round_number, vacuum=vacuumed, paces=paces)
