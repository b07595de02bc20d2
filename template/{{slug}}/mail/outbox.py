"""The outbox table: written in the transaction of what caused a mail, claimed one attempt at a time.

States: ``pending`` (due at ``next_attempt_at``) → ``sending`` (one sender's lease) → ``sent``, or back
to ``pending`` after a backoff when the server did not take it, or ``failed`` for good (refused,
attempts spent, or an outcome nobody can know: SEND_UNCERTAIN). Every move is one statement whose
WHERE is its precondition (queries.sql); only the lease's holder finishes a row.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import asyncpg
import msgspec

from ..db.queries import Queries

Q = Queries.load(__package__)

MailKind = Literal["reset", "verify", "email_change", "email_changed"]

MAX_ATTEMPTS = 6
# One attempt's lease: well past an attempt's longest run (each SMTP step gives up after 20 s).
LEASE_SECONDS = 120
# The first backoff (then 2x, 4x, ...): 30 s, 1, 2, 4, 8 minutes.
BACKOFF_SECONDS = 30.0
# Maintenance leaves a due row to the worker's message this long.
WORKER_FIRST_SECONDS = 20
KEEP_DAYS = 30


class Claimed(msgspec.Struct, frozen=True):
    id: UUID
    account_id: UUID
    recipient: str
    kind: MailKind
    params: dict
    token_seed: bytes | None
    attempts: int
    max_attempts: int


def _claimed(row: asyncpg.Record) -> Claimed:
    return Claimed(**dict(row))


async def enqueue(conn: asyncpg.Connection, account_id: UUID | None, recipient: str, kind: MailKind,
                  seed: bytes | None = None, params: dict | None = None) -> UUID | None:
    """A mail for after the caller's commit. With no account, the same statement runs and writes
    nothing (None): a reset asked for an unknown address costs what one for a known address does."""
    return await conn.fetchval(Q.enqueue, account_id, recipient, kind, params or {}, seed, MAX_ATTEMPTS)


async def claim(pool: asyncpg.Pool, mail_id: UUID, lease: UUID) -> Claimed | None:
    row = await pool.fetchrow(Q.claim, mail_id, lease, LEASE_SECONDS)
    return _claimed(row) if row else None


async def claim_due(pool: asyncpg.Pool, lease: UUID, batch: int) -> list[Claimed]:
    rows = await pool.fetch(Q.claim_due, batch, lease, LEASE_SECONDS, WORKER_FIRST_SECONDS)
    return [_claimed(row) for row in rows]


async def mark_sent(pool: asyncpg.Pool, mail_id: UUID, lease: UUID) -> bool:
    return await pool.fetchval(Q.mark_sent, mail_id, lease) is not None


async def put_back(pool: asyncpg.Pool, mail_id: UUID, lease: UUID, code: str) -> int | None:
    """Pending again after the backoff (the seconds until then), or None once failed for good."""
    row = await pool.fetchrow(Q.put_back, mail_id, lease, BACKOFF_SECONDS, code)
    return row["wait"] if row and row["status"] == "pending" else None


async def fail(pool: asyncpg.Pool, mail_id: UUID, lease: UUID, code: str) -> None:
    await pool.execute(Q.fail, mail_id, lease, code)


async def abandon_expired_leases(pool: asyncpg.Pool, batch: int) -> int:
    return len(await pool.fetch(Q.abandon_expired_leases, batch))


async def purge_finished(pool: asyncpg.Pool, batch: int) -> int:
    status = await pool.execute(Q.purge_finished, batch, KEEP_DAYS)
    return int(status.split()[-1])
