"""How fast this machine's cores ran during a batch: a fixed unit of work, timed in CPU time, sampled throughout.

The rounds of one run disagree: alpha's CPU ours/naive read 1.25, 1.54 and 1.19 in the three rounds of
one run. A probe tells whether a round was slow because the machine was: a unit of work that is always
the same, run every ``PERIOD_S`` in a process of its own, its CPU time read from the thread clock. A
batch's CPU per task over its probe's median unit is its cost at equal speed (rounds.at_equal_speed).
In the runs of docs/benchmarks.md ("Issue 33, fourth round") the unit moved by ±7 % while the
systems' CPU per task moved three to five times as much: the drift is mostly the systems' own under
contention, which a millisecond's probe barely feels.

Run as a script for the duration of a batch (``python -m harness.bench.speed``, the kit's interpreter):
it samples until its stdin closes, then prints one JSON line with the samples' median and count.
A unit takes under a millisecond, so the probe uses about 1 % of one core; its process is in no CPU
group, so no batch is charged for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import select
import statistics
import sys
import time

from .measure import BenchError

PERIOD_S = 0.1
# A unit mixes what the measured processes do: interpreted Python, a C hash and JSON.
BLOCK = bytes(range(256)) * 128  # 32 KiB
RECORD = {"id": "2f1c", "status": "succeeded", "sizes": list(range(40)), "name": "input.txt"}


def unit() -> None:
    total = 0
    for i in range(6_000):
        total += i * i % 7
    json.loads(json.dumps(RECORD))
    hashlib.sha256(BLOCK).digest()


def unit_ms() -> float:
    """One unit's CPU time in milliseconds, from this thread's own clock (waiting for a core is not counted)."""
    start = time.thread_time_ns()
    unit()
    return (time.thread_time_ns() - start) / 1e6


def sample_until_stdin_closes() -> dict[str, float]:
    samples = []
    while True:
        samples.append(unit_ms())
        readable, _, _ = select.select([sys.stdin], [], [], PERIOD_S)
        if readable and not sys.stdin.buffer.read1(1 << 12):
            break
    return {"unit_ms": round(statistics.median(samples), 4), "samples": len(samples)}


class Probe:
    """The probe process of one batch: ``async with Probe() as probe: … `` then ``probe.unit_ms``."""

    def __init__(self) -> None:
        self.unit_ms: float | None = None
        self.samples = 0
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Probe:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "harness.bench.speed", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": _kit_path()})
        return self

    async def __aexit__(self, kind, error, trace) -> None:
        process, self._process = self._process, None
        assert process is not None and process.stdin is not None
        process.stdin.close()
        try:
            out, _ = await asyncio.wait_for(process.communicate(), timeout=10)
        except TimeoutError:
            process.kill()
            await process.wait()
            if kind is None:
                raise BenchError("the speed probe did not stop within 10 s") from None
            return
        if kind is not None:
            return
        if process.returncode != 0:
            raise BenchError(f"the speed probe exited with {process.returncode}")
        found = json.loads(out)
        self.unit_ms, self.samples = found["unit_ms"], found["samples"]


def _kit_path() -> str:
    from harness import KIT_ROOT

    return os.pathsep.join(filter(None, [str(KIT_ROOT), os.environ.get("PYTHONPATH")]))


if __name__ == "__main__":
    print(json.dumps(sample_until_stdin_closes()), flush=True)
