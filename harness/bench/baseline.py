"""Driving the baseline: the bare actor (bare_worker.py) on the run's own broker, database server and S3.

Scratch resources, processes and the timed batch as reference.py gives every reference.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from uuid import UUID

import asyncpg

from harness.state import SiteRecord, SitesFile

from . import bare_worker, cpu, vacuum
from .accounts import input_text, normalized
from .measure import BenchError
from .reference import Command, Jobs, per_worker_count, put_inputs, scratch
from .results import Baseline

RESULTS_FINISHED = """
SELECT job_id AS id, 'succeeded' AS status, NULL::text AS error_code,
       extract(epoch FROM finished_at)::float8 AS finished
FROM bare_result WHERE job_id = ANY($1::uuid[])
"""


async def _check_results(conn: asyncpg.Connection, jobs: list[UUID], expected: dict[UUID, int]) -> None:
    rows = await conn.fetch("SELECT job_id, size FROM bare_result WHERE job_id = ANY($1::uuid[])", jobs)
    if len(rows) != len(jobs) or any(row["size"] != expected[row["job_id"]] for row in rows):
        raise BenchError("the bare actor's results do not match its inputs")


def baseline(sites: SitesFile, via: SiteRecord, *, tasks: int, concurrency: int, workers: tuple[int, ...],
             logs: Path, seconds: float = 0.0, round_number: int = 1) -> list[Baseline]:
    with scratch(sites, via, "bare") as config:
        return asyncio.run(_measure(config, tasks, concurrency, workers, logs, cpu.service_groups(sites, via),
                                    seconds, round_number,
                                    vacuum.for_batch(sites.services, config.database_url)))


async def _measure(config: bare_worker.Config, tasks: int, concurrency: int, workers: tuple[int, ...],
                   logs: Path, shared: cpu.Groups, seconds: float, round_number: int,
                   vacuumed: vacuum.Vacuum | None) -> list[Baseline]:
    sources = [f"inputs/{client}" for client in range(concurrency)]
    await put_inputs(config, sources)
    broker = bare_worker.create_broker(config.broker_url, config.namespace)
    actor = bare_worker.declare(broker, config.queue)
    conn = await asyncpg.connect(config.database_url)
    try:
        await conn.execute(bare_worker.RESULT_TABLE)

        expected: dict[UUID, int] = {}

        async def start(client: int, _: int) -> UUID:
            job_id = uuid.uuid4()
            expected[job_id] = len(normalized(input_text(client)))
            # as a site's delivery sends: the broker client blocks, so off the loop
            await asyncio.to_thread(actor.send, str(job_id), sources[client], f"results/{job_id}", True)
            return job_id

        async def check(jobs: list[UUID]) -> None:
            await _check_results(conn, jobs, expected)

        worker = Command(name="bare-worker", argv=[sys.executable, "-m", "harness.bench.bare_worker"],
                         ready=bare_worker.READY_LINE)
        return await per_worker_count(Baseline, Jobs(start, conn, RESULTS_FINISHED, check), worker, counts=workers,
                                      tasks=tasks, concurrency=concurrency, environ=config.environ(), logs=logs,
                                      groups=shared, worker_group="bare worker", seconds=seconds,
                                      round_number=round_number, vacuum=vacuumed)
    finally:
        await conn.close()
        broker.close()
