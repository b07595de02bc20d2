"""``chaos --services``: the service-fault campaign on sites already up (their services embedded).

1. Each site gets at least two workers; four accounts per site register and upload.
2. Each site's maintenance runs as docs/operations.md tells operators: one ``maintain --loop 30``.
   A real Prometheus scrapes every site and evaluates its alerting rules (prometheus.py).
3. The load runs while the planned service faults happen one after another (outages.py); after
   each, the campaign waits until every task accepted before the server came back has ended (or
   a deadline), then a few seconds of plain load, then the next fault. The load lasts at least
   ``seconds``.
4. The sites recover on their own clocks: nothing is advanced, nothing restarted; the campaign
   only waits for every task to end. Then the evidence is checked as in the process campaign,
   every answer too (an outage answers 503 with Retry-After, never 500; the clients also download
   each result as it succeeds, and the site's own latency histogram must show no new 5xx but 503 on
   any route, Prometheus's scrapes included), and each site's audit.
5. Per fault: back → first success, back → drained, the answers seen, the alerts that fired and
   whether they resolved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

import asyncpg
import httpx

from harness import books, processes, progress, state
from harness.report import now
from harness.state import SiteRecord

from . import checks, gather, load, outages, prometheus, recovery
from .results import ChaosReport
from .run import ACCOUNTS, Site, add_workers, revive, set_workers_back, tally

log = logging.getLogger(__name__)

MAINTAIN_EVERY = 30  # seconds: `maintain --loop 30`, as docs/operations.md has it
# After a fault: how long the campaign waits for the tasks accepted before it to end before the
# next fault (a broker restarted empty waits for maintenance's re-send of queued tasks).
RECOVERY_DEADLINE = 240.0
SETTLE_DEADLINE = 300.0  # after the load: every task ends on the sites' own clocks
RESOLVE_DEADLINE = 120.0  # after that: every alert stops firing
ACTIVE_BEFORE = """SELECT count(*) FROM task WHERE owner_id = ANY($1) AND task_is_active(status)
                   AND created_at <= to_timestamp($2)"""
ACTIVE = "SELECT count(*) FROM task WHERE owner_id = ANY($1) AND task_is_active(status)"


async def _count(site: Site, query: str, *args) -> int | None:
    """The count, or None while the database does not answer."""
    try:
        conn = await asyncpg.connect(site.record.database_url, timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return None
    try:
        return await conn.fetchval(query, site.owners, *args)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
        return None
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


async def _wait_ended(sites: list[Site], query: str, *args, deadline_s: float) -> bool:
    """Poll every site until ``query`` counts nothing; False at the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        counts = await asyncio.gather(*(_count(site, query, *args) for site in sites))
        if all(count == 0 for count in counts):
            return True
        await asyncio.sleep(1.0)
    return False


async def _faults(state_dir: Path, sites: list[Site], planned: list[outages.Outage]) -> list[outages.OutageDone]:
    done: list[outages.OutageDone] = []
    for outage in planned:
        await asyncio.sleep(outage.gap)
        with progress.step(f"chaos --services: {outage.kind} ({outage.down:g} s)"):
            record = await asyncio.to_thread(outages.carry_out, state_dir, outage)
            done.append(record)
            if record.error:
                break  # a server that did not come back: no further faults
            await _wait_ended(sites, ACTIVE_BEFORE, record.back_at, deadline_s=RECOVERY_DEADLINE)
    return done


