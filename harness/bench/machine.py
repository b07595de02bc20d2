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

from harness.state import Services

from .results import Machine

# What decides a commit's cost: whether it waits for the disk, and how.
POSTGRES_SETTINGS = ("fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "shared_buffers",
                     "max_connections")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / (1 << 20), 1)
    except OSError:
        pass
    return 0.0


def filesystem(path: str | None) -> str:
    """'<type> on <device>' of the mount holding ``path`` (the longest matching mount point)."""
    if not path:
        return "external server"
    best = ("", "?", "?")
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            device, point, kind = line.split()[:3]
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[0]):
                best = (point, device, kind)
    except OSError:
        pass
    return f"{best[2]} on {best[1]}"


async def _postgres(url: str) -> tuple[str, dict[str, str]]:
    conn = await asyncpg.connect(url)
    try:
        version = await conn.fetchval("SHOW server_version")
        settings = {name: await conn.fetchval(f"SHOW {name}") for name in POSTGRES_SETTINGS}
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
    """pid -> (parent pid, CPU seconds used so far) for every process."""
    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        seen[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return seen


def _ours(pid: int, table: dict[int, tuple[int, float]], root: int) -> bool:
    for _ in range(64):  # the process tree is shallow; a loop would be a /proc race
        if pid == root:
            return True
        if pid not in table or pid <= 1:
            return False
        pid = table[pid][0]
    return False


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
            after = cpu_by_pid()
            # A process that ended during the phase is missed: this errs towards too little.
            other = sum(cpu - (before[pid][1] if pid in before else 0.0)
                        for pid, (_, cpu) in after.items() if not _ours(pid, after, self.root))
            seconds = time.monotonic() - began
            self.phases[name] = round(max(other, 0.0) / (max(seconds, 1e-6) * (os.cpu_count() or 1)), 3)
