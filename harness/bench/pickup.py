"""The 1-worker stalls in the lab: how long a message waits for a Dramatiq Redis consumer.

    python -m harness.bench.pickup [--timeouts 1000,100] [--jobs 800] [--job-ms 10] [--idle 3]

One worker process's shape (a RedisBroker, four worker threads) on an embedded
Valkey, idle for ``--idle`` seconds (the bench's commit window leaves a site
idle 14 s before its 1-worker batch, commits.open_window), then fed by a closed
loop of eight clients like the bench's: each sends a message and waits for its
job to end. The job only sleeps, so the machine's other load hardly moves the
figures. For each ``worker_timeout`` it reports the pickup (send -> the actor
starts) of the first message of each client and of the rest, and the sleeps of
the queue's consumer during the batch (the one under way at its start too):
Dramatiq's Redis consumer that finds nothing it may take backs off 5, 10, 20 ...
ms (each up to twice that, with jitter), doubling up to ``worker_timeout``, and
a message sent meanwhile waits for the sleep to end (dramatiq/brokers/redis.py,
``_RedisConsumer.__next__``; dramatiq/common.py, ``compute_backoff``).
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import threading
import time
from pathlib import Path

import dramatiq
import msgspec
from dramatiq.brokers import redis as redis_broker
from dramatiq.brokers.redis import RedisBroker

from harness.services import embedded

CLIENTS = 8
THREADS = 4  # a site worker's default (`worker --threads`)
LONG = 0.15  # seconds: a pickup or sleep this long is a stall


class Lab(msgspec.Struct, frozen=True):
    worker_timeout_ms: int
    jobs: int
    jobs_per_s: float
    first_pickup_max_ms: float  # the first message of each client: sent while the consumer idled
    pickup_p50_ms: float  # the rest
    pickup_p99_ms: float
    pickup_max_ms: float
    long_pickups: int
    consumer_sleeps: int
    long_sleeps: int
    longest_sleep_ms: float


class _RecordedTime:
    """The redis broker module's ``time``, with every sleep recorded with its thread."""

    def __init__(self) -> None:
        self.sleeps: list[tuple[threading.Thread, float, float]] = []  # (thread, its start, seconds)

    def __getattr__(self, name: str):
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append((threading.current_thread(), time.monotonic(), seconds))
        time.sleep(seconds)


def run(url: str, worker_timeout_ms: int, jobs: int, job_ms: float, idle: float) -> Lab:
    clock = _RecordedTime()
    redis_broker.time = clock  # type: ignore[assignment]
    broker = RedisBroker(url=url, namespace=f"pickup-{secrets.token_hex(4)}", middleware=[])
    picked: dict[int, float] = {}
    ended: set[int] = set()
    finished = threading.Condition()

    def job(index: int, sent: float) -> None:
        picked[index] = time.monotonic() - sent
        time.sleep(job_ms / 1000)
        with finished:
            ended.add(index)
            finished.notify_all()

    actor = dramatiq.actor(job, broker=broker, actor_name="pickup_job", queue_name="pickup")
    worker = dramatiq.Worker(broker, worker_threads=THREADS, worker_timeout=worker_timeout_ms)
    worker.start()
    try:
        time.sleep(idle)
        numbers = iter(range(jobs))
        taking = threading.Lock()

        def client() -> None:
            while True:
                with taking:
                    index = next(numbers, None)
                if index is None:
                    return
                actor.send(index, time.monotonic())
                with finished:
                    finished.wait_for(lambda: index in ended)  # noqa: B023 -- waited for right here

        start = time.monotonic()
        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        end = time.monotonic()
    finally:
        worker.stop()
        broker.close()
        redis_broker.time = time  # type: ignore[assignment]
    first = [1000 * picked[index] for index in range(CLIENTS)]
    waits = sorted(1000 * wait for index, wait in picked.items() if index >= CLIENTS)
    # The queue's consumer during the batch only: its delay queue's consumer (always idle here) sleeps too.
    sleeps = [length for thread, begun, length in clock.sleeps
              if thread is worker.consumers["pickup"] and start < begun + length and begun < end]
    seconds = end - start
    return Lab(worker_timeout_ms=worker_timeout_ms, jobs=jobs, jobs_per_s=round(jobs / seconds, 1),
               first_pickup_max_ms=round(max(first), 1), pickup_p50_ms=round(waits[len(waits) // 2], 1),
               pickup_p99_ms=round(waits[int(0.99 * len(waits))], 1),
               pickup_max_ms=round(waits[-1], 1), long_pickups=sum(w > 1000 * LONG for w in waits),
               consumer_sleeps=len(sleeps), long_sleeps=sum(s >= LONG for s in sleeps),
               longest_sleep_ms=round(1000 * max(sleeps, default=0.0)))


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.pickup", description=__doc__.splitlines()[0])
    parser.add_argument("--timeouts", default="1000,100", help="worker_timeout values in ms, comma-separated")
    parser.add_argument("--jobs", type=int, default=800)
    parser.add_argument("--job-ms", type=float, default=10.0, help="how long each job sleeps")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds the worker idles before the batch")
    args = parser.parse_args()
    emb = embedded()
    with tempfile.TemporaryDirectory(prefix="pickup-") as folder:
        valkey = emb.start_valkey(Path(folder))
        try:
            for timeout in (int(t) for t in args.timeouts.split(",")):
                lab = run(valkey.url, timeout, args.jobs, args.job_ms, args.idle)
                print(f"worker_timeout {lab.worker_timeout_ms} ms: {lab.jobs} jobs of {args.job_ms:g} ms, "
                      f"{lab.jobs_per_s}/s; first {CLIENTS} pickups up to {lab.first_pickup_max_ms} ms; "
                      f"the rest p50 {lab.pickup_p50_ms} p99 {lab.pickup_p99_ms} "
                      f"max {lab.pickup_max_ms} ms, {lab.long_pickups} over {1000 * LONG:.0f} ms; consumer sleeps "
                      f"{lab.consumer_sleeps}, {lab.long_sleeps} of them >= {1000 * LONG:.0f} ms "
                      f"(longest {lab.longest_sleep_ms:.0f} ms)")
        finally:
            emb.stop_process(valkey.pid)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
