"""Where a batch's CPU goes: seconds used by each part of the system, as the kernel counts them (psutil).

Every part runs as its own process (or, for PostgreSQL, a postmaster and its
backends), so the CPU a batch costs each of them is the difference of two
readings — a profile across processes that needs no instrumentation in them.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable

import psutil

from harness.state import SiteRecord, SitesFile

from .machine import cpu_by_pid

# The order the report lists them in.
GROUPS = ("web", "worker", "bare worker", "postgres", "s3", "s3 proxy", "broker", "driver")

Groups = dict[str, set[int]]


def service_groups(sites: SitesFile, site: SiteRecord) -> Groups:
    """The shared servers this run started (external ones are not measured) and this process."""
    services = sites.services
    groups: Groups = {"driver": {os.getpid()}}
    for name, record in (("postgres", services.postgres), ("broker", services.broker), ("s3", services.s3)):
        if record.pid:
            groups[name] = {record.pid}
    proxy = services.s3_proxies.get(site.slug)
    if proxy and proxy.pid:
        groups["s3 proxy"] = {proxy.pid}
    return groups


def site_groups(sites: SitesFile, site: SiteRecord) -> Groups:
    return {**service_groups(sites, site), "web": set(site.pids.web), "worker": set(site.pids.worker)}


def reaped(pid: int) -> float:
    """CPU seconds of ``pid``'s children that ended and were waited for: the kernel adds them to the
    parent's count, and no reading of live processes sees them again."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.children_user + times.children_system


def reading(groups: Groups) -> dict[str, float]:
    """CPU seconds so far per group; PostgreSQL's backends count with their postmaster, the ones that
    ended too (an autovacuum worker or a closed connection's backend that lived between two readings
    would otherwise never be counted: a child moves from the live sum to its parent's reaped count)."""
    used = dict.fromkeys(groups, 0.0)
    for pid, (parent, seconds) in cpu_by_pid().items():
        for name, roots in groups.items():
            if pid in roots or (name == "postgres" and parent in roots):
                used[name] += seconds
    if "postgres" in groups:
        used["postgres"] += sum(reaped(root) for root in groups["postgres"])
    return used


async def used_by(groups: Groups, work: Awaitable[object]) -> dict[str, float]:
    """CPU seconds each group used while ``work`` ran."""
    before = reading(groups)
    await work
    after = reading(groups)
    return {name: after[name] - before[name] for name in groups}


def per_task(before: dict[str, float], after: dict[str, float], tasks: int) -> dict[str, float]:
    """Milliseconds of CPU per task for each group, in the report's order."""
    return {name: round(1000 * (after[name] - before[name]) / tasks, 2) for name in GROUPS if name in after}
