"""Delivery: the outbox between a committed task and the broker.

A sender takes a 30 s delivery lease (a fresh token), sends ``{taskId,
dispatchVersion}`` with the round's version, then marks the task ``queued`` —
only if it still holds its token. The version names the round, not the
message: whatever starts a round (submit, manual retry, lease recovery,
leaving ``retry_wait``) bumps it in its own statement, and a re-send of the
same round keeps it, so duplicates of one round race to one claim. Claim and
cancel clear the token, so a sender that is late (its send took long, its
process stalled) can never turn a running or finished task back into
``queued``. A failed send leaves the task ``pending``; maintenance re-sends
once the lease is over. Sends never spend attempts.

A send follows a commit (submit, retry, lease recovery): database trouble while
taking the lease or marking the send is logged and left to maintenance like a
failed send — the task exists, so the request that created it must not fail.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from uuid import UUID

from ..db.pool import UNAVAILABLE_ERRORS
from ..db.queries import Queries
from ..runtime import Runtime
from .states import DELIVERY_LEASE_SECONDS, UNCLAIMED_RESEND_SECONDS

Q = Queries.load(__package__)
log = logging.getLogger(__name__)

RUN_TASK_ACTOR = "run_task"
SEND_TIMEOUT = 10.0


async def send(runtime: Runtime, task_id: UUID, dispatch_version: int) -> None:
    """Put the message on the site's task queue (the broker clients are blocking: off the loop)."""
    actor = runtime.broker.get_actor(RUN_TASK_ACTOR)
    await asyncio.wait_for(
        asyncio.to_thread(actor.send, taskId=str(task_id), dispatchVersion=dispatch_version),
        timeout=SEND_TIMEOUT,
    )


async def _send_and_mark(runtime: Runtime, task_id: UUID, dispatch_version: int, token: UUID) -> bool:
    try:
        await send(runtime, task_id, dispatch_version)
    except Exception as error:
        log.warning("task %s: send failed (%s); maintenance re-sends it", task_id, type(error).__name__)
        return False
    try:
        await runtime.pool.execute(Q.mark_queued, task_id, token)
    except UNAVAILABLE_ERRORS as error:
        # Sent but not marked: still pending under our lease; after it, maintenance re-sends the same round.
        log.warning("task %s: sent, queued mark failed (%s)", task_id, type(error).__name__)
    return True


async def dispatch(runtime: Runtime, task_id: UUID) -> bool:
    """Send a waiting task now if no other sender holds its delivery lease. True if sent."""
    token = uuid.uuid4()
    try:
        version = await runtime.pool.fetchval(Q.take_delivery_lease, task_id, token, DELIVERY_LEASE_SECONDS)
    except UNAVAILABLE_ERRORS as error:
        log.warning("task %s: delivery lease not taken (%s); maintenance sends it", task_id, type(error).__name__)
        return False
    if version is None:
        return False
    return await _send_and_mark(runtime, task_id, version, token)


async def resend_due(runtime: Runtime, batch: int) -> int:
    """Maintenance: pending tasks nobody is sending, queued ones unclaimed for 2 minutes, due retry_wait."""
    rows = await runtime.pool.fetch(Q.lease_due_deliveries, batch, DELIVERY_LEASE_SECONDS, UNCLAIMED_RESEND_SECONDS)
    sent = 0
    for row in rows:
        sent += await _send_and_mark(runtime, row["id"], row["dispatch_version"], row["delivery_token"])
    return sent
