"""The Dramatiq broker for ``BROKER_URL``: Redis/Valkey or RabbitMQ, Dramatiq's own brokers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit
from uuid import uuid4

import dramatiq
import redis
import redis.asyncio
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.common import current_millis, dq_name
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
SOCKET_TIMEOUT_S = 10
CONNECT_TIMEOUT_S = 5
SENDER_CONNECTIONS = 8


# A message put in a queue as Dramatiq's dispatch script puts it (dispatch.lua: the id on the queue's list,
# the encoded message in the queue's hash, where Dramatiq's consumers fetch it) and, given a channel, the
# task queue's wake-up published by the same call: one round trip instead of two. The wake-up is a pcall: a
# broker user that may not publish (an ACL without the channel) still enqueues, and gets 0 back.
ENQUEUE_AND_WAKE = """
redis.call("hset", KEYS[2], ARGV[1], ARGV[2])
redis.call("rpush", KEYS[1], ARGV[1])
if ARGV[3] ~= "" then
    local published = redis.pcall("publish", ARGV[3], "")
    if type(published) == "table" and published.err then
        return 0
    end
end
return 1
"""


class SiteRedisBroker(RedisBroker):
    """Dramatiq's Redis broker whose task queue wakes its consumers (``task_consumer.TaskConsumer``).

    Dramatiq's ``enqueue`` runs its dispatch script and then this broker published the wake-up: two round
    trips a message. Here one script does both (``enqueue`` for the blocking callers: a delayed message
    coming due, Dramatiq's own re-sends) and ``AsyncSender`` does it from an event loop without a
    thread's hop (the task queue's senders: the web's submit, retries, maintenance, mail).
    """

    def __init__(self, *, task_queue: str, url: str, **options) -> None:
        # Dramatiq builds its pool from the URL alone, and redis-py ignores socket options beside a pool:
        # the site's timeouts are given to the pool itself.
        pool = redis.ConnectionPool.from_url(url, socket_timeout=SOCKET_TIMEOUT_S,
                                             socket_connect_timeout=CONNECT_TIMEOUT_S)
        super().__init__(client=redis.Redis.from_pool(pool), **options)
        self.url = url
        self.task_queue = task_queue
        self.wake_channel = wake_channel(self.namespace, task_queue)
        self._may_publish = True
        self._enqueue_and_wake = self.client.register_script(ENQUEUE_AND_WAKE)

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000):
        if queue_name != self.task_queue:
            return super().consume(queue_name, prefetch, timeout)
        return TaskConsumer(self, queue_name, prefetch, min(timeout, TASK_QUEUE_IDLE_MS), self.wake_channel)

    def enqueue(self, message: dramatiq.Message, *, delay: int | None = None) -> dramatiq.Message:
        message, keys, args = self.prepare(message, delay)
        self.emit_before("enqueue", message, delay)
        self.published(self._enqueue_and_wake(keys=keys, args=args))
        self.emit_after("enqueue", message, delay)
        return message

    def prepare(self, message: dramatiq.Message, delay: int | None) -> tuple[dramatiq.Message, list, list]:
        """Dramatiq's ``enqueue`` up to its dispatch: a fresh id in the broker (a message sent again must not
        share one), a delayed message on the delay queue with its due time; then the script's keys and args."""
        message = message.copy(options={"redis_message_id": str(uuid4())})
        if delay is not None:
            message = message.copy(queue_name=dq_name(message.queue_name), options={"eta": current_millis() + delay})
        queue = f"{self.namespace}:{message.queue_name}"
        # A delayed message is woken for when it comes due, by the enqueue that moves it to the task queue.
        wake = self.wake_channel if message.queue_name == self.task_queue and self._may_publish else ""
        return message, [queue, f"{queue}.msgs"], [message.options["redis_message_id"], message.encode(), wake]

    def published(self, outcome: int) -> None:
        # The message is in the queue whatever the wake-up's outcome: a consumer that is not woken polls.
        if outcome == 1 or not self._may_publish:
            return
        self._may_publish = False  # a broker user from before the wake-ups: say it once, stop asking
        log.warning("the broker refused to publish to %s; the worker polls %s instead", self.wake_channel,
                    self.task_queue)


class AsyncSender:
    """Sends to a ``SiteRedisBroker``'s queues from the event loop that opened it (``open_sender``).

    The broker's own client blocks, and a send through it from a loop costs a thread's hop each time
    (docs/benchmarks.md: about 0.3 ms of the web's CPU a submit); this one is redis-py's asyncio client
    on the same server and user, running the same script.
    """

    def __init__(self, broker: SiteRedisBroker, client: redis.asyncio.Redis) -> None:
        self.broker = broker
        self._enqueue_and_wake = client.register_script(ENQUEUE_AND_WAKE)

    async def enqueue(self, message: dramatiq.Message) -> dramatiq.Message:
        message, keys, args = self.broker.prepare(message, None)
        self.broker.emit_before("enqueue", message, None)
        self.broker.published(await self._enqueue_and_wake(keys=keys, args=args))
        self.broker.emit_after("enqueue", message, None)
        return message


@asynccontextmanager
async def open_sender(broker: dramatiq.Broker) -> AsyncIterator[AsyncSender | None]:
    """An ``AsyncSender`` for a Redis broker, None for another (RabbitMQ's sends stay in a thread)."""
    if not isinstance(broker, SiteRedisBroker):
        yield None
        return
    # It connects at its first send: a process that never sends opens nothing. A send waits for one of a
    # few connections (bounded by its caller's timeout) rather than opening one more while the server
    # stalls: the default pool fails a send outright at its hundredth and keeps every one it opened.
    client = redis.asyncio.Redis.from_pool(redis.asyncio.BlockingConnectionPool.from_url(
        broker.url, max_connections=SENDER_CONNECTIONS, timeout=None, socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=CONNECT_TIMEOUT_S))
    try:
        yield AsyncSender(broker, client)
    finally:
        await client.aclose()


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
