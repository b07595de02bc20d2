"""Sending outbox rows: one row for the worker's message, due rows for maintenance.

Each attempt claims its row with a lease first (outbox.claim), so however many senders race —
the worker's message, a duplicate of it, maintenance — one attempt runs per row at a time, and a row
handed over (or possibly handed over) is never sent again. The body is composed here, after the
commit, with this process's own origin and name: a site's mails link to that site only.
"""

from __future__ import annotations

import logging
import uuid
from typing import Literal
from uuid import UUID

import asyncpg

from ..settings import Settings
from . import outbox, smtp
from .compose import compose
from .errors import SendFailed
from .links import token_from_seed

log = logging.getLogger(__name__)

Outcome = Literal["sent", "retry", "failed", "skipped"]


async def _attempt(pool: asyncpg.Pool, settings: Settings, row: outbox.Claimed, lease: UUID) -> tuple[Outcome, int]:
    """Send one claimed row and finish it: the outcome, and for "retry" the seconds until it is due."""
    token = token_from_seed(settings.require_secret_key(), row.token_seed) if row.token_seed else None
    message = compose(mail_id=row.id, kind=row.kind, site_name=settings.site.name, origin=settings.origin,
                      sender=settings.policy.mail.sender, recipient=row.recipient, token=token, params=row.params)
    try:
        await smtp.send(settings.env.smtp_url or "", settings.policy.mail.sender, row.recipient, message)
    except SendFailed as failure:
        log.warning("mail %s (%s): attempt %d failed: %s", row.id, row.kind, row.attempts, failure.code)
        if failure.retryable:
            wait = await outbox.put_back(pool, row.id, lease, failure.code)
            return ("retry", wait) if wait is not None else ("failed", 0)
        await outbox.fail(pool, row.id, lease, failure.code)
        return "failed", 0
    if not await outbox.mark_sent(pool, row.id, lease):
        log.warning("mail %s: sent, but its lease had ended", row.id)
    log.info("mail %s (%s) sent", row.id, row.kind)
    return "sent", 0


async def send_one(pool: asyncpg.Pool, settings: Settings, mail_id: UUID) -> tuple[Outcome, int]:
    """The worker's attempt at one row: "skipped" when it is not due, held by another sender, finished,
    or when the site has no SMTP_URL (the row waits, its attempts untouched)."""
    if not settings.env.smtp_url:
        return "skipped", 0
    lease = uuid.uuid4()
    row = await outbox.claim(pool, mail_id, lease)
    if row is None:
        return "skipped", 0
    return await _attempt(pool, settings, row, lease)


async def send_due(pool: asyncpg.Pool, settings: Settings, batch: int) -> int:
    """Maintenance: send rows the worker left (no message, a lost one, a backoff over); how many went."""
    if not settings.env.smtp_url:
        return 0
    lease = uuid.uuid4()
    sent = 0
    for row in await outbox.claim_due(pool, lease, batch):
        outcome, _ = await _attempt(pool, settings, row, lease)
        sent += outcome == "sent"
    return sent
