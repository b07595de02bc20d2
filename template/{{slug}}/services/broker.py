"""The Dramatiq broker for ``BROKER_URL``: Redis/Valkey or RabbitMQ, Dramatiq's own brokers."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO

from ..settings import Settings

# A Redis consumer that finds no message it may take (its queue empty, or its prefetch all held)
# sleeps 5, 10, 20 ... ms, doubling up to its idle bound, and a message sent meanwhile waits out
# the sleep. At the worker's 1000 ms the first task after a quiet spell waited up to a second
# (docs/benchmarks.md, "The 1-worker stalls"); the task queue's consumer is bounded at this
# instead. The dead-letter and delay queues keep the worker's bound: nobody waits on them, and
# each consumer polling ten times as often costs an idle worker CPU.
TASK_QUEUE_IDLE_MS = 100


class SiteRedisBroker(RedisBroker):
    """Dramatiq's Redis broker whose consumer of ``task_queue`` backs off to TASK_QUEUE_IDLE_MS at most."""

    def __init__(self, *, task_queue: str, **options) -> None:
        super().__init__(**options)
        self.task_queue = task_queue

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000):
        if queue_name == self.task_queue:
            timeout = min(timeout, TASK_QUEUE_IDLE_MS)
        return super().consume(queue_name, prefetch, timeout)


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