def _server_errors(state_dir: Path, record: SiteRecord) -> dict[str, float]:
    """The site's 5xx answers so far, by route, from its own /metrics (every web process's)."""
    token = state.load_site_env(state_dir, record.slug)["METRICS_TOKEN"]
    response = httpx.get(f"{record.upstream_url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    response.raise_for_status()
    return recovery.server_errors(response.text)


def _start_maintenance(state_dir: Path, record: SiteRecord) -> int:
    folder = state.site_folder(state_dir, record.slug)
    return processes.start_site_process(record.venv_python, record.slug, ["maintain", "--loop", str(MAINTAIN_EVERY)],
                                        state.load_site_env(state_dir, record.slug), record.site_dir,
                                        folder / "logs" / "maintain-loop.log")


def _judge(report: ChaosReport, rows: list[checks.TaskRow], heard: list[load.Heard], campaign_end: float) -> None:
    """Each fault's recovery and answers, from every site's rows and every client's answers."""
    for index, done in enumerate(report.outages):
        if done.back_at is None:
            continue
        done.first_success_s = recovery.first_success(rows, done.back_at)
        done.drained_s = recovery.drained(rows, done.back_at)
        following = [later.started_at for later in report.outages[index + 1:] if later.started_at]
        end = done.back_at + max(done.first_success_s or 0.0, done.drained_s or 0.0)
        done.answers = recovery.answers_between(heard, done.started_at or done.back_at,
                                                min([end, *following, campaign_end]))


def _alerts(report: ChaosReport, prom: prometheus.Prometheus, campaign_end: float) -> list[str]:
    """Which alerts fired in each fault's window (its start to the next one's); which still fire."""
    windows = prom.rule_windows()
    last_back_at = max((d.back_at or 0.0 for d in report.outages), default=0.0)
    # Only the alerts that must resolve are waited for: one counting events over a range fires for it by
    # design (StorageErrors for 15 minutes after an s3-freeze), and waiting the deadline out changed nothing.
    still = prometheus.wait_resolved(
        prom, RESOLVE_DEADLINE, excused=lambda name: within_range(name, windows, last_back_at, time.time()))
    now = time.time()
    lasting = {name for name in still if within_range(name, windows, last_back_at, now)}
    fired: set[str] = set()
    for index, done in enumerate(report.outages):
        if done.started_at is None:
            continue
        following = [later.started_at for later in report.outages[index + 1:] if later.started_at]
        done.alerts_fired = prom.firing_between(done.started_at, min([*following, campaign_end]))
        done.alerts_unresolved = [name for name in done.alerts_fired if name in still and name not in lasting]
        done.alerts_within_range = [name for name in done.alerts_fired if name in lasting]
        fired |= {name.split("@")[0] for name in done.alerts_fired}
    report.alerts_never_fired = sorted(set(prom.rule_names()) - fired)
    return unresolved_findings(still, windows, last_back_at, now)


def within_range(name: str, windows: dict[str, float], last_back_at: float, now: float) -> bool:
    """Whether alert ``name`` counts events over a range that has not yet passed since the last fault
    ended (``increase(…[15m])`` fires for 15 minutes by design)."""
    return now - last_back_at < windows.get(name.split("@")[0], 0.0)


def unresolved_findings(still: list[str], windows: dict[str, float], last_back_at: float, now: float) -> list[str]:
    """An alert still firing is a finding, unless it is ``within_range``."""
    return [f"alert {name} still firing {RESOLVE_DEADLINE:.0f} s after every task ended" for name in still
            if not within_range(name, windows, last_back_at, now)]


async def _campaign(state_dir: Path, records: list[SiteRecord], report: ChaosReport, seed: int,
                    prom: prometheus.Prometheus | None) -> None:
    sites: list[Site] = []
    maintainers: list[tuple[int, str]] = []
    try:
        for record in records:
            accounts = await asyncio.gather(*(load.open_account(record, i, seed) for i in range(ACCOUNTS)),
                                            return_exceptions=True)
            sites.append(Site(state_dir, record, [a for a in accounts if isinstance(a, load.Account)]))
            if failed := [a for a in accounts if isinstance(a, BaseException)]:
                raise failed[0]
            for account in sites[-1].accounts:
                account.downloads = True
        errors_before = [await asyncio.to_thread(_server_errors, state_dir, record) for record in records]
        maintainers = [(_start_maintenance(state_dir, record), record.venv_python) for record in records]
        report.sites = [site.report for site in sites]
        began = time.monotonic()
        stop = asyncio.Event()
        clients = [asyncio.create_task(load.run_account(account, site.report.in_flight, began + 24 * 3600,
                                                        site.report.load, site.report.findings, stop))
                   for site in sites for account in site.accounts]
        try:
            report.outages = await _faults(state_dir, sites, report.outage_plan)
            await asyncio.sleep(max(0.0, began + report.seconds - time.monotonic()))
        finally:
            stop.set()
            await asyncio.gather(*clients)
        report.load_seconds = round(time.monotonic() - began, 1)
        with progress.step("chaos --services: every task ends on the sites' own clocks"):
            for site, (pid, python) in zip(sites, maintainers, strict=True):
                await asyncio.to_thread(revive, state_dir, site)  # a dead process is a finding
                if not processes.runs(pid, python):
                    site.report.findings.append("maintain --loop exited during the campaign")
            if not await _wait_ended(sites, ACTIVE, deadline_s=SETTLE_DEADLINE):
                report.failure = f"tasks still active {SETTLE_DEADLINE:.0f} s after the load"
        campaign_end = time.time()
        every_row: list[checks.TaskRow] = []
        for site in sites:
            outcomes, rows = await gather.outcomes(site.record, site.accounts)
            every_row += rows
            tally(site.report, rows)
            sent = {request.request_key for account in site.accounts for request in account.submitted}
            site.report.findings += checks.findings(outcomes, rows, sent)
            site.report.findings += recovery.answer_findings(answer for account in site.accounts
                                                             for answer in account.heard)
            after = await asyncio.to_thread(_server_errors, state_dir, site.record)
            site.report.findings += recovery.new_server_errors(errors_before[sites.index(site)], after)
            audit, error = await asyncio.to_thread(books.audit, state_dir, site.record)
            site.report.audit_clean = audit is not None and audit.clean
            if audit is not None:
                site.report.findings += [f"audit: {f.rule} {f.subject}: {f.detail}" for f in audit.findings]
            if error:
                site.report.findings.append(f"audit: {error}")
        _judge(report, every_row, [a for site in sites for account in site.accounts for a in account.heard],
               campaign_end)
        for done in report.outages:
            if done.back_at is not None and done.first_success_s is None:
                sites[0].report.findings.append(f"{done.kind}: no task succeeded after the server came back")
        if prom is not None:
            sites[0].report.findings += await asyncio.to_thread(_alerts, report, prom, campaign_end)
    finally:
        for pid, python in maintainers:
            processes.stop_site_process(pid, python)
        for site in sites:
            for account in site.accounts:
                await account.http.aclose()


def campaign(state_dir: Path, slugs: list[str], seconds: float, seed: int,
             kinds: tuple[str, ...] = tuple(outages.KINDS)) -> ChaosReport:
    """A service-fault campaign against sites of a live run; any error is the report's failure, never raised."""
    state_dir = Path(state_dir).resolve()
    report = ChaosReport(ok=False, seed=seed, seconds=seconds, started_at=now(), finished_at="", sites=[], plan=[],
                         outage_plan=outages.plan(seed, kinds))
    scaled: dict[str, int] = {}
    prom: prometheus.Prometheus | None = None
    try:
        run = state.load(state_dir)
        if external := [kind for kind in ("postgres", "broker", "s3") if getattr(run.services, kind).pid is None]:
            raise RuntimeError(f"service faults need the run's own embedded servers; external: {', '.join(external)}")
        add_workers(state_dir, slugs, scaled)
        records = [record for record in state.load(state_dir).sites if record.slug in slugs]
        if prometheus.available():
            prom = prometheus.start(state_dir, records)
            report.alert_rules = f"{prom.rules} rule file(s)" if prom.rules else "no rules"
        else:
            report.alert_rules = f"no Prometheus ({prometheus.BINARY} is not installed)"
        asyncio.run(_campaign(state_dir, records, report, seed, prom))
    except Exception as error:
        log.exception("chaos --services: the campaign failed")
        report.failure = f"{type(error).__name__}: {error}"
    finally:
        if prom is not None:
            prom.stop()
        report.failure = report.failure or set_workers_back(state_dir, scaled)
    report.finished_at = now()
    report.ok = (report.failure is None and bool(report.sites) and all(site.ok for site in report.sites)
                 and not any(done.error for done in report.outages))
    return report
