"""Driving the baseline: the bare actor (bare_worker.py) on the run's own broker, database server and S3.

Its scratch database, bucket and broker namespace carry the run id and are
removed afterwards. It reaches S3 through the first site's endpoint (the
site's storage proxy), so both sides pay for the same path to storage.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from uuid import UUID

import asyncpg

from harness import processes, services
from harness.background import start_logged
from harness.state import S3Record, SiteRecord, SitesFile

from . import bare_worker, cpu
from .accounts import input_text, normalized
from .loop import Completions, closed_loop
from .measure import BenchError
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


def scratch_names(run_id: str) -> tuple[str, str, str]:
    """(database, bucket, broker namespace and queue) of the run's baseline."""
    return f"bench_{run_id}_bare", f"bench-{run_id}-bare", f"bench_{run_id}_bare"


@asynccontextmanager
async def _workers(config: bare_worker.Config, count: int, logs: Path) -> AsyncIterator[list[int]]:
    pids: list[int] = []
    logs.mkdir(parents=True, exist_ok=True)
    try:
        for index in range(count):
            log_path = logs / f"bare-worker-{index}.log"
            offset = log_path.stat().st_size if log_path.exists() else 0
            pids.append(start_logged([sys.executable, "-m", "harness.bench.bare_worker"], log_path,
                                     env=processes.process_env(config.environ())).pid)
            await asyncio.to_thread(processes.wait_logged, log_path, offset, bare_worker.READY_LINE, pids[-1])
        yield pids
    finally:
        for pid in pids:
            services.embedded().stop_process(pid)


def baseline(sites: SitesFile, via: SiteRecord, *, tasks: int, concurrency: int, workers: tuple[int, ...],
             logs: Path) -> list[Baseline]:
    database, bucket, namespace = scratch_names(sites.run_id)
    s3 = sites.services.s3
    database_url = services.create_site_resources(sites.services, database, bucket)
    try:
        config = bare_worker.Config(
            broker_url=sites.services.broker.url, namespace=namespace, queue=namespace, database_url=database_url,
            s3_endpoint_url=via.s3_endpoint_url, s3_access_key_id=s3.access_key_id,
            s3_secret_access_key=s3.secret_access_key, s3_region=s3.region, bucket=bucket,
        )
        return asyncio.run(_measure(config, tasks, concurrency, workers, logs, cpu.service_groups(sites, via)))
    finally:
        problems = services.drop_resources(sites.services, database=database, bucket=bucket, namespace=namespace,
                                           queues=(namespace,))
        if problems:
            raise BenchError(f"baseline scratch resources left behind: {', '.join(problems)}")


async def _measure(config: bare_worker.Config, tasks: int, concurrency: int, workers: tuple[int, ...],
                   logs: Path, shared: cpu.Groups) -> list[Baseline]:
    sources = [f"inputs/{client}" for client in range(concurrency)]
    direct = S3Record(kind="s3", url=config.s3_endpoint_url, access_key_id=config.s3_access_key_id,
                      secret_access_key=config.s3_secret_access_key, region=config.s3_region)
    async with services.s3_client(direct) as s3:
        for client, key in enumerate(sources):
            await s3.put_object(Bucket=config.bucket, Key=key, Body=input_text(client), ContentType="text/plain")
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

        measured = []
        for count in workers:
            async with _workers(config, count, logs) as pids:
                await closed_loop(start, Completions(conn, RESULTS_FINISHED), concurrency, concurrency)  # warm
                groups = {**shared, "bare worker": set(pids)}
                before = cpu.reading(groups)
                batch = await closed_loop(start, Completions(conn, RESULTS_FINISHED), tasks, concurrency)
                used = cpu.per_task(before, cpu.reading(groups), tasks)
            await _check_results(conn, batch.jobs, expected)
            measured.append(Baseline(workers=count, tasks=tasks, seconds=batch.seconds,
                                     tasks_per_s=batch.jobs_per_s, latency=batch.latency, cpu_ms_per_task=used))
        return measured
    finally:
        await conn.close()
        broker.close()

