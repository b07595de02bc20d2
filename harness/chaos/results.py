"""What a campaign records (``chaos.json``, exactly these structs encoded) and its summary for people."""

from __future__ import annotations

from pathlib import Path

import msgspec

from .outages import Outage, OutageDone
from .schedule import Kill


class KillDone(msgspec.Struct):
    """One kill of the plan as it was carried out."""

    site: str
    role: str
    index: int
    planned_at: float  # seconds after the load started
    at: float | None = None  # when it happened (None: the load ended first)
    pid: int | None = None  # the process killed
    down: float = 0.0
    back_after: float | None = None  # seconds from the kill until the new process was ready
    error: str | None = None


class LoadStats(msgspec.Struct):
    """What the clients of one site met."""

    submits: int = 0  # request keys sent
    lost_responses: int = 0  # submits sent again (same request key) because a send got no answer
    found_on_resend: int = 0  # ... whose unanswered send had made the task: the resend answered 200
    resends: int = 0  # sends without an answer, refused or cut
    cut: int = 0  # ... of those, sends cut after the request went out (not refused at connect)
    unavailable: int = 0  # 503 answers (sent again)
    rate_limited: int = 0  # 429 answers (backed off, sent again)


class SiteChaos(msgspec.Struct):
    slug: str
    accounts: int
    in_flight: int  # tasks each account keeps active
    load: LoadStats = msgspec.field(default_factory=LoadStats)
    tasks: int = 0
    succeeded: int = 0
    failed: dict[str, int] = msgspec.field(default_factory=dict)  # by error code
    canceled: int = 0
    active: int = 0  # not terminal after settling (each one is also a finding)
    re_executions: int = 0  # attempts beyond the first, over all tasks
    kills: list[KillDone] = msgspec.field(default_factory=list)
    maintenance: dict[str, int] = msgspec.field(default_factory=dict)  # rows each maintain step moved, summed
    settle_rounds: int = 0
    settle_seconds: float = 0.0
    audit_clean: bool = False
    findings: list[str] = msgspec.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.audit_clean and not self.findings

    def killed(self, role: str) -> int:
        return sum(1 for kill in self.kills if kill.role == role and kill.at is not None)


class ChaosReport(msgspec.Struct):
    ok: bool
    seed: int
    seconds: float
    started_at: str
    finished_at: str
    sites: list[SiteChaos]
    plan: list[Kill]
    failure: str | None = None
    # chaos --services: the service faults planned and carried out, and what Prometheus saw
    outage_plan: list[Outage] = msgspec.field(default_factory=list)
    outages: list[OutageDone] = msgspec.field(default_factory=list)
    alert_rules: str | None = None  # "N rule file(s)", "no rules", or why Prometheus did not run
    alerts_never_fired: list[str] = msgspec.field(default_factory=list)  # rules loaded that no fault fired
    load_seconds: float = 0.0  # how long the load lasted (the faults and their recoveries set it)


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def outage_lines(report: ChaosReport) -> list[str]:
    """The campaign table of the service faults: one line per fault, its answers and alerts below it."""
    if not report.outages:
        return []
    lines = [f"  service faults (alert rules: {report.alert_rules or '?'}):",
             "    fault           down    back->first success  back->drained  answers during it"]
    for done in report.outages:
        answers = ", ".join(f"{status}: {count}" for status, count in done.answers.items()) or "none"
        lines.append(f"    {done.kind:<15} {done.down:5.1f} s {_seconds(done.first_success_s):>20}  "
                     f"{_seconds(done.drained_s):>13}  {answers}")
        if done.error:
            lines.append(f"      error: {done.error}")
        if report.alert_rules and report.alert_rules.endswith("file(s)"):
            resolved = "; ".join(
                [*([f"NOT resolved: {', '.join(done.alerts_unresolved)}"] if done.alerts_unresolved else []),
                 *([f"firing over its range: {', '.join(done.alerts_within_range)}"]
                   if done.alerts_within_range else [])]) or "all resolved"
            lines.append(f"      alerts fired: {', '.join(done.alerts_fired) or 'none'}"
                         + (f"; {resolved}" if done.alerts_fired else ""))
    if report.alerts_never_fired:
        lines.append(f"    alert rules no fault fired: {', '.join(report.alerts_never_fired)}")
    return lines


def summary(report: ChaosReport) -> str:
    what = "service-fault campaign" if report.outage_plan else "fault campaign"
    lines = [
        f"{what}, seed {report.seed}, {report.load_seconds or report.seconds:g} s of load: "
        f"{'PASS' if report.ok else 'FAIL'}",
        "  site        tasks  succeeded  failed  kills worker/web  re-executions  lost responses  audit",
    ]
    for site in report.sites:
        failed = sum(site.failed.values())
        lost = f"{site.load.lost_responses} ({site.load.found_on_resend} made)"
        lines.append(f"  {site.slug:<9} {site.tasks:7d} {site.succeeded:10d} {failed:7d} "
                     f"{site.killed('worker'):12d}/{site.killed('web'):<4d}{site.re_executions:14d}  {lost:>15}  "
                     f"{'clean' if site.audit_clean else 'NOT clean'}")
    for site in report.sites:
        details = [f"{count} {code}" for code, count in sorted(site.failed.items())]
        if site.canceled:
            details.append(f"{site.canceled} canceled")
        lines.append(f"  {site.slug}: {site.accounts} accounts x {site.in_flight} in flight; settled in "
                     f"{site.settle_rounds} round(s), {site.settle_seconds:.0f} s"
                     + (f"; failed: {', '.join(details)}" if details else ""))
        load = site.load
        lines.append(f"    lost responses: {load.lost_responses} submits sent again after {load.resends} unanswered "
                     f"sends ({load.cut} cut after sending); {load.found_on_resend} had made their task (the resend "
                     f"answered 200); 503: {load.unavailable}, 429: {load.rate_limited}")
        moved = ", ".join(f"{name} {count}" for name, count in site.maintenance.items() if count > 0)
        if moved:
            lines.append(f"    maintenance: {moved}")
        lines.append(f"    findings: {len(site.findings) or 'none'}")
        lines += [f"      {finding}"[:300] for finding in site.findings[:30]]
    lines += outage_lines(report)
    if report.failure:
        lines.append(f"  failure: {report.failure}")
    return "\n".join(lines) + "\n"


def write(state_dir: Path, report: ChaosReport, name: str = "chaos.json") -> str:
    """``name`` in the state folder; returns the summary."""
    (Path(state_dir) / name).write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2))
    return summary(report)
