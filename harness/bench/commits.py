"""Counting the commits a batch of tasks costs, as the PostgreSQL server counts them.

Two counters, read from a connection to another database of the same server
(so reading them adds nothing to the site's own counts):

- write commits: transaction ids handed out (``pg_current_snapshot()``'s xmax)
  — exact and immediate, but server-wide, so every other database must be idle;
- all commits: the site database's ``pg_stat_database.xact_commit``, read-only
  transactions included. Backends publish these counts lazily — at most ten
  seconds after they go idle — so the counter is read only after the site has
  been idle that long, and an idle probe measures what an idle site commits.
"""

from __future__ import annotations

import asyncio
import time

import asyncpg
import msgspec

from .measure import per_task
from .results import Commits

# PostgreSQL flushes an idle backend's pending statistics after PGSTAT_IDLE_INTERVAL (10 s).
SETTLE_SECONDS = 11.0
IDLE_PROBE_SECONDS = 3.0

COUNTERS = """
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_xid,
       (SELECT xact_commit FROM pg_stat_database WHERE datname = $1) AS xact_commit
"""


class Counters(msgspec.Struct, frozen=True):
    next_xid: int
    xact_commit: int
    at: float  # monotonic seconds


async def read(server: asyncpg.Connection, database: str) -> Counters:
    row = await server.fetchrow(COUNTERS, database)
    return Counters(next_xid=row["next_xid"], xact_commit=row["xact_commit"], at=time.monotonic())


class Window(msgspec.Struct, frozen=True):
    start: Counters
    idle_rate: float  # commits per second of the idle site


async def open_window(server: asyncpg.Connection, database: str) -> Window:
    """Wait until the site's earlier work is counted, measure its idle rate, and start counting."""
    await asyncio.sleep(SETTLE_SECONDS)
    before = await read(server, database)
    await asyncio.sleep(IDLE_PROBE_SECONDS)
    start = await read(server, database)
    return Window(start=start, idle_rate=(start.xact_commit - before.xact_commit) / (start.at - before.at))


async def close_window(server: asyncpg.Connection, database: str, window: Window, *, site: str, tasks: int,
                       poll_queries: int) -> Commits:
    """Read the counters after the batch: xids at once, xact_commit once the site has been idle long enough."""
    ended = await read(server, database)
    await asyncio.sleep(SETTLE_SECONDS)
    settled = await read(server, database)
    noise = window.idle_rate * (settled.at - window.start.at)  # the whole span xact_commit covers
    writes = ended.next_xid - window.start.next_xid
    everything = settled.xact_commit - window.start.xact_commit
    return Commits(
        site=site,
        tasks=tasks,
        write_commits=writes,
        all_commits=everything,
        poll_queries=poll_queries,
        idle_noise=round(noise, 1),
        write_per_task=per_task(writes, 0, tasks),
        all_per_task=per_task(everything, poll_queries + noise, tasks),
    )
