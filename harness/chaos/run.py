"""The campaign from start to end: ``campaign`` on sites already up, ``chaos`` stands them up for it.

1. Each site gets at least two worker processes (the extra ones stop again at the end).
2. Four accounts per site register and upload their texts.
3. The load: the accounts submit steadily while the kill plan is carried out and
   maintenance runs as cron would (settle.py), for ``seconds``.
4. Every process of the sites runs again; stuck work is settled.
5. The evidence is gathered and checked; each site's own audit runs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from uuid import UUID

from harness import books, control, processes, progress, stand, state
from harness.report import now
from harness.state import ProcessCounts, SiteRecord

from . import checks, faults, gather, load, results, schedule, settle
from .results import ChaosReport, SiteChaos

log = logging.getLogger(__name__)

ACCOUNTS = 4  # per site: more accounts, not more tasks per account, keep each below its limits
MIN_WORKERS = 2  # a kill of one worker leaves another consuming


class Site:
    """One site of the campaign: its accounts, its maintenance, what is found there."""

    def __init__(self, state_dir: Path, record: SiteRecord, accounts: list[load.Account]) -> None:
        self.record = record
        self.accounts = accounts
        self.owners = [UUID(account.id) for account in accounts]
        self.maintainer = settle.Maintainer(state_dir, record)
        self.report = SiteChaos(slug=record.slug, accounts=len(accounts), in_flight=load.in_flight(record))


async def _load_phase(state_dir: Path, sites: list[Site], kills: list[schedule.Kill], seconds: float) -> None:
    began = time.monotonic()
    until = began + seconds
    stop_kills = threading.Event()
    stop_cron = asyncio.Event()
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=len(sites), thread_name_prefix="kills") as pool:
        killers = [loop.run_in_executor(pool, faults.carry_out, state_dir,
                                        [kill for kill in kills if kill.site == site.record.slug], began, stop_kills)
                   for site in sites]
        crons = [asyncio.create_task(settle.cron(site.record, site.maintainer, site.owners, stop_cron))
                 for site in sites]
        try:
            await asyncio.gather(*(load.run_account(account, site.report.in_flight, until, site.report.load,
                                                    site.report.findings)
                                   for site in sites for account in site.accounts))
        finally:
            stop_kills.set()
            stop_cron.set()
            for site, done in zip(sites, await asyncio.gather(*killers), strict=True):
                site.report.kills = done
            await asyncio.gather(*crons)


def revive(state_dir: Path, site: Site) -> None:
    """Every process of the site runs again (a restart that failed during the load is retried once)."""
    record = next(r for r in state.load(state_dir).sites if r.slug == site.record.slug)
    for role in stand.ROLES:
        for index, pid in enumerate(getattr(record.pids, role)):
            if not processes.runs(pid, record.venv_python):
                site.report.findings.append(f"{role}-{index} was not running after the load; started again")
                control.restart(state_dir, record.slug, role, index)


def tally(report: SiteChaos, rows: list[checks.TaskRow]) -> None:
    report.tasks = len(rows)
    for row in rows:
        if row.status == "succeeded":
            report.succeeded += 1
        elif row.status == "failed":
            report.failed[row.error_code or "?"] = report.failed.get(row.error_code or "?", 0) + 1
        elif row.status == "canceled":
            report.canceled += 1
        else:
            report.active += 1
        report.re_executions += max(0, row.attempt_count - 1)


async def _settle_and_check(state_dir: Path, site: Site) -> None:
    report = site.report
    settled = await settle.settle(site.record, site.maintainer, site.owners)
    report.settle_rounds, report.settle_seconds = settled.rounds, settled.seconds
    outcomes, rows = await gather.outcomes(site.record, site.accounts)
    tally(report, rows)
    sent = {request.request_key for account in site.accounts for request in account.submitted}
    report.findings += checks.findings(outcomes, rows, sent)
    if settled.unpublished_left:
        report.findings.append(f"{settled.unpublished_left} result file(s) reserved by ended attempts are still "
                               "uploading after maintenance")
    report.findings += site.maintainer.problems
    report.findings += [f"{kill.role}-{kill.index} killed at {kill.at} s: {kill.error}"
                        for kill in report.kills if kill.error]
    report.maintenance = site.maintainer.moved
    audit, error = await asyncio.to_thread(books.audit, state_dir, site.record)
    report.audit_clean = audit is not None and audit.clean
    if audit is not None:
        report.findings += [f"audit: {f.rule} {f.subject}: {f.detail}" for f in audit.findings]
    if error:
        report.findings.append(f"audit: {error}")


async def _campaign(state_dir: Path, records: list[SiteRecord], kills: list[schedule.Kill], seconds: float,
                    seed: int) -> list[SiteChaos]:
    sites: list[Site] = []
    try:
        for record in records:
            accounts = await asyncio.gather(*(load.open_account(record, i, seed) for i in range(ACCOUNTS)),
                                            return_exceptions=True)
            opened = [a for a in accounts if isinstance(a, load.Account)]
            sites.append(Site(state_dir, record, opened))
            if failed := [a for a in accounts if isinstance(a, BaseException)]:
                raise failed[0]
        with progress.step(f"chaos: {seconds:.0f} s of load on {', '.join(r.slug for r in records)}, "
                           f"{len(kills)} kills planned"):
            await _load_phase(state_dir, sites, kills, seconds)
            for site in sites:
                await asyncio.to_thread(revive, state_dir, site)
        with progress.step("chaos: settling and checking"):
            await asyncio.gather(*(_settle_and_check(state_dir, site) for site in sites))
    finally:
        for site in sites:
            for account in site.accounts:
                await account.http.aclose()
    return [site.report for site in sites]


def add_workers(state_dir: Path, slugs: list[str], scaled: dict[str, int]) -> None:
    """At least MIN_WORKERS workers on each site of ``slugs`` for a campaign. ``scaled`` records how many
    each had as it goes, so that a failure part way still sets back the ones scaled (``set_workers_back``)."""
    for record in state.load(state_dir).sites:
        if record.slug in slugs:
            scaled[record.slug] = control.scale(state_dir, record.slug, "worker",
                                                max(MIN_WORKERS, len(record.pids.worker)))


def set_workers_back(state_dir: Path, scaled: dict[str, int]) -> str | None:
    """Each site of ``scaled`` back to the workers it had; the first failure, if any (every site is tried)."""
    failure = None
    for slug, before in scaled.items():
        try:
            control.scale(state_dir, slug, "worker", before)
        except Exception as error:
            failure = failure or f"scaling {slug}'s workers back failed: {error}"
    return failure


def campaign(state_dir: Path, slugs: list[str], seconds: float, seed: int) -> ChaosReport:
    """A campaign against sites of a live run; any error is the report's failure, never raised."""
    state_dir = Path(state_dir).resolve()
    report = ChaosReport(ok=False, seed=seed, seconds=seconds, started_at=now(), finished_at="", sites=[], plan=[])
    scaled: dict[str, int] = {}
    try:
        add_workers(state_dir, slugs, scaled)
        records = [record for record in state.load(state_dir).sites if record.slug in slugs]
        counts = ProcessCounts(web=min(len(r.pids.web) for r in records),
                               worker=min(len(r.pids.worker) for r in records))
        report.plan = schedule.plan(seed, seconds, [r.slug for r in records], counts)
        report.sites = asyncio.run(_campaign(state_dir, records, report.plan, seconds, seed))
    except Exception as error:
        log.exception("chaos: the campaign failed")
        report.failure = f"{type(error).__name__}: {error}"
    finally:
        report.failure = report.failure or set_workers_back(state_dir, scaled)
    report.finished_at = now()
    report.ok = report.failure is None and bool(report.sites) and all(site.ok for site in report.sites)
    return report


