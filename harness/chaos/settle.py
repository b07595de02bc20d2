"""Driving stuck work to an end from outside: the site's clocks advanced, its own ``maintain`` run.

A killed worker leaves its task ``running`` under a lease that lasts two
minutes; a killed web process can leave a task ``pending`` whose send never
happened, or a message held by a dead consumer leaves it ``queued``. The
site's maintenance recovers each of those once its clock says so. Instead of
waiting, the campaign moves those clocks in the site's database — only for
the campaign's own accounts, and only for rows that have not moved for
``stale`` seconds (a slow executor then loses its lease: the lifecycle must
take that too) — and runs ``python -m <site> maintain``, as cron would.

During the load that happens every few seconds for rows stuck 15 s, with
two maintainers at once (cron on two hosts: maintenance must be safe with
itself); after it, in rounds until every task of the campaign is terminal or
the deadline passes. Then the result files that killed attempts reserved and never
published are aged past their settle time and purged by maintenance.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from uuid import UUID

import asyncpg
import msgspec

from harness import processes, state
from harness.state import SiteRecord

LOAD_STALE = 15.0  # during the load: a row unmoved this long is presumed stranded
SETTLE_STALE = 3.0  # after it: nothing else is moving rows
CRON_EVERY = 5.0  # seconds between maintenance runs during the load
CRON_MAINTAINERS = 2  # run at once during the load
SETTLE_DEADLINE = 180.0
MAINTAIN_TIMEOUT = 120.0

# Each statement: the campaign's accounts ($1), rows unmoved for $2 seconds.
ADVANCE = {
    "execution leases": """
        UPDATE task SET lease_expires_at = now() - interval '1 second'
        WHERE owner_id = ANY($1) AND status = 'running' AND lease_expires_at > now()
          AND EXISTS (SELECT 1 FROM task_attempt a WHERE a.task_id = task.id AND a.lease_version = task.lease_version
                      AND a.started_at <= now() - make_interval(secs => $2))""",
    "delivery leases": """
        UPDATE task SET delivery_lease_expires_at = now() - interval '1 second'
        WHERE owner_id = ANY($1) AND status IN ('pending', 'queued') AND delivery_lease_expires_at > now()
          AND updated_at <= now() - make_interval(secs => $2)""",
    "unsent": """
        UPDATE task SET updated_at = now() - interval '3 minutes'
        WHERE owner_id = ANY($1) AND status = 'pending' AND delivery_token IS NULL
          AND updated_at <= now() - make_interval(secs => $2) AND updated_at > now() - interval '3 minutes'""",
    "unclaimed": """
        UPDATE task SET queued_at = now() - interval '3 minutes'
        WHERE owner_id = ANY($1) AND status = 'queued'
          AND queued_at <= now() - make_interval(secs => $2) AND queued_at > now() - interval '3 minutes'""",
    "retry waits": """
        UPDATE task SET next_attempt_at = now()
        WHERE owner_id = ANY($1) AND status = 'retry_wait' AND next_attempt_at > now()
          AND updated_at <= now() - make_interval(secs => $2)""",
}

ACTIVE = "SELECT count(*) FROM task WHERE owner_id = ANY($1) AND task_is_active(status)"
# Active rows that moved within $2 seconds: work still under way.
MOVING = """SELECT count(*) FROM task WHERE owner_id = ANY($1) AND task_is_active(status)
            AND updated_at > now() - make_interval(secs => $2)"""
UNPUBLISHED = "SELECT count(*) FROM file WHERE owner_id = ANY($1) AND kind = 'result' AND status = 'uploading'"
AGE_UNPUBLISHED = """UPDATE file SET updated_at = now() - interval '1 hour'
                     WHERE owner_id = ANY($1) AND kind = 'result' AND status = 'uploading'"""


class Settled(msgspec.Struct):
    rounds: int = 0
    seconds: float = 0.0
    active_left: int = 0
    unpublished_left: int = 0


class Maintainer:
    """Runs the site's own ``maintain``, sums what each step moved, and keeps what went wrong."""

    def __init__(self, state_dir: Path, site: SiteRecord) -> None:
        self.site = site
        self.env = state.load_site_env(state_dir, site.slug)
        self.runs = 0
        self.moved: dict[str, int] = {}
        self.problems: list[str] = []

    async def run(self) -> None:
        done = await asyncio.to_thread(processes.run_site_command, self.site.venv_python, self.site.slug,
                                       ["maintain"], self.env, self.site.site_dir, MAINTAIN_TIMEOUT)
        self.runs += 1
        failed = []
        for part in filter(None, done.stdout.strip().split(", ")):
            name, _, count = part.rpartition(": ")
            if count == "-1":
                failed.append(name)
            elif count.isdigit():
                self.moved[name] = self.moved.get(name, 0) + int(count)
        if done.returncode != 0:
            stderr = done.stderr.strip().splitlines()
            self.problems.append(f"maintain run {self.runs} exited with {done.returncode}"
                                 + (f"; failed steps: {', '.join(failed)}" if failed else "")
                                 + (f"; {stderr[-1][:200]}" if stderr else ""))


async def advance_clocks(conn: asyncpg.Connection, owners: list[UUID], stale: float) -> int:
    """Bring forward every clock the campaign's stuck rows wait on; how many rows moved."""
    moved = 0
    for statement in ADVANCE.values():
        moved += int((await conn.execute(statement, owners, stale)).split()[-1])
    return moved


async def cron(site: SiteRecord, maintainer: Maintainer, owners: list[UUID], stop: asyncio.Event) -> None:
    """During the load: every few seconds, stranded rows' clocks advanced and maintenance run."""
    conn = await asyncpg.connect(site.database_url)
    try:
        while not stop.is_set():
            await advance_clocks(conn, owners, LOAD_STALE)
            await asyncio.gather(*(maintainer.run() for _ in range(CRON_MAINTAINERS)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), CRON_EVERY)
    finally:
        await conn.close()


async def _poll(condition, deadline: float, interval: float = 0.2) -> bool:
    while not await condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
    return True


async def settle(site: SiteRecord, maintainer: Maintainer, owners: list[UUID],
                 deadline_s: float = SETTLE_DEADLINE) -> Settled:
    """Rounds of clocks advanced + maintenance until every task of ``owners`` is terminal."""
    began = time.monotonic()
    deadline = began + deadline_s
    settled = Settled()
    conn = await asyncpg.connect(site.database_url)
    try:
        while await conn.fetchval(ACTIVE, owners) and time.monotonic() < deadline:
            # Wait until nothing is under way, so only stranded rows are moved.
            await _poll(lambda: _none(conn, MOVING, owners, SETTLE_STALE), deadline)
            if not await conn.fetchval(ACTIVE, owners):
                break
            settled.rounds += 1
            await advance_clocks(conn, owners, SETTLE_STALE)
            await maintainer.run()
        settled.active_left = await conn.fetchval(ACTIVE, owners)
        # Results reserved by attempts that died before publishing: aged past their settle time, purged.
        await conn.execute(AGE_UNPUBLISHED, owners)
        while (left := await conn.fetchval(UNPUBLISHED, owners)) and time.monotonic() < deadline:
            before = left
            await maintainer.run()
            if await conn.fetchval(UNPUBLISHED, owners) == before:
                break  # maintenance purges nothing more: a finding, not a loop
        settled.unpublished_left = await conn.fetchval(UNPUBLISHED, owners)
    finally:
        await conn.close()
    settled.seconds = round(time.monotonic() - began, 1)
    return settled


async def _none(conn: asyncpg.Connection, query: str, *args) -> bool:
    return await conn.fetchval(query, *args) == 0
