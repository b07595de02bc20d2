"""Looking behind a site's broker: where its task messages are, through the broker's own protocol."""

from __future__ import annotations

import json

from harness.state import SitesFile


def queues_holding(run: SitesFile, task_id: str) -> set[str]:
    """Every (namespace:)queue of every site of the run that holds a message for ``task_id`` still to
    be delivered (a queue or its delay queue; Dramatiq's own store of failed messages, ``.XQ``, is not
    a delivery). To see where a message was sent, stop the site's worker first.
    """
    if run.services.broker.kind == "redis":
        return _redis_queues_holding(run, task_id)
    return _rabbitmq_queues_holding(run, task_id)


def _is_for(raw: bytes, task_id: str) -> bool:
    try:
        return json.loads(raw).get("kwargs", {}).get("taskId") == task_id
    except (ValueError, AttributeError):
        return False


def _redis_queues_holding(run: SitesFile, task_id: str) -> set[str]:
    import redis

    client = redis.Redis.from_url(run.services.broker.url)
    found: set[str] = set()
    try:
        # Dramatiq's Redis broker keeps each unacknowledged message in "<namespace>:<queue>.msgs".
        for key in client.scan_iter(match="*.msgs", count=500):
            queue = key.decode().removesuffix(".msgs")
            if not queue.endswith(".XQ") and any(_is_for(raw, task_id) for raw in client.hvals(key)):
                found.add(queue)
    finally:
        client.close()
    return found


def _rabbitmq_queues_holding(run: SitesFile, task_id: str) -> set[str]:
    import pika

    found: set[str] = set()
    for site in run.sites:  # each site's queues, in its own vhost (site.broker_url) where it has one
        connection = pika.BlockingConnection(pika.URLParameters(site.broker_url))
        try:
            channel = connection.channel()
            for queue in (site.task_queue, f"{site.task_queue}.DQ", site.dead_queue):
                try:
                    channel.queue_declare(queue=queue, passive=True)
                except pika.exceptions.ChannelClosedByBroker:
                    channel = connection.channel()
                    continue
                while (got := channel.basic_get(queue=queue, auto_ack=False))[0] is not None:
                    if _is_for(got[2], task_id):
                        found.add(queue)
                # closing the channel requeues everything we looked at, unacknowledged
                channel.close()
                channel = connection.channel()
        finally:
            connection.close()
    return found
