"""The arithmetic of a benchmark: percentiles, rates, ratios and the commit ceiling.

Pure functions on numbers the drivers collected; nothing here measures time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec


class BenchError(RuntimeError):
    """A benchmark phase could not produce a trustworthy number; the message says which and why."""


class Latency(msgspec.Struct, frozen=True):
    """Milliseconds, over ``count`` samples."""

    count: int
    p50: float
    p95: float
    p99: float
    mean: float
    max: float


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks (numpy's default)."""
    if not samples:
        raise BenchError("a percentile of no samples")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency(seconds: Sequence[float]) -> Latency:
    """Summarise latencies given in seconds, reported in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return Latency(
        count=len(ms),
        p50=round(percentile(ms, 50), 2),
        p95=round(percentile(ms, 95), 2),
        p99=round(percentile(ms, 99), 2),
        mean=round(sum(ms) / len(ms), 2),
        max=round(max(ms), 2),
    )


def rate(count: int, seconds: float) -> float:
    """Events per second; refuses a window that is not positive (a clock or driver bug)."""
    if seconds <= 0:
        raise BenchError(f"{count} events in a window of {seconds} s")
    return round(count / seconds, 2)


def ratio(ours: float, reference: float) -> float | None:
    """ours / reference, or None when the reference is missing or zero."""
    if not reference:
        return None
    return round(ours / reference, 3)


def per_task(delta: int, noise: float, tasks: int) -> float:
    """Commits per task from a counter delta, less the commits that were not the tasks' own."""
    if tasks <= 0:
        raise BenchError("commits per task of no tasks")
    return round(max(delta - noise, 0) / tasks, 2)


def ceiling(commits_per_second: float, commits_per_task: float) -> float | None:
    """The task rate the database's commit rate alone would allow (None without a commit count)."""
    if commits_per_task <= 0:
        return None
    return round(commits_per_second / commits_per_task, 1)


def mib_per_second(size: int, seconds: float) -> float:
    if seconds <= 0:
        raise BenchError(f"{size} bytes in {seconds} s")
    return round(size / seconds / (1 << 20), 1)
