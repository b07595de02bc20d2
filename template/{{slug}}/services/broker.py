"""The Dramatiq broker for ``BROKER_URL``: Redis/Valkey or RabbitMQ, Dramatiq's own brokers."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import AsyncIO

from ..settings import Settings


def create_broker(settings: Settings) -> dramatiq.Broker | None:
    """The site's broker, or None when BROKER_URL is not set. Never installed globally."""
    url = settings.env.broker_url
    if not url:
        return None
    scheme = urlsplit(url).scheme
    if scheme in ("redis", "rediss"):
        # The namespace keeps this site's queues apart from other sites on the same server.
        broker: dramatiq.Broker = RedisBroker(
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
