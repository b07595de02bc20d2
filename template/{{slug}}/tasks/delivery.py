"""Delivery: the outbox between a committed task and the broker.

A sender holds a 30 s delivery lease (a fresh token) and sends ``{taskId,
dispatchVersion}`` with the round's version. The version names the round, not
the message: whatever starts a round (submit, manual retry, lease recovery,
leaving ``retry_wait``) bumps it in its own statement, and a re-send of the
same round keeps it, so duplicates of one round race to one claim. Claim and
cancel clear the token, so a sender that is late (its send took long, its
process stalled) can never turn a running or finished task back. Sends never
spend attempts.

Two ways to send:

- A submit takes the lease and the ``queued`` mark in its own transaction
  (``submission.submit``), which also counts the message: after the commit it
  only sends, and writes nothing more unless the send fails — then the task goes
  back to ``pending`` under the lease with its count taken back, and maintenance
  re-sends once the lease is over. A web process that dies between the commit
  and the send leaves a ``queued`` task that no message names (counted as sent,
  as the database records it); maintenance re-sends it once it has been
  unclaimed for 2 minutes.
- Every other sender (retry, lease recovery, maintenance) takes the lease,
  sends, then marks the task ``queued`` — only if it still holds its token. A
  failed send leaves the task ``pending``; maintenance re-sends after the lease.

A send follows a commit (submit, retry, lease recovery): any database error while
taking the lease or marking the send — busy, out of reach, or an error of its own
(a full disk, a failing trigger) — is logged and left to maintenance like a failed
send: the task exists, so the request that created it must not fail.
"""

from __future__ import annotations

import logging
import uuid
from uuid import UUID

import asyncpg

from .. import tally
from ..db.pool import UNAVAILABLE_ERRORS, transaction
from .messages import TaskQueue
from .sql import Q
from .states import DELIVERY_LEASE_SECONDS, FIRST_ROUND, UNCLAIMED_RESEND_SECONDS

log = logging.getLogger(__name__)

# What the database may answer to a write that follows the commit: whatever it is, the committed
# task stands and maintenance finishes its delivery (only the error's class name is logged).
AFTER_COMMIT_ERRORS: tuple[type[BaseException], ...] = (asyncpg.PostgresError, *UNAVAILABLE_ERRORS)


async def _send_and_mark(pool: asyncpg.Pool, queue: TaskQueue, task_id: UUID, dispatch_version: int,
                         token: UUID) -> bool:
    try:
        await queue.send(task_id, dispatch_version)
    except Exception as error:
        log.warning("task %s: send failed (%s); maintenance re-sends it", task_id, type(error).__name__)
        return False
    await tally.count_message_sent(pool)
    try:
        await pool.execute(Q.mark_queued, task_id, token)
    except AFTER_COMMIT_ERRORS as error:
        # Sent but not marked: still pending under our lease; after it, maintenance re-sends the same round.
        log.warning("task %s: sent, queued mark failed (%s)", task_id, type(error).__name__)
    return True


async def send_submitted(pool: asyncpg.Pool, queue: TaskQueue, task_id: UUID, token: UUID) -> bool:
    """Send a new task's first round; its submit already marked it queued under ``token`` and counted
    its message. True if sent."""
    try:
        await queue.send(task_id, FIRST_ROUND)
    except Exception as error:
        log.warning("task %s: send failed (%s); maintenance re-sends it", task_id, type(error).__name__)
        try:
            async with transaction(pool) as conn:
                await conn.execute(Q.unsent, task_id, token)
                await tally.add(conn, tally.Event.MESSAGE_UNSENT)
        except AFTER_COMMIT_ERRORS as trouble:
            # Left queued and counted: maintenance re-sends it once it has been unclaimed for 2 minutes.
            log.warning("task %s: unsent mark failed (%s)", task_id, type(trouble).__name__)
        return False
    return True


async def dispatch(pool: asyncpg.Pool, queue: TaskQueue, task_id: UUID) -> bool:
    """Send a waiting task now if no other sender holds its delivery lease. True if sent."""
    token = uuid.uuid4()
    try:
        version = await pool.fetchval(Q.take_delivery_lease, task_id, token, DELIVERY_LEASE_SECONDS)
    except AFTER_COMMIT_ERRORS as error:
        log.warning("task %s: delivery lease not taken (%s); maintenance sends it", task_id, type(error).__name__)
        return False
    if version is None:
        return False
    return await _send_and_mark(pool, queue, task_id, version, token)


async def resend_due(pool: asyncpg.Pool, queue: TaskQueue, batch: int) -> int:
    """Maintenance: pending tasks nobody is sending, queued ones unclaimed for 2 minutes, due retry_wait."""
    rows = await pool.fetch(Q.lease_due_deliveries, batch, DELIVERY_LEASE_SECONDS, UNCLAIMED_RESEND_SECONDS)
    sent = 0
    for row in rows:
        sent += await _send_and_mark(pool, queue, row["id"], row["dispatch_version"], row["delivery_token"])
    return sent
