"""The worker's ``send_mail`` actor, on the site's task queue.

One attempt per message; a row the server did not take is put back with its backoff, and the
message retried after that wait (maintenance would also find it). Database trouble is retried by
Dramatiq in 10 s; only the error's type is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import dramatiq

from ..runtime import Runtime
from ..settings import SiteIdentity
from .delivery import send_one
from .messages import SEND_MAIL_ACTOR, parse_mail_message
from .outbox import MAX_ATTEMPTS

log = logging.getLogger(__name__)

INFRA_RETRY_DELAY_MS = 10_000


def declare_mail_actor(broker: dramatiq.Broker, site: SiteIdentity, opened: Callable[[], Runtime]) -> None:
    async def send_mail(**kwargs) -> None:
        mail_id = parse_mail_message(kwargs)
        if mail_id is None:
            log.warning("mail message without a valid mailId; dropped")
            return
        runtime = opened()
        try:
            outcome, wait = await send_one(runtime.pool, runtime.settings, mail_id)
        except Exception as error:
            log.warning("mail %s: %s; redelivery in %d s", mail_id, type(error).__name__, INFRA_RETRY_DELAY_MS // 1000)
            raise dramatiq.Retry(delay=INFRA_RETRY_DELAY_MS) from None
        if outcome == "retry":
            raise dramatiq.Retry(delay=(wait + 1) * 1000)  # due by then: the claim needs it

    dramatiq.actor(send_mail, broker=broker, actor_name=SEND_MAIL_ACTOR, queue_name=site.task_queue,
                   max_retries=MAX_ATTEMPTS + 3)
