"""The run's report: ``report.json`` for machines and ``summary.txt`` for people."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from .books import SiteBooks
from .chaos.results import ChaosReport
from .chaos.results import summary as chaos_summary
from .fleet_plan import Planned
from .rehearsal import Outcome
from .render import Provenance
from .stand import RunInfo, SiteTimings
from .state import PRIVILEGED_SERVICES, ProxyRecord, ProxyRoute


class Case(msgspec.Struct):
    name: str
    outcome: str  # passed | failed | error | skipped
    seconds: float
    message: str | None = None


class TestResults(msgspec.Struct):
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    cases: list[Case] = msgspec.field(default_factory=list)


class SiteTests(msgspec.Struct):
    """The cases run against one site: those whose parameter id starts with its slug."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0


class SiteReport(msgspec.Struct):
    slug: str
    answers: dict
    timings: SiteTimings
    tests: SiteTests = msgspec.field(default_factory=SiteTests)
    # after the scenarios: everything restarted, every ready file read back, the site's audit
    books: SiteBooks | None = None
    # verify --site/--answers: the folder or answers file, its template and commit, the run's overrides
    fleet: Planned | None = None
    update: Outcome | None = None  # verify --update: from-commit -> to-commit, conflicts, the old data


class ProxyLane(msgspec.Struct):
    """``verify --proxy``: what stood in front of the sites, and the scenarios only this lane runs."""

    kind: str
    version: str
    source: str  # the address it reached the sites from (their trusted_proxies)
    routes: list[ProxyRoute]
    checks: SiteTests  # site_tests/test_proxy.py


PROXY_CASES = "site_tests.test_proxy::"


class Report(msgspec.Struct):
    ok: bool
    run_id: str
    started_at: str
    finished_at: str
    provenance: Provenance
    services: str
    sites: list[SiteReport]
    tests: TestResults
    teardown: list[str]
    failure: str | None = None
    # the short fault campaign on the first site (also in chaos.json)
    chaos: ChaosReport | None = None
    # why the fault campaign did not run (a run that proves something else: --no-fault-campaign)
    chaos_skipped: str | None = None
    # the short service-fault campaign on the first site (also in chaos-services.json); None where it did
    # not run (services_chaos_skipped says why: external services)
    services_chaos: ChaosReport | None = None
    services_chaos_skipped: str | None = None
    lane: str = "plain"  # or "proxy": every site behind a reverse proxy over https
    proxy: ProxyLane | None = None
    # service ("database", "broker", "storage") -> "isolated by privilege" or "shared: <why>"
    privilege: dict[str, str] = msgspec.field(default_factory=dict)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_junit(path: Path) -> TestResults:
    results = TestResults()
    if not path.exists():
        return results
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        seconds = float(case.get("time") or 0)
        outcome, message = "passed", None
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or "")[:500] or None
                break
        results.cases.append(Case(name=name, outcome=outcome, seconds=round(seconds, 2), message=message))
        results.seconds += seconds
        if outcome == "passed":
            results.passed += 1
        elif outcome == "failed":
            results.failed += 1
        elif outcome == "error":
            results.errors += 1
        else:
            results.skipped += 1
    results.seconds = round(results.seconds, 1)
    return results


def read_junits(paths: list[Path]) -> TestResults:
    total = TestResults()
    for path in paths:
        part = read_junit(path)
        total.passed += part.passed
        total.failed += part.failed
        total.errors += part.errors
        total.skipped += part.skipped
        total.seconds = round(total.seconds + part.seconds, 1)
        total.cases += part.cases
    return total


def ran_against(case: Case, slug: str) -> bool:
    """``test_x[alpha]``, ``test_y[alpha-bravo]`` (the site it ran against first) and the
    per-site schemathesis tests ``test_fuzz_alpha`` belong to ``alpha``."""
    if case.name.endswith("]") and "[" in case.name:
        return case.name[:-1].rsplit("[", 1)[1].split("-", 1)[0] == slug
    return case.name.endswith(f"_{slug}")


