"""The site's Dramatiq actors, declared on the site's own broker (never a global one).

``run_task`` consumes the task queue. Unknown infrastructure errors are
retried by Dramatiq in exactly 10 s, at most 3 times; then the message goes
to ``dead_letter`` on the site's dead-letter queue (``on_retry_exhausted``),
which itself retries up to 10 times.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from uuid import UUID

import dramatiq
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import AsyncIO, Middleware

from ..runtime import Runtime, open_runtime
from ..settings import Settings
from .delivery import RUN_TASK_ACTOR

log = logging.getLogger(__name__)

DEAD_LETTER_ACTOR = "dead_letter"
INFRA_RETRY_DELAY_MS = 10_000
INFRA_RETRIES = 3
DEAD_LETTER_RETRIES = 10

_runtime: Runtime | None = None


def current_runtime() -> Runtime:
    if _runtime is None:
        raise RuntimeError("the worker's runtime is not open")
    return _runtime


def parse_task_message(kwargs: dict) -> tuple[UUID, int] | None:
    """``{taskId, dispatchVersion}`` or None for anything else."""
    try:
        task_id = UUID(str(kwargs["taskId"]))
        version = kwargs["dispatchVersion"]
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        return None
    return task_id, version


async def run_task(**kwargs) -> None:
    from .consumer import execute

    parsed = parse_task_message(kwargs)
    if parsed is None:
        log.warning("task message without a valid taskId/dispatchVersion; dropped")
        return
    try:
        outcome = await execute(current_runtime(), *parsed)
    except Exception as error:
        # The provider's words stay out of logs and out of the message: only the type.
        log.warning("task %s: %s; redelivery in %d s", parsed[0], type(error).__name__, INFRA_RETRY_DELAY_MS // 1000)
        raise dramatiq.Retry(delay=INFRA_RETRY_DELAY_MS) from None
    log.info("task %s v%d: %s", parsed[0], parsed[1], outcome)


async def dead_letter(message: dict, retry_info: dict | None = None) -> None:
    from .dead_letters import receive

    try:
        await receive(current_runtime(), message)
    except Exception as error:
        log.warning("dead letter: %s; redelivery in %d s", type(error).__name__, INFRA_RETRY_DELAY_MS // 1000)
        raise dramatiq.Retry(delay=INFRA_RETRY_DELAY_MS) from None


def declare_actors(broker: dramatiq.Broker, settings: Settings) -> None:
    site = settings.site
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


class SiteRuntime(Middleware):
    """Opens the site's runtime (pool, storage) on the worker's event loop, and closes it last."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stack: AsyncExitStack | None = None

    async def _open(self, broker: dramatiq.Broker) -> Runtime:
        self._stack = AsyncExitStack()
        return await self._stack.enter_async_context(open_runtime(self.settings, broker=broker))

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        # Worker.start starts the threads that take messages between the before and after boot
        # hooks: opened any later, the first messages would find no runtime.
        global _runtime
        _runtime = get_event_loop_thread().run_coroutine(self._open(broker))

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        global _runtime
        if self._stack is not None:
            get_event_loop_thread().run_coroutine(self._stack.aclose())
        _runtime = None

    @staticmethod
    def install(broker: dramatiq.Broker, settings: Settings) -> None:
        # After AsyncIO: "before" hooks run in middleware order, "after" hooks in reverse, so its
        # loop runs when our boot hook opens the runtime and still runs when our shutdown hook closes it.
        broker.add_middleware(SiteRuntime(settings), after=AsyncIO)
