"""Add to and read the durable counts (tally/queries.sql)."""

from __future__ import annotations

import asyncio
import logging
from enum import StrEnum

import asyncpg
import msgspec

from ..db.pool import UNAVAILABLE_ERRORS, transaction
from ..db.queries import Queries

log = logging.getLogger(__name__)

Q = Queries.load(__package__)

# A count that cannot be written in this long is given up: it is never worth holding back the
# answer of the request (or the task) whose failure it counts.
QUIET_SECONDS = 1.0


class Event(StrEnum):
    """What is counted; the database's CHECK event_tally_known lists the same names (0017)."""

    MAINTENANCE_PASS = "maintenance_pass"
    LEASE_RECOVERED = "lease_recovered"
    STORAGE_ERROR = "storage_error"
    DEAD_LETTER_APPLIED = "dead_letter_applied"
    DEAD_LETTER_DEFERRED = "dead_letter_deferred"
    DEAD_LETTER_STALE = "dead_letter_stale"
    DEAD_LETTER_MISSING = "dead_letter_missing"
    DEAD_LETTER_INVALID = "dead_letter_invalid"
    # a submit's message, counted with its task, that the broker then refused (migration 0024)
    MESSAGE_UNSENT = "message_unsent"


class Tallies(msgspec.Struct, frozen=True):
    counts: dict[Event, int]  # every event, 0 if never counted
    messages_sent: int  # the sequence (task_submit's call, count_message_sent) less MESSAGE_UNSENT
    claims: int  # task_attempt rows ever inserted (their identity sequence)
    last_pass_at: float | None  # epoch seconds of the last maintenance pass; None before the first
    last_pass_failed_steps: int


async def add(conn: asyncpg.Connection | asyncpg.Pool, event: Event, n: int = 1) -> None:
    """Count ``n`` events; on a connection inside a transaction, the count commits with it."""
    if n > 0:
        await conn.execute(Q.add, event.value, n)


async def add_quietly(pool: asyncpg.Pool, event: Event, n: int = 1) -> None:
    """Count after the fact, on its own: a database that is down or busy loses the count (logged),
    never the caller's answer."""
    try:
        async with asyncio.timeout(QUIET_SECONDS):
            await add(pool, event, n)
    except (asyncpg.PostgresError, *UNAVAILABLE_ERRORS) as error:
        log.warning("%s not counted: %s", event.value, type(error).__name__)


async def count_message_sent(pool: asyncpg.Pool) -> None:
    """One task message re-sent, counted without a write transaction; given up like ``add_quietly``. (A
    submit's message is counted in its own call: tasks/delivery.py.)"""
    try:
        async with asyncio.timeout(QUIET_SECONDS):
            await pool.fetchval(Q.count_message_sent)
    except (asyncpg.PostgresError, *UNAVAILABLE_ERRORS) as error:
        log.warning("message sent not counted: %s", type(error).__name__)


async def record_pass(pool: asyncpg.Pool, failed_steps: int) -> None:
    """The end of a maintenance pass: its time, and one more pass counted."""
    async with transaction(pool) as conn:
        await conn.execute(Q.record_pass, failed_steps)
        await add(conn, Event.MAINTENANCE_PASS)


async def read(conn: asyncpg.Connection) -> Tallies:
    totals = {row["event"]: row["n"] for row in await conn.fetch(Q.totals)}
    last = await conn.fetchrow(Q.last_pass)
    sequences = await conn.fetchrow(Q.sequence_totals)
    counts = {event: totals.get(event.value, 0) for event in Event}
    return Tallies(
        counts=counts,
        # Read after the events: each count taken back was added before, by its submit's call.
        messages_sent=sequences["messages_sent"] - counts[Event.MESSAGE_UNSENT],
        claims=sequences["claims"],
        last_pass_at=last["finished_at"] if last else None,
        last_pass_failed_steps=last["failed_steps"] if last else 0,
    )
