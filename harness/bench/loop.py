"""The closed loop both the sites and the bare baseline are driven with.

``concurrency`` clients each start a job, wait until the database says it
finished, and start the next, until ``total`` jobs ran. Completion is read
from the database by one poller for all clients, so waiting adds no load to
the system under test beyond one small indexed query per interval, and each
latency is taken from the row's own finish time — the poll interval delays
the next submit, never the measurement.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from uuid import UUID

import asyncpg
import msgspec

from .measure import BenchError, Latency, latency, rate

POLL_INTERVAL = 0.02
JOB_TIMEOUT = 120.0

# Completion queries take the ids still awaited and return (id, status, error_code,
# finished: epoch seconds) for those that finished.
TASKS_FINISHED = """
SELECT id, status, error_code, extract(epoch FROM finished_at)::float8 AS finished
FROM task WHERE id = ANY($1::uuid[]) AND finished_at IS NOT NULL
"""


class Finished(msgspec.Struct, frozen=True):
    status: str
    error_code: str | None
    finished: float


class Completions:
    """Polls one database for finished jobs and wakes the client waiting on each."""

    def __init__(self, conn: asyncpg.Connection, query: str, interval: float = POLL_INTERVAL) -> None:
        self.conn = conn
        self.query = query
        self.interval = interval
        self.polls = 0  # the driver's own transactions on that database (commit counts subtract them)
        self._waiting: dict[UUID, asyncio.Future[Finished]] = {}
        self._stopping = False

    async def poll_once(self) -> None:
        rows = await self.conn.fetch(self.query, list(self._waiting))
        self.polls += 1
        for row in rows:
            future = self._waiting.pop(row["id"], None)
            if future is not None and not future.done():
                future.set_result(Finished(row["status"], row["error_code"], row["finished"]))

    async def run(self) -> None:
        # Stopped by a flag, never cancelled: a poll cancelled mid-query might have
        # committed on the server without being counted in ``polls``.
        while not self._stopping:
            if self._waiting:
                await self.poll_once()
            await asyncio.sleep(self.interval)

    def stop(self) -> None:
        self._stopping = True

    async def wait(self, job_id: UUID, timeout: float = JOB_TIMEOUT) -> Finished:
        future = asyncio.get_running_loop().create_future()
        self._waiting[job_id] = future
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise BenchError(f"job {job_id} did not finish within {timeout:.0f} s") from None
        finally:
            self._waiting.pop(job_id, None)


class LoopResult(msgspec.Struct, frozen=True):
    jobs: list[UUID]
    seconds: float  # first job sent -> last job finished
    jobs_per_s: float
    latency: Latency


StartJob = Callable[[int, int], Awaitable[UUID]]  # (client, job number) -> job id


async def closed_loop(start: StartJob, completions: Completions, total: int, concurrency: int,
                      seconds: float = 0.0, pace: float | None = None) -> LoopResult:
    """Run at least ``total`` jobs with ``concurrency`` in flight, and go on starting jobs until ``seconds``
    have passed since the first (a batch long enough to be steady); every job must end ``succeeded``.
    With ``pace`` (jobs/s), job ``n`` starts no earlier than ``n / pace`` s after the first, as pgbench's
    ``-R`` holds its clients: a system that could go faster is held to another's rate."""
    numbers = itertools.count()
    latencies: list[float] = []
    jobs: list[UUID] = []
    last_finish = 0.0
    began = time.time()

    def more(number: int) -> bool:
        return number < total or time.time() - began < seconds

    async def client(index: int) -> None:
        nonlocal last_finish
        while more(number := next(numbers)):
            if pace:
                await asyncio.sleep(max(0.0, began + number / pace - time.time()))
            sent = time.time()  # the database's now() reads the same clock
            job_id = await start(index, number)
            jobs.append(job_id)
            done = await completions.wait(job_id)
            if done.status != "succeeded":
                raise BenchError(f"job {job_id} ended {done.status} ({done.error_code})")
            latencies.append(done.finished - sent)
            last_finish = max(last_finish, done.finished)

    poller = asyncio.create_task(completions.run())
    began = time.time()  # the clock starts with the first job, not with the definitions above
    try:
        async with asyncio.TaskGroup() as clients:  # one failing client cancels the others
            for i in range(concurrency):
                clients.create_task(client(i))
    except* Exception as failed:
        raise failed.exceptions[0] from None
    finally:
        completions.stop()
        await poller
    elapsed = last_finish - began
    return LoopResult(jobs=jobs, seconds=round(elapsed, 3), jobs_per_s=rate(len(jobs), elapsed),
                      latency=latency(latencies))
