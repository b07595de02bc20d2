"""``python -m harness bench``: stand sites up with the harness, measure every phase, take them down.

Phases, one after another so each has the machine to itself. First the
interleaved rounds (rounds.py): in each, every site end to end with 1 then 2
worker processes, then the naive site (flat out, then held to the first
site's rate of the round), then the bare actor, each batch at
least ``batch_seconds`` long (commits counted in the first site batch of
round 1). Then per site: its round trips per task from the statement log
(statements.py) and the WAL records a task (wal.py), for the first site the scaling rows (scaling.py), API
submit with the workers stopped, list latency at 100 000 tasks; then
pgbench and normalisation throughput.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from harness import control, stand, state
from harness.render import provenance
from harness.state import SiteRecord, SitesFile

from . import cpu, floor, rounds, tables, vacuum, wal
from .accounts import Account, open_account
from .api import api_submit, open_api_accounts
from .baseline import baseline
from .ceiling import pgbench
from .endtoend import end_to_end
from .history import history, open_history_accounts
from .listing import listing
from .machine import OtherLoad, describe
from .measure import BenchError, mib_per_second
from .naive import naive
from .plot import plot
from .results import MAX_ACTIVE, BenchConfig, BenchReport, Normalize, write_json
from .scaling import scale_out
from .statements import round_trips

log = logging.getLogger(__name__)

NORMALIZE_SCRIPT = Path(__file__).with_name("normalize_speed.py")


def set_workers(state_dir: Path, slug: str, count: int) -> None:
    """Stop the site's worker processes and start ``count`` new ones (0: leave them stopped)."""
    with control.locked(state_dir) as sites:
        record = next(site for site in sites.sites if site.slug == slug)
        stand.stop_roles(record, ("worker",))
        if count:
            stand.start_roles(state_dir, record, ("worker",),
                              counts=state.ProcessCounts(web=sites.processes.web, worker=count))


async def site_round(state_dir: Path, sites: SitesFile, site: SiteRecord, accounts: list[Account],
                     config: BenchConfig, report: BenchReport, other: OtherLoad, number: int) -> None:
    """One round's end-to-end batches of ``site``, one per worker count; commits counted in the first round,
    with the first worker count (the count per task does not depend on how many processes share the work)."""
    for account in accounts:  # idle through the other batches of the round: connect anew
        await account.reconnect()
    for index, workers in enumerate(config.workers):
        await asyncio.to_thread(set_workers, state_dir, site.slug, workers)
        log.info("%s: round %d, end to end with %d worker process(es)", site.slug, number, workers)
        current = next(r for r in state.load(state_dir).sites if r.slug == site.slug)  # the new worker pids
        counting = index == 0 and number == 1
        with other.phase(f"{site.slug} end to end, {workers} worker(s), round {number}"):
            measured, counted = await end_to_end(site, accounts, tasks=config.tasks, workers=workers,
                                                 groups=cpu.site_groups(sites, current),
                                                 server_url=sites.services.postgres.url if counting else None,
                                                 seconds=config.batch_seconds, round_number=number,
                                                 vacuum=vacuum.for_batch(sites.services, site.database_url))
        report.end_to_end.append(measured)
        if counted:
            report.commits.append(counted)


def round_paces(report: BenchReport, slug: str, number: int) -> dict[int, float]:
    """The site's tasks/s at each worker count in round ``number``: the naive site's paced batches go at
    these, so that the two are compared doing the same work at the same rate."""
    return {run.workers: run.tasks_per_s for run in report.end_to_end
            if run.site == slug and run.round == number and run.tasks_per_s > 0}


def live_pace(report: BenchReport, slug: str, config: BenchConfig) -> floor.Pace | None:
    """The pace of the site's batches with its first worker count: as many clients, the median rate."""
    rates = rounds.rate_spreads(run for run in report.end_to_end if run.site == slug).get(config.workers[0])
    return floor.Pace(clients=config.concurrency, rate=round(rates.median)) if rates and rates.median >= 1 else None


