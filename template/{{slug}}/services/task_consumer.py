"""The task queue's Redis consumer: it waits for what it is waiting for, not for a sleep to end.

Dramatiq's Redis consumer polls. When a fetch finds nothing it may take it sleeps 5, 10, 20 ...
ms, doubling up to its idle bound, and two cases pay for it:

- *The queue is empty.* A message sent during the sleep waits out the rest of it. Every sender on
  this broker publishes a wake-up on the queue's channel after its message is in the queue
  (``broker.SiteRedisBroker``), so this consumer waits on that channel instead: a message sent while
  it waits is fetched at once. And the sleeps themselves cost: each one ends in a fetch, a round trip
  and a script run on the server, that finds the queue as empty as the last one left it (two or
  three a message at a live pace). The subscription it holds keeps every wake-up published since
  its last fetch, so after a fetch that took fewer messages than it asked for — the queue was empty
  then — it fetches again only when woken, or after the idle bound.
- *Its prefetch is full* (every message it may hold is held by the worker's threads). Dramatiq
  counts that as an empty fetch too: the sleeps grow while the worker is busiest, and after the
  first acknowledgement the next message waits out a sleep of up to the idle bound. This
  consumer waits for an acknowledgement instead, and a busy spell is not counted as idle.

The channel is a shortcut, never the only way: wake-ups are not stored, and the idle bound still
polls (a message put back without one — a stopped worker's prefetch, a dead worker's messages
Dramatiq's maintenance re-enqueues, a wake-up the sender could not publish — waits at most that).
A consumer without a subscription polls with Dramatiq's backoff: a broker user that may not
subscribe (an ACL from before the channel; docs/operations.md) is logged once and polls.
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
    """Dramatiq's Redis consumer (its message cache, acks and decoding) with waits that end early.

    Trouble on the wake-up channel's own connection (a dropped socket, a refused subscription) never
    stops the consumer: it polls meanwhile and subscribes again at its next wait. A broker that is
    out of reach fails the fetch, as with Dramatiq's own consumer.
    """

    def __init__(self, broker: RedisBroker, queue_name: str, prefetch: int, timeout: int, channel: str) -> None:
        super().__init__(broker, queue_name, prefetch, timeout)
        self._room = threading.Event()  # set by each acknowledgement
        self._channel = channel
        self._may_subscribe = True
        self._wake = self._subscribe()
        self._emptied = False  # the last fetch took fewer messages than it asked for

    def _subscribe(self) -> redis.client.PubSub | None:
        pubsub = self.broker.client.pubsub()
        try:
            pubsub.subscribe(self._channel)
            # The reply says whether the subscription holds: a refusal (NOPERM) comes back here.
            reply = pubsub.get_message(timeout=SUBSCRIBE_TIMEOUT_S)
        except redis.ResponseError as refused:
            pubsub.close()
            self._may_subscribe = False
            log.warning("the broker refused the subscription to %s (%s); the worker polls %s instead",
                        self._channel, type(refused).__name__, self.queue_name)
            return None
        except redis.RedisError:
            pubsub.close()
            return None  # tried again at the next wait
        if reply is None or reply.get("type") != "subscribe":
            pubsub.close()
            return None
        return pubsub

    def _drop_wake(self) -> None:
        if self._wake is not None:
            self._wake.close()
            self._wake = None

    def __next__(self):
        try:
            if not self.message_cache:
                if self.outstanding_message_count >= self.prefetch:
                    return self._wait_for_room()
                if self._emptied and self._wake is not None:
                    # The queue was empty at the last fetch; each message sent since has a wake-up held here.
                    self._emptied = False
                    self._wait_for_message(self.timeout / 1000)
                    return None
                self._discard_wakes()
                wanted = self.prefetch - self.outstanding_message_count
                self.message_cache = self.broker.do_fetch(self.queue_name, wanted)
                self._emptied = 0 < len(self.message_cache) < wanted  # an empty fetch waits below
                if not self.message_cache:
                    self.misses, backoff_ms = compute_backoff(self.misses, max_backoff=self.timeout)
                    # Subscribed, the queue announces its next message: no poll finds it sooner.
                    self._wait_for_message(self.timeout / 1000 if self._wake is not None else backoff_ms / 1000)
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

    def _discard_wakes(self) -> None:
        """Before a fetch: the wake-ups received so far name messages that fetch finds (each is published
        after its message is in the queue); left on the connection, each would end a later wait for nothing."""
        try:
            while self._wake is not None and self._wake.get_message(ignore_subscribe_messages=True,
                                                                     timeout=0) is not None:
                pass
        except redis.RedisError:
            self._drop_wake()

    def _wait_for_message(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self._wake is None and self._may_subscribe:
                self._wake = self._subscribe()
                if self._wake is not None:
                    # A new subscription holds no wake-up sent before it: look again after Dramatiq's backoff
                    # (it grows with each empty fetch, so a channel that fails every read is not a busy loop).
                    _, backoff_ms = compute_backoff(self.misses, max_backoff=self.timeout)
                    deadline = min(deadline, time.monotonic() + backoff_ms / 1000)
                    continue
            if self._wake is None:
                time.sleep(left)
                return
            try:
                self._wake.get_message(ignore_subscribe_messages=True, timeout=left)
                return  # a wake-up, or the wait is over
            except redis.RedisError:
                self._drop_wake()  # the channel's connection only: subscribe again

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
        self._drop_wake()
        super().close()
