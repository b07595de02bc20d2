"""What the two references (the bare actor, baseline.py; the naive site, naive.py) share.

Each gets scratch resources on the run's own services — a database on the
same server, a bucket and a broker namespace, all named with the run id and
removed afterwards — reaches S3 through the first site's endpoint (the site's
storage proxy) so both sides pay for the same path to storage, runs its
processes in the background (stopped by pid), and is timed with the same
closed loop and CPU readings as the sites.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TypeVar
from uuid import UUID

import asyncpg
import msgspec

from harness import processes, services
from harness.background import start_logged
from harness.state import S3Record, SiteRecord, SitesFile

from . import cpu
from .accounts import input_text
from .bare_worker import Config
from .loop import Completions, StartJob, closed_loop
from .measure import BenchError
from .results import Baseline
from .speed import Probe
from .vacuum import Vacuum

R = TypeVar("R", bound=Baseline)  # a reference's result: Baseline, or Naive with the same fields


def scratch_names(run_id: str, kind: str) -> tuple[str, str, str]:
    """(database, bucket, broker namespace and queue) of the run's reference ``kind``."""
    return f"bench_{run_id}_{kind}", f"bench-{run_id}-{kind}", f"bench_{run_id}_{kind}"


@contextmanager
def scratch(sites: SitesFile, via: SiteRecord, kind: str) -> Iterator[Config]:
    """The reference's scratch resources, as the config its processes read; removed on the way out."""
    database, bucket, namespace = scratch_names(sites.run_id, kind)
    s3 = sites.services.s3
    database_url = services.create_site_resources(sites.services, database, bucket)
    try:
        yield Config(broker_url=sites.services.broker.url, namespace=namespace, queue=namespace,
                     database_url=database_url, s3_endpoint_url=via.s3_endpoint_url,
                     s3_access_key_id=s3.access_key_id, s3_secret_access_key=s3.secret_access_key,
                     s3_region=s3.region, bucket=bucket)
    finally:
        problems = services.drop_resources(sites.services, database=database, bucket=bucket, namespace=namespace,
                                           queues=(namespace,))
        if problems:
            raise BenchError(f"{kind} scratch resources left behind: {', '.join(problems)}")


def storage(config: Config) -> S3Record:
    """The config's S3 endpoint, for the driver's own object calls."""
    return S3Record(kind="s3", url=config.s3_endpoint_url, access_key_id=config.s3_access_key_id,
                    secret_access_key=config.s3_secret_access_key, region=config.s3_region)


async def put_inputs(config: Config, keys: Sequence[str]) -> None:
    """Client ``i``'s input text (the sites' accounts upload the same) at ``keys[i]`` in the config's bucket."""
    async with services.s3_client(storage(config)) as s3:
        for client, key in enumerate(keys):
            await s3.put_object(Bucket=config.bucket, Key=key, Body=input_text(client), ContentType="text/plain")


class Command(msgspec.Struct, frozen=True):
    """A reference process: its log file's name, its command line, and the line it logs once ready."""

    name: str
    argv: list[str]
    ready: str


@asynccontextmanager
async def running(commands: Sequence[Command], environ: dict[str, str], logs: Path) -> AsyncIterator[list[int]]:
    """Start each command in turn with ``environ`` and wait until it logs its ready line; stop all by pid after."""
    pids: list[int] = []
    logs.mkdir(parents=True, exist_ok=True)
    try:
        for command in commands:
            log_path = logs / f"{command.name}.log"
            offset = log_path.stat().st_size if log_path.exists() else 0
            pids.append(start_logged(command.argv, log_path, env=processes.process_env(environ)).pid)
            await asyncio.to_thread(processes.wait_logged, log_path, offset, command.ready, pids[-1])
        yield pids
    finally:
        for pid in pids:
            services.embedded().stop_process(pid)


class Jobs(msgspec.Struct, frozen=True):
    """How the closed loop drives a reference: start a job, read which finished, check the results after."""

    start: StartJob
    conn: asyncpg.Connection  # the reference's database, polled for finished jobs
    finished: str  # the completion query (loop.py)
    check: Callable[[list[UUID]], Awaitable[None]]  # raises BenchError on a wrong or missing result


async def per_worker_count(result: type[R], jobs: Jobs, worker: Command, *, counts: Sequence[int], tasks: int,
                           concurrency: int, environ: dict[str, str], logs: Path, groups: cpu.Groups,
                           worker_group: str, seconds: float = 0.0, round_number: int = 1,
                           vacuum: Vacuum | None = None, paces: Mapping[int, float] | None = None) -> list[R]:
    """For each count: start that many ``worker`` processes, run one untimed job per client (connections,
    imports and prepared statements warm, as the sites get), then a timed batch of at least ``tasks`` and
    ``seconds`` (held to ``paces[count]`` tasks/s where given: ``result`` then takes a ``pace``), with the
    CPU it costs each of ``groups`` and the workers (as ``worker_group``), its own vacuum included
    (vacuum.py); stop the workers, check the results."""
    measured = []
    for count in counts:
        commands = [msgspec.structs.replace(worker, name=f"{worker.name}-{index}") for index in range(count)]
        async with running(commands, environ, logs) as pids:
            await closed_loop(jobs.start, Completions(jobs.conn, jobs.finished), concurrency, concurrency)
            counted = {**groups, worker_group: set(pids)}
            if vacuum:
                await vacuum.clean_slate()
            async with Probe() as probe:
                before = cpu.reading(counted)
                pace = paces.get(count) if paces else None
                batch = await closed_loop(jobs.start, Completions(jobs.conn, jobs.finished), tasks, concurrency,
                                          seconds, pace)
                if vacuum:
                    await vacuum.own()
                used = cpu.per_task(before, cpu.reading(counted), len(batch.jobs))
        await jobs.check(batch.jobs)
        measured.append(result(workers=count, tasks=len(batch.jobs), seconds=batch.seconds,
                               tasks_per_s=batch.jobs_per_s, latency=batch.latency, cpu_ms_per_task=used,
                               round=round_number, unit_ms=probe.unit_ms, **({"pace": pace} if pace else {})))
    return measured
