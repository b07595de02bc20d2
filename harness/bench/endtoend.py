"""End to end through a live site: submit over HTTP, the worker runs it, the result is published.

Each closed-loop client is its own account with one active task at a time,
so the per-account active limit never binds. Every result is checked
against the expected normalised bytes afterwards: a fast wrong answer is
not a number worth reporting.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit
from uuid import UUID

import asyncpg

from harness.state import SiteRecord

from . import commits, cpu
from .accounts import Account, normalized, task_price
from .loop import TASKS_FINISHED, Completions, LoopResult, StartJob, closed_loop
from .measure import BenchError
from .results import Commits, EndToEnd
from .speed import Probe
from .vacuum import Vacuum


def database_name(site: SiteRecord) -> str:
    return urlsplit(site.database_url).path.lstrip("/")


async def check_results(conn: asyncpg.Connection, jobs: list[UUID], accounts: list[Account]) -> None:
    expected = {UUID(a.id): hashlib.sha256(normalized(a.data)).digest() for a in accounts}
    rows = await conn.fetch(
        "SELECT t.id, t.owner_id, f.sha256 FROM task t JOIN file f ON f.id = t.result_file_id "
        "WHERE t.id = ANY($1::uuid[]) AND f.status = 'ready'", jobs)
    wrong = [row["id"] for row in rows if bytes(row["sha256"]) != expected.get(row["owner_id"])]
    if len(rows) != len(jobs) or wrong:
        raise BenchError(f"{len(jobs) - len(rows)} tasks without a ready result, {len(wrong)} with wrong bytes")


def submitter(site: SiteRecord, accounts: list[Account]) -> StartJob:
    """Client ``i`` of a closed loop submits as ``accounts[i]``."""

    async def start(client: int, _: int) -> UUID:
        response = await accounts[client].submit()
        if response.status_code != 201:
            raise BenchError(f"{site.slug}: submit answered {response.status_code}: {response.text[:200]}")
        return UUID(response.json()["id"])

    return start


async def end_to_end(site: SiteRecord, accounts: list[Account], *, tasks: int, workers: int,
                     groups: cpu.Groups, server_url: str | None = None, seconds: float = 0.0,
                     round_number: int = 1, vacuum: Vacuum | None = None) -> tuple[EndToEnd, Commits | None]:
    """One closed-loop batch of at least ``tasks`` and ``seconds`` with ``len(accounts)`` in flight; the CPU
    it costs each process in ``groups``, its own vacuum included (vacuum.py); commits counted if
    ``server_url``."""
    start = submitter(site, accounts)
    conn = await asyncpg.connect(site.database_url)
    server = await asyncpg.connect(server_url) if server_url else None
    try:
        # One task per client first: connections, prepared statements and imports are warm
        # before the clock starts (the baseline gets the same).
        await closed_loop(start, Completions(conn, TASKS_FINISHED), len(accounts), len(accounts))
        # A vacuum commits a transaction a table: both stay out of the commit count's window, and the
        # batch's own is added to its CPU after that window closed (closing waits 11 s for statistics).
        if vacuum:
            await vacuum.clean_slate()
        window = await commits.open_window(server, database_name(site)) if server else None
        completions = Completions(conn, TASKS_FINISHED)
        async with Probe() as probe:
            before = cpu.reading(groups)
            batch: LoopResult = await closed_loop(start, completions, tasks, len(accounts), seconds)
            after = cpu.reading(groups)
        done = len(batch.jobs)
        counted = None
        if server and window:
            counted = await commits.close_window(server, database_name(site), window, site=site.slug, tasks=done,
                                                 poll_queries=completions.polls)
        if vacuum:
            cleanup = await cpu.used_by(groups, vacuum.own())
            after = {name: after[name] + cleanup[name] for name in after}
        used = cpu.per_task(before, after, done)
        await check_results(conn, batch.jobs, accounts)
    finally:
        await conn.close()
        if server:
            await server.close()
    result = EndToEnd(site=site.slug, price=task_price(site), workers=workers, tasks=done, seconds=batch.seconds,
                      tasks_per_s=batch.jobs_per_s, latency=batch.latency, cpu_ms_per_task=used, round=round_number,
                      unit_ms=probe.unit_ms)
    return result, counted
