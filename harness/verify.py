"""``verify``: up, run site_tests against the live sites, a short fault campaign and a short service-fault
campaign, the books, the report, down."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from . import KIT_ROOT, books, progress, rehearsal, report, stand, state
from .chaos import outage_run
from .chaos import results as chaos_results
from .chaos.run import campaign
from .fleet_plan import Planned
from .render import provenance

log = logging.getLogger(__name__)

# The short fault campaign on the run's first site, after site_tests and before the books
# (which restart everything and audit what the campaign left too).
CHAOS_SECONDS = 40
CHAOS_SEED = 15
# Then the short service-fault campaign there (chaos --services): one fault of each server that recovers
# within a minute or two (CI runs postgres-long and broker-empty); the load lasts at least SERVICE_SECONDS
# (the faults and their recoveries set it).
SERVICE_FAULTS = ("postgres-short", "broker-kill", "s3-freeze")
SERVICE_SECONDS = 10


# Phase 1 runs everything that leaves the sites up, in parallel; phase 2 the scenarios that
# stop, restart or break a site — sites in parallel, one scenario at a time per site.
PHASES = [
    ("site_tests.xml", ["-m", "not disruptive"]),
    ("site_tests_disruptive.xml", ["-m", "disruptive", "--dist", "loadgroup"]),
]


def run_site_tests(state_dir: Path, workers: int | str, sites: int, extra: list[str] | None = None,
                   ca_file: str | None = None) -> int:
    env = {**os.environ, "SITEKIT_STATE": str(state_dir)}
    if ca_file:  # playwright's Node side (a page's API requests) trusts the run's CA, as httpx clients do
        env["NODE_EXTRA_CA_CERTS"] = ca_file
    worst = 0
    for junit, selection in PHASES:
        argv = [
            sys.executable, "-m", "pytest", str(KIT_ROOT / "site_tests"),
            "-n", str(workers if junit == "site_tests.xml" else sites),
            "--junitxml", str(state_dir / junit),
            "-p", "no:cacheprovider",
            "-q", "-rfE",
            *selection,
            *(extra or []),
        ]
        rc = subprocess.run(argv, env=env, cwd=KIT_ROOT, check=False).returncode
        # 5 = nothing selected (e.g. a -k filter that matches only one phase)
        worst = max(worst, 0 if rc == 5 else rc)
    return worst


def verify(state_dir: Path, count: int, *, keep: bool, workers: int | str, pytest_args: list[str] | None = None,
           overrides: dict | None = None, counts: state.ProcessCounts | None = None,
           behind_proxy: bool = False, fleet: list[Planned] | None = None,
           require_privilege: bool = False, service_faults: bool = True,
           fault_campaign: bool = True) -> tuple[bool, str]:
    state_dir = Path(state_dir).resolve()
    started_at = report.now()
    origin = provenance()
    failure: str | None = None
    teardown: list[str] = []
    tests_rc = 1
    services_mode = "?"
    site_books: dict[str, books.SiteBooks] = {}
    chaos: chaos_results.ChaosReport | None = None
    chaos_skipped: str | None = None
    services_chaos: chaos_results.ChaosReport | None = None
    services_skipped: str | None = None
    front: state.ProxyRecord | None = None
    privilege: dict[str, str] = {}
    try:
        sites = stand.up(state_dir, count, overrides, counts, behind_proxy=behind_proxy, fleet=fleet)
        services_mode, front, privilege = sites.services.mode, sites.proxy, sites.services.privilege
        with progress.step(f"site tests on {len(sites.sites)} sites"):
            tests_rc = run_site_tests(state_dir, workers, len(sites.sites), pytest_args,
                                      ca_file=front.ca_file if front else None)
        if fault_campaign:
            with progress.step(f"fault campaign ({CHAOS_SECONDS:.0f} s) on {sites.sites[0].slug}"):
                chaos = campaign(state_dir, [sites.sites[0].slug], CHAOS_SECONDS, CHAOS_SEED)
            chaos_results.write(state_dir, chaos)
        else:
            chaos_skipped = "not asked for (--no-fault-campaign)"
        if external := [kind for kind in ("postgres", "broker", "s3") if getattr(sites.services, kind).pid is None]:
            services_skipped = f"external services: {', '.join(external)}"
        elif behind_proxy:  # the proxy changes nothing between a site and its services; CI's time is spent once
            services_skipped = "the production lane (the plain lane runs it)"
        elif not service_faults:
            services_skipped = "not asked for (--no-service-faults)"
        else:
            with progress.step(f"service-fault campaign ({', '.join(SERVICE_FAULTS)}) on {sites.sites[0].slug}"):
                services_chaos = outage_run.campaign(state_dir, [sites.sites[0].slug], SERVICE_SECONDS, CHAOS_SEED,
                                                     SERVICE_FAULTS)
            chaos_results.write(state_dir, services_chaos, "chaos-services.json")
        with progress.step("the books of every site"):
            site_books = books.check_books(state_dir)
        if fleet and any(site.update for site in fleet):  # after the restart: the old data through the new code
            for record in sites.sites:
                rehearsal.check(state_dir, record)
    except Exception as error:
        failure = f"{type(error).__name__}: {error}"
        log.error("run failed: %s", failure)
    finally:
        if not keep and (state_dir / "sites.json").exists():
            with progress.step("down: stop every process, drop every database, bucket and key"):
                teardown = stand.down(state_dir)
    results = report.read_junits([state_dir / junit for junit, _ in PHASES])
    ok = failure is None and tests_rc == 0 and results.failed == 0 and results.errors == 0 and not teardown
    if ok and results.passed == 0:
        ok, failure = False, "no site test ran"
    ok = ok and bool(site_books) and all(b.ok for b in site_books.values())
    ok = ok and (chaos.ok if chaos is not None else chaos_skipped is not None)
    ok = ok and (services_chaos.ok if services_chaos is not None else services_skipped is not None)
    updates = {site.slug: rehearsal.load(state_dir, site.slug) for site in fleet or [] if site.update}
    if updates and not all(outcome is not None and outcome.ok for outcome in updates.values()):
        ok, failure = False, failure or "an upgrade rehearsal did not carry every site over cleanly"
    shared = {service: verdict for service, verdict in privilege.items() if verdict != state.ISOLATED}
    if require_privilege and (shared or not privilege):
        ok, failure = False, failure or "--require-privilege: " + (
            "; ".join(f"{service} {verdict}" for service, verdict in shared.items()) or "no site was provisioned")
    lane = report.proxy_lane(front, results) if behind_proxy else None
    # The proxy-only scenarios skip outside this lane; here every one of them must run and pass
    # (unless extra pytest arguments chose other scenarios).
    if lane is not None and (lane.checks.failed or lane.checks.skipped or not (lane.checks.passed or pytest_args)):
        ok, failure = False, failure or "the proxy scenarios (site_tests/test_proxy.py) did not all pass"
    built = report.build(ok=ok, started_at=started_at, provenance=origin, services_mode=services_mode,
                         info=stand.load_run_info(state_dir), tests=results, teardown=teardown, failure=failure,
                         books=site_books, chaos=chaos, chaos_skipped=chaos_skipped, proxy=lane, updates=updates,
                         privilege=privilege, services_chaos=services_chaos, services_chaos_skipped=services_skipped)
    return ok, report.write(state_dir, built)
