"""The site's Dramatiq actors, declared on the site's own broker (never a global one).

``run_task`` consumes the task queue. Unknown infrastructure errors are
retried by Dramatiq in exactly 10 s, at most 3 times; then the message goes
to ``dead_letter`` on the site's dead-letter queue (``on_retry_exhausted``),
which itself retries up to 10 times. Only the worker declares them: senders
enqueue messages by name (``messages.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import dramatiq

from ..runtime import Runtime
from ..settings import SiteIdentity
from .consumer import execute
from .dead_letters import receive
from .messages import DEAD_LETTER_ACTOR, RUN_TASK_ACTOR, parse_task_message

log = logging.getLogger(__name__)

INFRA_RETRY_DELAY_MS = 10_000
INFRA_RETRIES = 3
DEAD_LETTER_RETRIES = 10


@contextmanager
def _redelivered_on_failure(what: str) -> Iterator[None]:
    """Any error: Dramatiq redelivers the message in 10 s. The provider's words stay out of logs
    and out of the message: only the error's type is logged."""
    try:
        yield
    except Exception as error:
        log.warning("%s: %s; redelivery in %d s", what, type(error).__name__, INFRA_RETRY_DELAY_MS // 1000)
        raise dramatiq.Retry(delay=INFRA_RETRY_DELAY_MS) from None


def declare_actors(broker: dramatiq.Broker, site: SiteIdentity, opened: Callable[[], Runtime]) -> None:
    """``opened`` gives the worker's open runtime (pool, object store) when a message arrives."""

    async def run_task(**kwargs) -> None:
        parsed = parse_task_message(kwargs)
        if parsed is None:
            log.warning("task message without a valid taskId/dispatchVersion; dropped")
            return
        runtime = opened()
        with _redelivered_on_failure(f"task {parsed[0]}"):
            outcome = await execute(runtime.pool, runtime.objects, runtime.settings.policy.files, *parsed)
        log.info("task %s v%d: %s", parsed[0], parsed[1], outcome)

    async def dead_letter(message: dict, retry_info: dict | None = None) -> None:
        with _redelivered_on_failure("dead letter"):
            await receive(opened().pool, message)

    dramatiq.actor(
        run_task,
        broker=broker,
        actor_name=RUN_TASK_ACTOR,
        queue_name=site.task_queue,
        max_retries=INFRA_RETRIES,
        on_retry_exhausted=DEAD_LETTER_ACTOR,
    )
    dramatiq.actor(
        dead_letter,
        broker=broker,
        actor_name=DEAD_LETTER_ACTOR,
        queue_name=site.dead_queue,
        max_retries=DEAD_LETTER_RETRIES,
    )