def tally(cases: Iterable[Case]) -> SiteTests:
    counted = SiteTests()
    for case in cases:
        if case.outcome == "passed":
            counted.passed += 1
        elif case.outcome == "skipped":
            counted.skipped += 1
        else:
            counted.failed += 1
        counted.seconds = round(counted.seconds + case.seconds, 1)
    return counted


def per_site(tests: TestResults, slug: str) -> SiteTests:
    return tally(case for case in tests.cases if ran_against(case, slug))


def proxy_lane(record: ProxyRecord | None, tests: TestResults) -> ProxyLane:
    checks = tally(case for case in tests.cases if case.name.startswith(PROXY_CASES))
    if record is None:  # the run failed before the proxy was planned
        return ProxyLane(kind="?", version="?", source="?", routes=[], checks=checks)
    return ProxyLane(kind=record.kind, version=record.version, source=record.source, routes=record.routes,
                     checks=checks)


def build(*, ok: bool, started_at: str, provenance: Provenance, services_mode: str, info: RunInfo | None,
          tests: TestResults, teardown: list[str], failure: str | None,
          books: dict[str, SiteBooks] | None = None, chaos: ChaosReport | None = None,
          chaos_skipped: str | None = None,
          proxy: ProxyLane | None = None, updates: dict[str, Outcome | None] | None = None,
          privilege: dict[str, str] | None = None, services_chaos: ChaosReport | None = None,
          services_chaos_skipped: str | None = None) -> Report:
    sites = [
        SiteReport(slug=slug, answers=answers, timings=info.timings.get(slug, SiteTimings()),
                   tests=per_site(tests, slug), books=(books or {}).get(slug), fleet=info.fleet.get(slug),
                   update=(updates or {}).get(slug))
        for slug, answers in (info.answers.items() if info else [])
    ]
    return Report(
        ok=ok,
        run_id=info.run_id if info else "",
        started_at=started_at,
        finished_at=now(),
        provenance=provenance,
        services=services_mode,
        sites=sites,
        tests=tests,
        teardown=teardown,
        failure=failure,
        chaos=chaos,
        chaos_skipped=chaos_skipped,
        services_chaos=services_chaos,
        services_chaos_skipped=services_chaos_skipped,
        lane="proxy" if proxy else "plain",
        proxy=proxy,
        privilege=privilege or {},
    )


def privilege_lines(privilege: dict[str, str]) -> list[str]:
    """One line per service: how it keeps one site from another."""
    if not privilege:
        return ["  privilege: not reached"]
    return [f"  {service + ':':<9} {privilege.get(service, 'not provisioned')}" for service in PRIVILEGED_SERVICES]


def summary(report: Report) -> str:
    p = report.provenance
    commit = (p.commit or "no git")[:12] + (" + uncommitted changes" if p.dirty else "")
    lines = [
        f"sitekit harness run {report.run_id}: {'PASS' if report.ok else 'FAIL'}",
        f"  template {commit} (copier {p.copier_version}), services: {report.services}",
        f"  {report.started_at} -> {report.finished_at}",
        *privilege_lines(report.privilege),
        *proxy_lines(report.proxy),
        *fleet_lines(report.sites),
        "",
        "  site       render  install  migrate   start   tests (its own cases: passed/failed/skipped, time)",
    ]
    for site in report.sites:
        t, c = site.timings, site.tests
        lines.append(f"  {site.slug:<9} {t.render_s:6.1f}s {t.install_s:7.1f}s {t.migrate_s:7.1f}s {t.start_s:6.1f}s"
                     f"   {c.passed}/{c.failed}/{c.skipped} in {c.seconds:.0f}s")
    tests = report.tests
    lines += [
        "",
        f"  site_tests: {tests.passed} passed, {tests.failed} failed, {tests.errors} errors, "
        f"{tests.skipped} skipped in {tests.seconds:.0f}s",
    ]
    for case in tests.cases:
        if case.outcome in ("failed", "error"):
            lines.append(f"    {case.outcome.upper()} {case.name}: {case.message or ''}"[:300])
    lines.append("")
    if report.chaos_skipped:
        lines.append(f"  fault campaign: skipped ({report.chaos_skipped})")
    elif report.chaos is None:
        lines.append("  fault campaign: not reached")
    else:
        lines += ["  " + line for line in chaos_summary(report.chaos).splitlines()]
    if report.services_chaos is not None:
        lines += ["  " + line for line in chaos_summary(report.services_chaos).splitlines()]
    elif report.services_chaos_skipped:
        lines.append(f"  service-fault campaign: skipped ({report.services_chaos_skipped})")
    lines.append("")
    for site in report.sites:
        lines += books_lines(site)
    if report.failure:
        lines.append(f"  failure: {report.failure}")
    lines.append("  teardown: " + ("clean" if not report.teardown else "; ".join(report.teardown)))
    return "\n".join(lines) + "\n"


