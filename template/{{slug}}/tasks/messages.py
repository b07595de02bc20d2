"""The task messages on the broker: their actor names, the body ``{taskId, dispatchVersion}``, sending
one to the site's task queue and reading one back.

A leaf: the web process and maintenance send with it, the worker's actors and the dead-letter
consumer read with it. Sending needs no actor: the message names its actor and queue, and the
broker's ``enqueue`` is what ``Actor.send`` calls too.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any
from uuid import UUID

import dramatiq
import msgspec

from ..services.broker import AsyncSender

RUN_TASK_ACTOR = "run_task"
DEAD_LETTER_ACTOR = "dead_letter"
SEND_TIMEOUT = 10.0


class TaskQueue:
    """The site's task queue on the site's own broker."""

    def __init__(self, broker: dramatiq.Broker, queue_name: str, sender: AsyncSender | None = None) -> None:
        self.broker = broker
        self.queue_name = queue_name
        self.sender = sender  # None: the broker's blocking client, off the loop

    async def send(self, task_id: UUID, dispatch_version: int) -> None:
        """Put one task's message on the queue."""
        await self.enqueue(dramatiq.Message(
            queue_name=self.queue_name, actor_name=RUN_TASK_ACTOR, args=(),
            kwargs={"taskId": str(task_id), "dispatchVersion": dispatch_version}, options={},
        ))

    async def enqueue(self, message: dramatiq.Message) -> None:
        async with asyncio.timeout(SEND_TIMEOUT):
            if self.sender is not None:
                await self.sender.enqueue(message)
            else:
                await asyncio.to_thread(self.broker.enqueue, message)


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


def message_identity(message: dict[str, Any]) -> tuple[str, str]:
    """The (queue, message id) a dead letter is receipted under."""
    queue = message.get("queue_name")
    message_id = message.get("message_id")
    if isinstance(queue, str) and isinstance(message_id, str) and 0 < len(queue) <= 200 and 0 < len(message_id) <= 200:
        return queue.removesuffix(".DQ").removesuffix(".XQ"), message_id
    # Without an id of its own, a digest of the message stands in (the body itself is never kept).
    return "unknown", "sha256:" + hashlib.sha256(msgspec.json.encode(message, order="sorted")).hexdigest()
