"""The task queue's Redis consumer: it waits for what it is waiting for, not for a sleep to end.

Dramatiq's Redis consumer polls. When a fetch finds nothing it may take it sleeps 5, 10, 20 ...
ms, doubling up to its idle bound, and two cases pay for it:

- *The queue is empty.* A message sent during the sleep waits out the rest of it. Every sender on
  this broker publishes a wake-up on the queue's channel after its message is in the queue
  (``broker.SiteRedisBroker``), so this consumer waits on that channel for at most the same
  backoff: a message sent while it waits is fetched at once.
- *Its prefetch is full* (every message it may hold is held by the worker's threads). Dramatiq
  counts that as an empty fetch too: the sleeps grow while the worker is busiest, and after the
  first acknowledgement the next message waits out a sleep of up to the idle bound. This
  consumer waits for an acknowledgement instead, and a busy spell is not counted as idle.

Alone, the channel is a convenience: wake-ups are not stored, and the backoff polls as before. A
broker user that may not subscribe (an ACL from before the channel; docs/operations.md) is
logged once and the consumer polls.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.common import compute_backoff
from dramatiq.errors import ConnectionClosed

log = logging.getLogger(__name__)

SUBSCRIBE_TIMEOUT_S = 5.0


def wake_channel(namespace: str, queue_name: str) -> str:
    """Inside the namespace, as the site's broker user's channel rights are (``&namespace:*``)."""
    return f"{namespace}:{queue_name}.wake"


class TaskConsumer(_RedisConsumer):
    """Dramatiq's Redis consumer (its message cache, acks and decoding) with waits that end early."""

    def __init__(self, broker: RedisBroker, queue_name: str, prefetch: int, timeout: int, channel: str) -> None:
        super().__init__(broker, queue_name, prefetch, timeout)
        self._room = threading.Event()  # set by each acknowledgement
        self._wake = self._subscribe(channel)

    def _subscribe(self, channel: str) -> redis.client.PubSub | None:
        pubsub = self.broker.client.pubsub()
        try:
            pubsub.subscribe(channel)
            # The reply says whether the subscription holds: a refusal (NOPERM) comes back here.
            reply = pubsub.get_message(timeout=SUBSCRIBE_TIMEOUT_S)
        except redis.exceptions.NoPermissionError:
            pubsub.close()
            log.warning("the broker user may not subscribe to %s; the worker polls %s instead", channel,
                        self.queue_name)
            return None
        except redis.ConnectionError as error:
            pubsub.close()
            raise ConnectionClosed(error) from None
        if reply is None or reply.get("type") != "subscribe":
            pubsub.close()
            log.warning("no reply to the subscription to %s; the worker polls %s instead", channel, self.queue_name)
            return None
        return pubsub

    def __next__(self):
        try:
            if not self.message_cache:
                if self.outstanding_message_count >= self.prefetch:
                    return self._wait_for_room()
                self.message_cache = self.broker.do_fetch(self.queue_name,
                                                          self.prefetch - self.outstanding_message_count)
                if not self.message_cache:
                    self.misses, backoff_ms = compute_backoff(self.misses, max_backoff=self.timeout)
                    self._wait_for_message(backoff_ms / 1000)
                    return None
        except redis.ConnectionError as error:
            raise ConnectionClosed(error) from None
        return super().__next__()  # takes the first cached message (and resets the backoff)

    def _wait_for_room(self) -> None:
        self._room.clear()
        self.misses = 0  # busy, not idle: the next empty fetch starts from the shortest backoff
        # Checked after clearing: an acknowledgement in between has set the event again.
        if self.outstanding_message_count >= self.prefetch:
            self._room.wait(self.timeout / 1000)

    def _wait_for_message(self, seconds: float) -> None:
        if self._wake is None:
            time.sleep(seconds)
            return
        if self._wake.get_message(ignore_subscribe_messages=True, timeout=seconds) is not None:
            # Wake-ups that came meanwhile name messages the next fetch finds anyway: each is
            # published after its message is in the queue.
            while self._wake.get_message(ignore_subscribe_messages=True, timeout=0) is not None:
                pass

    def ack(self, message) -> None:
        try:
            super().ack(message)
        finally:
            self._room.set()

    def nack(self, message) -> None:
        try:
            super().nack(message)
        finally:
            self._room.set()

    def close(self) -> None:
        if self._wake is not None:
            self._wake.close()
        super().close()
