"""A site and the naive site in alternating slices: a CPU ratio the machine's slow drift does not move.

The bench's rounds run each side's batch in turn, 15 s or more apiece, and this machine's speed moves
from one batch to the next (the speed probe's unit read 0.36-0.58 ms within one run: docs/benchmarks.md,
seventeenth round), so a ratio of two batches holds the drift between them. Here both sides are up at
once, the site with its web and workers and the naive site with its own, and they take turns: a slice of
one, then a slice of the other, the order swapped each pair (ABBA), each slice a closed loop of its own
with its CPU read around it (its own vacuum counted, vacuum.py). A drift slower than a pair falls on both
sides of it; the idle side's processes wait on their sockets meanwhile. What is left is each slice's own
noise, which the pairs' standard error states (docs/benchmarks.md, eighteenth round: 0.05 of the ratio
for 8 pairs of 6 s on this machine).

    python -m harness bench-paired --state DIR --site SLUG [--workers 1 2] [--pairs 8] [--seconds 6] [--rate R]

runs on the sites a `harness up` stood up (their state folder), and prints each side's CPU a task by
process, the ratio of the totals, and each pair's ratio (median and range). Each side runs as fast as it
goes, or with ``--rate`` both are held to the same rate: every process's CPU a task falls as its rate
rises, so two sides at their own top speeds compare a little more than the work (docs/benchmarks.md,
nineteenth round). The site is left running at the last worker count measured.
"""

from __future__ import annotations

import asyncio
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

import asyncpg
import msgspec

from harness import state
from harness.state import SiteRecord, SitesFile

from . import cpu, naive, vacuum
from .accounts import Account, open_account
from .bare_worker import Config
from .endtoend import check_results, submitter
from .loop import TASKS_FINISHED, Completions, StartJob, closed_loop
from .measure import BenchError, ratio
from .reference import running, scratch
from .rounds import NAIVE, Spread, spread
from .run import set_workers
from .tables import table


class Slice(msgspec.Struct, frozen=True):
    side: str  # the site's slug, or NAIVE
    pair: int
    tasks: int
    seconds: float
    cpu_ms: dict[str, float]  # milliseconds of CPU each process group used in the slice, its vacuum included


class Paired(msgspec.Struct, frozen=True):
    site: str
    workers: int
    slice_seconds: float
    slices: list[Slice]
    rate: float | None = None  # tasks/s both sides were held to; None: each as fast as it goes

    def per_task(self, side: str) -> dict[str, float]:
        """The side's CPU a task by group over all its slices, and the sum as ``total``."""
        mine = [s for s in self.slices if s.side == side]
        tasks = sum(s.tasks for s in mine)
        if not tasks:
            raise BenchError(f"{side} ran no task")
        groups = {name: round(sum(s.cpu_ms.get(name, 0.0) for s in mine) / tasks, 2)
                  for name in cpu.GROUPS if any(name in s.cpu_ms for s in mine)}
        return {**groups, "total": round(sum(groups.values()), 2)}

    def tasks_per_second(self, side: str) -> float:
        """The side's rate over its slices: what a held side reached (below the rate it was held to, it could not
        keep up)."""
        mine = [s for s in self.slices if s.side == side]
        seconds = sum(s.seconds for s in mine)
        return round(sum(s.tasks for s in mine) / seconds, 1) if seconds else 0.0

    def ratio(self) -> float | None:
        """The site's CPU a task over the naive site's, all slices pooled."""
        return ratio(self.per_task(self.site)["total"], self.per_task(NAIVE)["total"])

    def pair_ratios(self) -> list[float]:
        """Each pair's ratio of CPU a task: what the drift left within a pair shows as their spread."""
        out = []
        for number in sorted({s.pair for s in self.slices}):
            both = {s.side: s for s in self.slices if s.pair == number}
            if {self.site, NAIVE} <= both.keys():
                ours, theirs = both[self.site], both[NAIVE]
                found = ratio(sum(ours.cpu_ms.values()) / ours.tasks, sum(theirs.cpu_ms.values()) / theirs.tasks)
                if found is not None:
                    out.append(found)
        return out

    def pair_spread(self) -> Spread | None:
        return spread(self.pair_ratios())

    def pair_error(self) -> float | None:
        """The standard error of the pairs' mean ratio: how far the pooled figure may be from what more pairs
        would give, each slice's own noise being what is left once a pair shares the machine's drift."""
        found = self.pair_ratios()
        return round(statistics.stdev(found) / math.sqrt(len(found)), 3) if len(found) > 1 else None


def order(pair: int, site: str) -> tuple[str, str]:
    """ABBA: the site first in even pairs, the naive site first in odd ones, so neither always follows the
    other (a slice right after the other side's may inherit its vacuum or its warm caches)."""
    return (site, NAIVE) if pair % 2 == 0 else (NAIVE, site)


class Side(msgspec.Struct, frozen=True):
    start: StartJob
    conn: asyncpg.Connection
    groups: cpu.Groups
    vacuum: vacuum.Vacuum | None


