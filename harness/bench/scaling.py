"""The scaling phase: the first site end to end as web and worker processes are added.

One batch at each (web, worker) process count of ``BenchConfig.scaling``, the
same closed loop and accounts as the end-to-end phase. Processes are added or
stopped in place (``control.scale``), and the counts the site ran with before
are restored afterwards. Web processes share the site's port (``serve
--reuse-port``) and the kernel hands each new connection to one of them, so
every client reconnects before a batch: a kept-alive connection stays with the
process it first reached, and a second web process would get no work. With
only ``concurrency`` connections the kernel's spread is coarse (8 over 2
processes may split 5/3).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness import control, state
from harness.state import SiteRecord

from . import cpu, vacuum
from .accounts import Account
from .endtoend import end_to_end
from .machine import OtherLoad
from .results import Scaled


def record(state_dir: Path, slug: str) -> tuple[state.SitesFile, SiteRecord]:
    """The run as sites.json has it now (the pids of the processes just started)."""
    sites = state.load(state_dir)
    return sites, next(site for site in sites.sites if site.slug == slug)


async def run_with(state_dir: Path, slug: str, web: int, workers: int) -> None:
    # Workers first: going from (1, 4) to (2, 2) never runs six processes at once.
    await asyncio.to_thread(control.scale, state_dir, slug, "worker", workers)
    await asyncio.to_thread(control.scale, state_dir, slug, "web", web)


async def scale_out(state_dir: Path, site: SiteRecord, accounts: list[Account], *,
                    counts: tuple[tuple[int, int], ...], tasks: int, other: OtherLoad) -> list[Scaled]:
    """A batch of ``tasks`` at each (web, worker) count in ``counts``."""
    _, before = record(state_dir, site.slug)
    rows: list[Scaled] = []
    try:
        for web, workers in counts:
            await run_with(state_dir, site.slug, web, workers)
            for account in accounts:
                await account.reconnect()
            sites, current = record(state_dir, site.slug)
            with other.phase(f"{site.slug} scaling, {web} web / {workers} worker(s)"):
                measured, _ = await end_to_end(site, accounts, tasks=tasks, workers=workers,
                                               groups=cpu.site_groups(sites, current),
                                               vacuum=vacuum.for_batch(sites.services, site.database_url))
            rows.append(Scaled(web=web, run=measured))
    finally:
        await run_with(state_dir, site.slug, len(before.pids.web), len(before.pids.worker))
        for account in accounts:  # off any web process the restore stopped
            await account.reconnect()
    return rows
