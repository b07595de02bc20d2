"""The dead-letter consumer: messages whose Dramatiq retries ran out.

One transaction locks the task, stores one receipt per (queue, message id)
and applies the transition; the message is acknowledged only after it
commits. Classes:

``applied``   the task was still waiting for this delivery → failed / DELIVERY_EXHAUSTED, pin released;
              a hold stays while the owner may retry (docs/charges.md: a retryable failure keeps it,
              cancel abandons and refunds), else it is refunded
``deferred``  the task is running: its lease stands, a real result may still publish
``stale``     an older dispatch version, or a task already past waiting
``missing``   a well-formed task id with no task (the id is not stored)
``invalid``   not a task message at all

A receipt holds only the queue, the message id, the verified task reference,
the dispatch version, the time and the class — never the body, inputs,
captcha tokens or provider errors.
"""

from __future__ import annotations

import logging
from typing import Any

import asyncpg

from .. import tally
from ..auth import accounts
from ..db.pool import transaction
from ..tally import Event
from . import billing
from .messages import message_identity, parse_task_message
from .sql import Q
from .states import MANUAL_RETRY, ErrorCode, TaskStatus

log = logging.getLogger(__name__)


def classify(status: str, task_version: int, message_version: int) -> str:
    if message_version != task_version:
        return "stale"
    if status in (TaskStatus.PENDING, TaskStatus.QUEUED):
        return "applied"
    if status == TaskStatus.RUNNING:
        return "deferred"
    return "stale"


async def receive(pool: asyncpg.Pool, message: dict[str, Any]) -> str:
    queue, message_id = message_identity(message if isinstance(message, dict) else {})
    kwargs = message.get("kwargs") if isinstance(message, dict) else None
    parsed = parse_task_message(kwargs) if isinstance(kwargs, dict) else None
    async with transaction(pool) as conn:
        if parsed is None:
            classification, task_id, version = "invalid", None, None
        else:
            task_id, version = parsed
            owner = await conn.fetchval(Q.task_owner, task_id)
            if owner is None:
                classification, task_id, version = "missing", None, None
            else:
                await accounts.lock(conn, owner)
                task = await conn.fetchrow(Q.lock_task, task_id)
                classification = classify(task["status"], task["dispatch_version"], version)
        if await conn.fetchval(Q.insert_dead_letter, queue, message_id, task_id, version, classification) is None:
            log.info("dead letter %s/%s: already received", queue, message_id)
            return "duplicate"
        await tally.add(conn, Event(f"dead_letter_{classification}"))
        if classification == "applied":
            await conn.execute(Q.dead_letter_waiting, task_id, version)
            await conn.execute(Q.release_pin, task_id)
            # docs/charges.md: a failure the owner may retry keeps its hold (cancel abandons it and refunds).
            if not (ErrorCode.DELIVERY_EXHAUSTED in MANUAL_RETRY and task["attempt_count"] < task["max_attempts"]):
                await billing.refund(conn, task_id)
        elif classification == "deferred":
            await conn.execute(Q.mark_dead_lettered, task_id)
    log.warning("dead letter %s/%s: %s", queue, message_id, classification)
    return classification
