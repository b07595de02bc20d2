"""What the task tables say of the site at this moment, for /metrics (read at each scrape, so every
web process answers the same). Every statement reads through an index a bounded set of rows — the
active tasks, the last hour's finished ones — never the whole history, which grows without end."""

from __future__ import annotations

import asyncpg
import msgspec

from .sql import Q

# Upper bounds (seconds) of the claim-to-publish buckets, and the column of queries.sql that counts each.
DURATION_BUCKETS = [("0.05", "le_0_05"), ("0.1", "le_0_1"), ("0.25", "le_0_25"), ("0.5", "le_0_5"), ("1.0", "le_1"),
                    ("2.5", "le_2_5"), ("5.0", "le_5"), ("15.0", "le_15"), ("60.0", "le_60")]


class Figures(msgspec.Struct, frozen=True):
    active: dict[str, int]  # active tasks by status
    finished_last_hour: dict[str, int]  # by terminal status
    oldest_waiting_seconds: float  # 0 when nothing waits
    # Tasks that succeeded in the last hour, claim to publish: cumulative counts per bucket bound, all, their sum.
    durations: list[tuple[str, int]]
    succeeded_last_hour: int
    seconds_total: float


async def figures(conn: asyncpg.Connection) -> Figures:
    durations = await conn.fetchrow(Q.claim_to_publish_last_hour)
    return Figures(
        active={row["status"]: row["n"] for row in await conn.fetch(Q.active_by_status)},
        finished_last_hour={row["status"]: row["n"] for row in await conn.fetch(Q.finished_last_hour_by_status)},
        oldest_waiting_seconds=await conn.fetchval(Q.oldest_waiting),
        durations=[(bound, durations[column]) for bound, column in DURATION_BUCKETS],
        succeeded_last_hour=durations["total"],
        seconds_total=durations["sum"],
    )