async def site_phases(state_dir: Path, sites: SitesFile, site: SiteRecord, accounts: list[Account],
                      config: BenchConfig, report: BenchReport, other: OtherLoad) -> None:
    """What each site is measured on once, after the rounds: round trips, scaling, API submit, list."""
    await asyncio.to_thread(set_workers, state_dir, site.slug, config.workers[0])
    current = next(r for r in state.load(state_dir).sites if r.slug == site.slug)
    for account in accounts:
        await account.reconnect()
    if config.statement_tasks:
        log.info("%s: round trips from the statement log", site.slug)
        report.round_trips.append(await round_trips(sites.services.postgres, current, accounts,
                                                    tasks=config.statement_tasks))
    if config.wal_tasks:
        log.info("%s: WAL records a task", site.slug)
        report.wal.append(await wal.for_site(sites.services.postgres.url, current, accounts, tasks=config.wal_tasks))
    if config.scaling_tasks and config.scaling and site.slug == sites.sites[0].slug:
        log.info("%s: scaling web and worker processes", site.slug)
        report.scaling += await scale_out(state_dir, site, accounts, counts=config.scaling,
                                          tasks=config.scaling_tasks, other=other)
    # The phases below run with the workers stopped; their accounts are made first (where a site asks
    # for proven addresses, its worker mails the links).
    api_accounts, limit_account = await open_api_accounts(site, requests=config.tasks, clients=config.concurrency,
                                                          first_index=config.concurrency)
    measures_history = bool(config.history_tasks) and site.slug == sites.sites[0].slug
    history_accounts: list[list[Account]] = []
    try:
        if measures_history:
            history_accounts = await open_history_accounts(site, config.history_samples, 10 * config.concurrency)
        await asyncio.to_thread(set_workers, state_dir, site.slug, 0)
        log.info("%s: API submit", site.slug)
        with other.phase(f"{site.slug} API submit"):
            report.api.append(await api_submit(site, api_accounts, limit_account, requests=config.tasks,
                                               clients=config.concurrency))
        if measures_history:
            log.info("%s: cost as history grows, %d tasks", site.slug, config.history_tasks)
            with other.phase(f"{site.slug} history"):
                report.history = await history(state_dir, site, tasks=config.history_tasks,
                                               samples=config.history_samples, accounts=history_accounts)
    finally:
        # The phases close their own accounts; these are the ones a phase that never ran left open
        # (closing a closed client does nothing).
        for account in [*api_accounts, limit_account, *(a for group in history_accounts for a in group)]:
            await account.close()
    log.info("%s: list latency at %d tasks", site.slug, config.list_tasks)
    with other.phase(f"{site.slug} list"):
        report.listing.append(await listing(site, accounts[0], total=config.list_tasks,
                                            samples=config.list_samples))
    postgres = sites.services.postgres
    if config.floor_seconds and site.slug == sites.sites[0].slug and postgres.pid:
        log.info("%s: the PostgreSQL floor, pgbench", site.slug)
        with other.phase(f"{site.slug} PostgreSQL floor"):
            report.floor = await floor.for_site(site, postgres.url, postgres.pid, rounds=config.rounds,
                                                seconds=config.floor_seconds, scripts_dir=state_dir / "bench" / "floor",
                                                pace=live_pace(report, site.slug, config))