async def _slice(name: str, side: Side, pair: int, seconds: float, concurrency: int,
                 rate: float | None) -> tuple[Slice, list[UUID]]:
    before = cpu.reading(side.groups)
    batch = await closed_loop(side.start, Completions(side.conn, TASKS_FINISHED), concurrency, concurrency, seconds,
                              pace=rate)
    if side.vacuum:
        await side.vacuum.own()
    after = cpu.reading(side.groups)
    used = {group: round(1000 * (after[group] - before[group]), 1) for group in cpu.GROUPS if group in after}
    return Slice(side=name, pair=pair, tasks=len(batch.jobs), seconds=batch.seconds, cpu_ms=used), batch.jobs


def measure(state_dir: Path, slug: str, *, workers: int, pairs: int, seconds: float, concurrency: int,
            logs: Path, rate: float | None = None) -> Paired:
    """``pairs`` pairs of slices of ``seconds`` each, the site at ``workers`` worker processes and the naive
    site at as many, ``concurrency`` tasks in flight on each (given ``rate``, both held to it, tasks/s);
    every result checked afterwards."""
    if slug not in {s.slug for s in state.load(state_dir).sites}:
        raise BenchError(f"no site {slug!r} in {state_dir}")
    set_workers(state_dir, slug, workers)
    sites = state.load(state_dir)  # the new worker pids
    site = next(s for s in sites.sites if s.slug == slug)
    via = sites.sites[0]  # the bench's naive site runs in the first site's interpreter, through its storage proxy
    with scratch(sites, via, "paired") as config:
        return asyncio.run(_measure(sites, site, via, config, workers=workers, pairs=pairs, seconds=seconds,
                                    concurrency=concurrency, logs=logs, rate=rate))


async def _measure(sites: SitesFile, site: SiteRecord, via: SiteRecord, config: Config, *, workers: int,
                   pairs: int, seconds: float, concurrency: int, logs: Path, rate: float | None) -> Paired:
    accounts = list(await asyncio.gather(*(open_account(site, i) for i in range(concurrency))))
    try:
        async with naive.stood(config, via.venv_python, concurrency, logs) as theirs:
            commands = [msgspec.structs.replace(theirs.worker, name=f"{theirs.worker.name}-{index}")
                        for index in range(workers)]
            async with running(commands, theirs.environ, logs) as worker_pids:
                conn = await asyncpg.connect(site.database_url)
                try:
                    sides = {
                        site.slug: Side(submitter(site, accounts), conn, cpu.site_groups(sites, site),
                                        vacuum.for_batch(sites.services, site.database_url)),
                        NAIVE: Side(theirs.jobs.start, theirs.jobs.conn,
                                    {**cpu.service_groups(sites, via), "web": set(theirs.web_pids),
                                     "worker": set(worker_pids)},
                                    vacuum.for_batch(sites.services, config.database_url)),
                    }
                    return await _alternate(site, sides, accounts, theirs.jobs.check, workers=workers,
                                            pairs=pairs, seconds=seconds, concurrency=concurrency, rate=rate)
                finally:
                    await conn.close()
    finally:
        for account in accounts:
            await account.close()


async def _alternate(site: SiteRecord, sides: dict[str, Side], accounts: list[Account],
                     check_naive, *, workers: int, pairs: int, seconds: float, concurrency: int,
                     rate: float | None) -> Paired:
    # One job per client first on each side: connections, prepared statements and imports warm.
    for side in sides.values():
        await closed_loop(side.start, Completions(side.conn, TASKS_FINISHED), concurrency, concurrency)
    any_vacuum = next((side.vacuum for side in sides.values() if side.vacuum), None)
    if any_vacuum:
        await any_vacuum.clean_slate()
    slices: list[Slice] = []
    jobs: dict[str, list[UUID]] = {name: [] for name in sides}
    for pair in range(pairs):
        for name in order(pair, site.slug):
            taken, ran = await _slice(name, sides[name], pair, seconds, concurrency, rate)
            slices.append(taken)
            jobs[name] += ran
    await check_results(sides[site.slug].conn, jobs[site.slug], accounts)
    await check_naive(jobs[NAIVE])
    return Paired(site=site.slug, workers=workers, slice_seconds=seconds, slices=slices, rate=rate)


def text(results: Sequence[Paired]) -> str:
    """Each measurement's CPU a task by process for both sides, the pooled ratio and the pairs' spread."""
    out = []
    for result in results:
        ours, theirs = result.per_task(result.site), result.per_task(NAIVE)
        names = [name for name in (*cpu.GROUPS, "total") if name in ours or name in theirs]
        rows = [[side, *(f"{figures.get(name, 0.0):.2f}" for name in names)]
                for side, figures in ((result.site, ours), (NAIVE, theirs))]
        pairs, pooled, error = result.pair_spread(), result.ratio(), result.pair_error()
        held = f", both held to {result.rate:g} tasks/s" if result.rate else ""
        out.append(f"{result.site}, {result.workers} worker(s), {len(result.pair_ratios())} pairs of "
                   f"{result.slice_seconds:g}-s slices{held}: CPU ms a task\n")
        out.append(table(["side", *names], rows))
        out.append(f"tasks/s: {result.site} {result.tasks_per_second(result.site):g}, "
                   f"naive {result.tasks_per_second(NAIVE):g}\n")
        out.append(f"ours / naive, pooled: {pooled:.2f}; by pair: median {pairs.median:.2f} "
                   f"({pairs.low:.2f}-{pairs.high:.2f})" if pairs and pooled else "")
        out.append(f", standard error of their mean {error:.3f}\n\n" if error is not None else "\n\n")
    return "".join(out)
