"""The Dramatiq broker for ``BROKER_URL``: Redis/Valkey or RabbitMQ, Dramatiq's own brokers."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import dramatiq
import redis
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO

from ..settings import Settings
from .task_consumer import TaskConsumer, wake_channel

log = logging.getLogger(__name__)

# A Redis consumer that finds no message it may take polls again after 5, 10, 20 ... ms, doubling
# up to its idle bound. At the worker's 1000 ms the first task after a quiet spell waited up to a
# second (docs/benchmarks.md, "The 1-worker stalls"); the task queue's consumer is woken by each
# message sent (task_consumer.py) and still polls at this bound, for a wake-up that did not reach it.
# The dead-letter and delay queues keep the worker's bound: nobody waits on them, and each consumer
# polling ten times as often costs an idle worker CPU.
TASK_QUEUE_IDLE_MS = 100


class SiteRedisBroker(RedisBroker):
    """Dramatiq's Redis broker whose task queue wakes its consumers (``task_consumer.TaskConsumer``)."""

    def __init__(self, *, task_queue: str, **options) -> None:
        super().__init__(**options)
        self.task_queue = task_queue
        self.wake_channel = wake_channel(self.namespace, task_queue)
        self._may_publish = True

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000):
        if queue_name != self.task_queue:
            return super().consume(queue_name, prefetch, timeout)
        return TaskConsumer(self, queue_name, prefetch, min(timeout, TASK_QUEUE_IDLE_MS), self.wake_channel)

    def enqueue(self, message: dramatiq.Message, *, delay: int | None = None) -> dramatiq.Message:
        enqueued = super().enqueue(message, delay=delay)
        if enqueued.queue_name == self.task_queue:  # a delayed message is woken for when it is due
            self._wake_consumers()
        return enqueued

    def _wake_consumers(self) -> None:
        # The message is in the queue whatever happens here: a consumer that is not woken polls.
        if not self._may_publish:
            return
        try:
            self.client.publish(self.wake_channel, b"")
        except redis.ResponseError as refused:  # NOPERM: a broker user from before the wake-ups
            self._may_publish = False
            log.warning("the broker refused to publish to %s (%s); the worker polls %s instead",
                        self.wake_channel, type(refused).__name__, self.task_queue)
        except redis.RedisError as error:
            log.warning("wake-up for %s not published (%s); the worker polls", self.task_queue, type(error).__name__)


def create_broker(settings: Settings) -> dramatiq.Broker | None:
    """The site's broker, or None when BROKER_URL is not set. Never installed globally."""
    url = settings.env.broker_url
    if not url:
        return None
    scheme = urlsplit(url).scheme
    if scheme in ("redis", "rediss"):
        # The namespace keeps this site's queues apart from other sites on the same server.
        broker: dramatiq.Broker = SiteRedisBroker(
            task_queue=settings.site.task_queue,
            url=url,
            namespace=settings.site.broker_namespace,
            socket_timeout=10,
            socket_connect_timeout=5,
        )
    else:
        broker = RabbitmqBroker(url=url, confirm_delivery=True)
    broker.add_middleware(AsyncIO())
    return broker


def _ping(broker: dramatiq.Broker) -> None:
    if isinstance(broker, RedisBroker):
        broker.client.ping()
    else:
        import pika

        # A fresh connection: the broker's own ones are per-thread and long-lived.
        pika.BlockingConnection(parameters=broker.parameters).close()


async def broker_reachable(broker: dramatiq.Broker) -> bool:
    try:
        await asyncio.wait_for(asyncio.to_thread(_ping, broker), timeout=5)
    except Exception:
        return False
    return True
