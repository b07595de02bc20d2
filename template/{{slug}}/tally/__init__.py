"""Durable counts for /metrics (migration 0017): the last maintenance pass, and events counted by the
process that saw them (a storage failure, a task message sent, a claim, a dead letter, a lease
recovered). Kept in the database, not in process memory: the worker and `maintain` have no /metrics
of their own, every web process answers a scrape the same, and no restart resets a counter."""

from .counts import Event, Tallies, add, add_quietly, read, record_pass

__all__ = ["Event", "Tallies", "add", "add_quietly", "read", "record_pass"]
