"""The machine a run measured: CPU, memory, kernel, the PostgreSQL server and its durability settings."""

from __future__ import annotations

import asyncio
import os
import platform
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
