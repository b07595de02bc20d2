"""What the task tables say of the whole site at this moment, for /metrics (read at each scrape,
so every web process answers the same)."""

from __future__ import annotations

import asyncpg
import msgspec

from .sql import Q

# Upper bounds (seconds) of the claim-to-publish buckets, and the column of queries.sql that counts each.
DURATION_BUCKETS = [("0.05", "le_0_05"), ("0.1", "le_0_1"), ("0.25", "le_0_25"), ("0.5", "le_0_5"), ("1.0", "le_1"),
                    ("2.5", "le_2_5"), ("5.0", "le_5"), ("15.0", "le_15"), ("60.0", "le_60")]


class Figures(msgspec.Struct, frozen=True):
    by_status: dict[str, int]
    # Successful attempts, claim to publish: cumulative counts per bucket bound, all of them, their sum.
    durations: list[tuple[str, int]]
    succeeded_attempts: int
    seconds_total: float
    sends: int  # dispatch versions spent
    claims: int  # attempts spent
    dead_letters: dict[str, int]  # receipts by class


async def figures(conn: asyncpg.Connection) -> Figures:
    by_status = {row["status"]: row["n"] for row in await conn.fetch(Q.tasks_by_status)}
    durations = await conn.fetchrow(Q.claim_to_publish)
    totals = await conn.fetchrow(Q.delivery_totals)
    dead = {row["classification"]: row["n"] for row in await conn.fetch(Q.dead_letters_by_class)}
    return Figures(
        by_status=by_status,
        durations=[(bound, durations[column]) for bound, column in DURATION_BUCKETS],
        succeeded_attempts=durations["total"],
        seconds_total=durations["sum"],
        sends=totals["sends"],
        claims=totals["claims"],
        dead_letters=dead,
    )