def chaos(state_dir: Path, sites: int, seconds: float, seed: int, *, keep: bool,
          counts: ProcessCounts, services: bool = False,
          faults: tuple[str, ...] | None = None) -> tuple[bool, str]:
    """Stand ``sites`` sites up (or use the live run in ``state_dir``), run a campaign (``services``: of
    service faults, outage_run.py; ``faults``: only those kinds), take them down again unless ``keep``
    (a run that was already up stays up). Writes chaos.json; returns (ok, summary)."""
    state_dir = Path(state_dir).resolve()
    live = state.sites_path(state_dir).exists()
    report: ChaosReport | None = None
    problems: list[str] = []
    try:
        if not live:
            stand.up(state_dir, sites, counts=counts)
        slugs = [record.slug for record in state.load(state_dir).sites[:sites]]
        if services:
            from .outage_run import campaign as service_campaign  # it imports this module

            report = service_campaign(state_dir, slugs, seconds, seed, *([faults] if faults else []))
        else:
            report = campaign(state_dir, slugs, seconds, seed)
    except Exception as error:
        log.exception("chaos: standing the sites up failed")
        report = ChaosReport(ok=False, seed=seed, seconds=seconds, started_at=now(), finished_at=now(), sites=[],
                             plan=[], failure=f"{type(error).__name__}: {error}")
    finally:
        if not live and not keep and state.sites_path(state_dir).exists():
            problems = stand.down(state_dir)
    if problems:
        report.ok = False
        report.failure = (report.failure + "; " if report.failure else "") + "not removed: " + "; ".join(problems)
    return report.ok, results.write(state_dir, report)
