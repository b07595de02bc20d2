"""Durable counts for /metrics (migration 0017): the last maintenance pass; events counted by the
process that saw them (a storage failure, a dead letter, a lease recovered); and the sequences that
count task messages sent and claims. Kept in the database, not in process memory: the worker and
`maintain` have no /metrics of their own, every web process answers a scrape the same, and no
restart resets a counter."""

from .counts import Event, Tallies, add, add_quietly, count_message_sent, read, record_pass

__all__ = ["Event", "Tallies", "add", "add_quietly", "count_message_sent", "read", "record_pass"]
