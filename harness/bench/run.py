"""``python -m harness bench``: stand sites up with the harness, measure every phase, take them down.

Phases, one after another so each has the machine to itself: per site —
end to end with 1 then 2 worker processes (commits counted during the
first), API submit with the workers stopped, list latency at 100 000 tasks;
then the bare-actor baseline, the naive site, pgbench, and normalisation throughput.

Right after a site's end-to-end batches: its round trips per task from the
statement log (statements.py) and, for the first site, the scaling rows
(scaling.py).
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

from harness import control, stand, state
from harness.render import provenance
from harness.state import SiteRecord, SitesFile

from . import cpu, tables
from .accounts import open_account
from .api import api_submit
from .baseline import baseline
from .ceiling import pgbench
from .endtoend import end_to_end
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


async def site_phases(state_dir: Path, sites: SitesFile, site: SiteRecord, config: BenchConfig,
                      report: BenchReport, other: OtherLoad) -> None:
    accounts = list(await asyncio.gather(*(open_account(site, i) for i in range(config.concurrency))))
    try:
        running = sites.processes.worker
        for index, workers in enumerate(config.workers):
            if workers != running:
                await asyncio.to_thread(set_workers, state_dir, site.slug, workers)
                running = workers
            log.info("%s: end to end with %d worker process(es)", site.slug, workers)
            # Commits are counted once, with the first worker count: the count per task does not
            # depend on how many processes share the work.
            current = next(r for r in state.load(state_dir).sites if r.slug == site.slug)  # the new worker pids
            with other.phase(f"{site.slug} end to end, {workers} worker(s)"):
                measured, counted = await end_to_end(site, accounts, tasks=config.tasks, workers=workers,
                                                     groups=cpu.site_groups(sites, current),
                                                     server_url=sites.services.postgres.url if index == 0 else None)
            report.end_to_end.append(measured)
            if counted:
                report.commits.append(counted)
        if config.statement_tasks:
            log.info("%s: round trips from the statement log", site.slug)
            report.round_trips.append(await round_trips(sites.services.postgres, current, accounts,
                                                        tasks=config.statement_tasks))
        if config.scaling_tasks and config.scaling and site.slug == sites.sites[0].slug:
            log.info("%s: scaling web and worker processes", site.slug)
            report.scaling += await scale_out(state_dir, site, accounts, counts=config.scaling,
                                              tasks=config.scaling_tasks, other=other)
        await asyncio.to_thread(set_workers, state_dir, site.slug, 0)
        log.info("%s: API submit", site.slug)
        with other.phase(f"{site.slug} API submit"):
            report.api.append(await api_submit(site, requests=config.tasks, clients=config.concurrency,
                                               first_index=config.concurrency))
        log.info("%s: list latency at %d tasks", site.slug, config.list_tasks)
        with other.phase(f"{site.slug} list"):
            report.listing.append(await listing(site, accounts[0], total=config.list_tasks,
                                                samples=config.list_samples))
    finally:
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
        for site in sites.sites:
            asyncio.run(site_phases(state_dir, sites, site, config, report, other))
        log.info("baseline: the bare actor")
        with other.phase("bare actor"):
            report.baseline = baseline(sites, sites.sites[0], tasks=config.tasks, concurrency=config.concurrency,
                                       workers=config.workers, logs=state_dir / "bench")
        log.info("baseline: the naive site")
        with other.phase("naive site"):
            report.naive = naive(sites, sites.sites[0], tasks=config.tasks, concurrency=config.concurrency,
                                 workers=config.workers, logs=state_dir / "bench")
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