def proxy_lines(lane: ProxyLane | None) -> list[str]:
    if lane is None:
        return []
    c = lane.checks
    lines = [f"  lane: proxy ({lane.kind} {lane.version}, TLS from a test CA, sites trust {lane.source} only)"]
    lines += [f"    {route.slug:<9} {route.url} -> http://{route.upstream}" for route in lane.routes]
    lines.append(f"    proxy scenarios (site_tests/test_proxy.py): {c.passed} passed, {c.failed} failed, "
                 f"{c.skipped} skipped")
    return lines


def fleet_lines(sites: list[SiteReport]) -> list[str]:
    """Where each site of a fleet run came from, and what the run changed in its copy."""
    lines: list[str] = []
    for site in sites:
        if (planned := site.fleet) is None:
            continue
        made = (f"template {planned.template} @ {planned.commit}" if planned.kind == "site"
                else "rendered from this checkout")
        lines.append(f"  {site.slug:<9} {planned.label} ({made}), port {planned.port}")
        lines += [f"    {key}: {change}" for key, change in planned.overrides.items()]
        if planned.update:
            lines.append(f"    update: {update_line(site.update)}")
    return ["", "  fleet:", *lines] if lines else []


def update_line(outcome: Outcome | None) -> str:
    if outcome is None:
        return "not reached"
    moved = f"{outcome.from_commit} -> {outcome.to_commit or '?'}"
    if not outcome.checked:
        return f"{moved}: old data not checked"
    found = [f"conflicts in {', '.join(outcome.conflicts)}"] if outcome.conflicts else []
    found += outcome.problems
    migrations = f", {len(outcome.migrations)} new migration(s)" if outcome.migrations else ""
    return f"{moved}{migrations}: " + ("; ".join(found) if found else "old data intact (account, files byte-exact, "
                                                                     "finished task and its result, history)")


def books_lines(site: SiteReport) -> list[str]:
    """After a restart of everything: the site's files read back, and its audit."""
    books = site.books
    if books is None:
        return [f"  {site.slug:<9} restart and audit: not reached"]
    read_back = (f"{books.files_checked} files byte-exact after a restart" if not books.byte_problems
                 else f"{len(books.byte_problems)} of {books.files_checked} files damaged after a restart")
    if books.audit_error:
        audit = f"audit failed to run: {books.audit_error}"
    else:
        audit = "audit: clean" if books.audit_clean else f"audit: {len(books.findings)} finding(s)"
    lines = [f"  {site.slug:<9} {read_back}; {audit}"]
    lines += [f"    {problem}"[:300] for problem in books.byte_problems[:20]]
    lines += [f"    {finding}"[:300] for finding in books.findings[:50]]
    return lines


def write(state_dir: Path, report: Report) -> str:
    (Path(state_dir) / "report.json").write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2))
    text = summary(report)
    (Path(state_dir) / "summary.txt").write_text(text)
    return text
