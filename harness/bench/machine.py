"""The machine a run measured: CPU, memory, kernel, the PostgreSQL server and its durability settings."""

from __future__ import annotations

import asyncio
import os
import platform
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import psutil

from harness.state import Services

from .results import Machine

# What decides a commit's cost: whether it waits for the disk, and how.
POSTGRES_SETTINGS = ("fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "shared_buffers",
                     "max_connections")


def _cpu() -> str:
    # psutil has no CPU model name: it is only in /proc/cpuinfo
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    try:
        return round(psutil.virtual_memory().total / (1 << 30), 1)
    except OSError:
        return 0.0


def filesystem(path: str | None) -> str:
    """'<type> on <device>' of the mount holding ``path`` (the longest matching mount point)."""
    if not path:
        return "external server"
    best = ("", "?", "?")
    try:
        mounts = psutil.disk_partitions(all=True)  # all: tmpfs and overlay hold data directories too
    except OSError:
        mounts = []
    for mount in mounts:
        point = mount.mountpoint
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[0]):
            best = (point, mount.device or "none", mount.fstype)  # psutil reports the device "none" as ""
    return f"{best[2]} on {best[1]}"


async def _postgres(url: str) -> tuple[str, dict[str, str]]:
    conn = await asyncpg.connect(url)
    try:
        version = await conn.fetchval("SHOW server_version")
        settings = {name: await conn.fetchval("SELECT current_setting($1)", name) for name in POSTGRES_SETTINGS}
    finally:
        await conn.close()
    return version, settings


def describe(services: Services, load_before: tuple[float, float, float]) -> Machine:
    version, settings = asyncio.run(_postgres(services.postgres.url))
    return Machine(
        cpu=_cpu(),
        cores=os.cpu_count() or 0,
        memory_gib=_memory_gib(),
        kernel=platform.release(),
        python=platform.python_version(),
        filesystem=filesystem(services.postgres.data_dir),
        postgres=version,
        postgres_settings=settings,
        load_before=load_before,
        services=services.mode,
    )


# --- other load ----------------------------------------------------------------------


def cpu_by_pid() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds used so far: user + system) for every process."""
    seen: dict[int, tuple[int, float]] = {}
    # process_iter skips a process that ends meanwhile; one it may not read has None
    for process in psutil.process_iter(["ppid", "cpu_times"]):
        parent, times = process.info["ppid"], process.info["cpu_times"]
        if parent is not None and times is not None:
            seen[process.pid] = (parent, times.user + times.system)
    return seen


def ours(root: int) -> set[int]:
    """``root`` and every process below it now (one re-parented to init is no longer below it)."""
    try:
        return {root, *(child.pid for child in psutil.Process(root).children(recursive=True))}
    except psutil.NoSuchProcess:
        return {root}


class OtherLoad:
    """CPU that processes outside this run used while a phase ran: the noise a shared machine adds.

    Everything the bench starts (sites, servers, workers, pgbench) descends from
    this process; anything else on the machine is "other".
    """

    def __init__(self) -> None:
        self.root = os.getpid()
        self.phases: dict[str, float] = {}  # phase -> other processes' share of all cores, 0..1

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began, before = time.monotonic(), cpu_by_pid()
        try:
            yield
        finally:
            # The tree before the CPU reading: a process of ours born between the two has used
            # next to nothing, one that ends between them is simply not in the reading.
            run = ours(self.root)
            after = cpu_by_pid()
            # A process that ended during the phase is missed: this errs towards too little.
            other = sum(cpu - (before[pid][1] if pid in before else 0.0)
                        for pid, (_, cpu) in after.items() if pid not in run)
            seconds = time.monotonic() - began
            self.phases[name] = round(max(other, 0.0) / (max(seconds, 1e-6) * (os.cpu_count() or 1)), 3)
