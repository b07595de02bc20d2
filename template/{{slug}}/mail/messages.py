"""The worker's message for one outbox row, ``{mailId}``, on the site's task queue (a leaf, like
``tasks.messages``: the web process sends by name, only the worker declares the actor)."""

from __future__ import annotations

import logging
from uuid import UUID

import dramatiq

from ..tasks.messages import TaskQueue

log = logging.getLogger(__name__)

SEND_MAIL_ACTOR = "send_mail"


async def notify(queue: TaskQueue | None, mail_id: UUID | None) -> None:
    """Ask the worker to send the committed mail now. Never fails: without a broker, or when the send
    fails, maintenance sends the row once it is due (outbox.WORKER_FIRST_SECONDS)."""
    if queue is None or mail_id is None:
        return
    message = dramatiq.Message(queue_name=queue.queue_name, actor_name=SEND_MAIL_ACTOR, args=(),
                               kwargs={"mailId": str(mail_id)}, options={})
    try:
        await queue.enqueue(message)
    except Exception as error:
        log.warning("mail %s: message not sent (%s); maintenance sends the mail", mail_id, type(error).__name__)


def parse_mail_message(kwargs: dict) -> UUID | None:
    try:
        return UUID(str(kwargs["mailId"]))
    except (KeyError, ValueError, TypeError):
        return None