async def interleaved(state_dir: Path, sites: SitesFile, config: BenchConfig, report: BenchReport,
                      other: OtherLoad) -> None:
    """The rounds (rounds.schedule: each site, the naive site, the bare actor in turn), then each site's
    other phases. The references run their own event loops, so in threads of their own."""
    opened = {site.slug: list(await asyncio.gather(*(open_account(site, i) for i in range(config.concurrency))))
              for site in sites.sites}
    by_slug = {site.slug: site for site in sites.sites}
    references = {"workers": config.workers, "tasks": config.tasks, "concurrency": config.concurrency,
                  "logs": state_dir / "bench", "seconds": config.batch_seconds}
    try:
        for number, what in rounds.schedule(config.rounds, list(by_slug)):
            if what == rounds.NAIVE:
                log.info("round %d: the naive site", number)
                with other.phase(f"naive site, round {number}"):
                    report.naive += await asyncio.to_thread(naive, sites, sites.sites[0], round_number=number,
                                                            **references)
                # A task's CPU moves with the rate it runs at, so each site is also set beside the naive
                # site held to that site's own rate of the round.
                for site in sites.sites:
                    paces = round_paces(report, site.slug, number)
                    if not paces:
                        continue
                    log.info("round %d: the naive site at %s's pace", number, site.slug)
                    with other.phase(f"naive site at {site.slug}'s pace, round {number}"):
                        held = await asyncio.to_thread(naive, sites, sites.sites[0], round_number=number,
                                                       paces=paces, **references)
                    report.naive_paced += [msgspec.structs.replace(run, paced_to=site.slug) for run in held]
            elif what == rounds.BARE:
                log.info("round %d: the bare actor", number)
                with other.phase(f"bare actor, round {number}"):
                    report.baseline += await asyncio.to_thread(baseline, sites, sites.sites[0],
                                                               round_number=number, **references)
            else:
                await site_round(state_dir, sites, by_slug[what], opened[what], config, report, other, number)
        for site in sites.sites:
            await site_phases(state_dir, sites, site, opened[site.slug], config, report, other)
    finally:
        for accounts in opened.values():
            for account in accounts:
                await account.close()


def normalize_speed(site: SiteRecord, size: int) -> Normalize:
    """Run in the site's own interpreter, on the site's own processor."""
    result = subprocess.run(
        [site.venv_python, str(NORMALIZE_SCRIPT), "--module", f"{site.slug}.processors.text_normalize",
         "--size", str(size)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if result.returncode != 0:
        raise BenchError(f"normalisation benchmark failed: {result.stderr.strip()[-300:]}")
    speed = json.loads(result.stdout)
    return Normalize(size=speed["size"], normalize_mib_s=mib_per_second(size, speed["normalize_s"]),
                     normalize_trim_mib_s=mib_per_second(size, speed["normalize_trim_s"]),
                     copy_mib_s=mib_per_second(size, speed["copy_s"]))


def run(config: BenchConfig, state_dir: Path) -> BenchReport:
    """Every phase against sites stood up in ``state_dir``; they are taken down again whatever happens."""
    state_dir = Path(state_dir).resolve()
    load = os.getloadavg()
    other = OtherLoad()
    began = time.monotonic()
    origin = provenance()
    report = BenchReport(config=config, started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                         template_commit=origin.commit, template_dirty=origin.dirty)
    try:
        log.info("standing up %d site(s)", config.sites)
        sites = stand.up(state_dir, config.sites, overrides={"max_active": MAX_ACTIVE},
                         counts=state.ProcessCounts(web=1, worker=config.workers[0]))
        report.machine = describe(sites.services, load)
        asyncio.run(interleaved(state_dir, sites, config, report, other))
        log.info("ceiling: pgbench")
        with other.phase("pgbench"):
            report.pgbench = pgbench(sites.services.postgres.url, sites.run_id,
                                     clients=tuple(sorted({1, config.concurrency})), seconds=config.pgbench_seconds)
        log.info("normalisation throughput")
        with other.phase("normalisation"):
            report.normalize = normalize_speed(sites.sites[0], config.input_bytes)
    finally:
        report.other_load = other.phases
        if state.sites_path(state_dir).exists():
            for problem in stand.down(state_dir):
                log.warning("not removed: %s", problem)
    report.wall_seconds = round(time.monotonic() - began, 1)
    return report


def write_outputs(report: BenchReport, state_dir: Path, json_out: Path | None, plot_out: Path | None) -> list[Path]:
    """The JSON, the Markdown tables and the plot; returns the paths written."""
    state_dir = Path(state_dir)
    written = [state_dir / "bench.json", state_dir / "benchmarks.md", plot_out or state_dir / "benchmarks.png"]
    write_json(report, written[0])
    written[1].write_text(tables.markdown(report))
    plot(report, written[2])
    if json_out:
        write_json(report, json_out)
        written.append(json_out)
    return written
