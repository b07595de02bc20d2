"""``maintain``: the scheduled, idempotent, batch-capped sweeps, in a fixed order.

Safe to run from several places at once (cron on two hosts, a loop next to a
one-shot): every step takes its rows with SKIP LOCKED or is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from . import ratelimits, tally
from .auth import sessions, tokens
from .files import cleanup
from .mail import delivery as mail_delivery
from .mail import outbox
from .runtime import Runtime
from .tasks import delivery, lifecycle, retention

log = logging.getLogger(__name__)

BATCH = 20

Step = Callable[[Runtime, int], Awaitable[int]]


# (name, step, needs object storage, needs a broker) in the order of docs/operations.md
STEPS: list[tuple[str, Step, bool, bool]] = [
    ("recover expired leases", lambda r, batch: lifecycle.recover_expired_leases(r.pool, r.queue, batch), False, False),
    ("refund unretryable holds", lambda r, batch: lifecycle.refund_unretryable(r.pool, batch), False, False),
    ("purge unpublished results", lambda r, batch: cleanup.purge_unpublished_results(r.pool, r.objects, batch),
     True, False),
    ("expire files", lambda r, batch: cleanup.expire_files(r.pool, batch), False, False),
    ("purge deleting files", lambda r, batch: cleanup.purge_deleting(r.pool, r.objects, batch), True, False),
    ("purge stale uploads", lambda r, batch: cleanup.purge_stale_uploads(r.pool, r.objects, batch), True, False),
    # A bounded stretch of the bucket a pass, going round it (files/cleanup.py, purge_orphans).
    ("purge orphan objects", lambda r, batch: cleanup.purge_orphans(r.pool, r.objects, batch, keys=batch * 50),
     True, False),
    # Rate-limit windows (requests, sign-in and registration throttles) that no longer count.
    ("purge old rate counters", lambda r, batch: ratelimits.purge(r.pool, batch * 50), False, False),
    ("purge ended sessions", lambda r, batch: sessions.purge_ended(r.pool, batch * 10, batch * 50), False, False),
    # History retention: old terminal tasks, then the rows of deleted files they no longer name.
    ("prune task history", lambda r, batch: retention.prune_history(r.pool, r.settings.policy.tasks.history_days,
                                                                    batch * 10, batch * 50), False, False),
    ("forget deleted files", lambda r, batch: cleanup.forget_deleted(r.pool, r.settings.policy.tasks.history_days,
                                                                     batch * 10, batch * 50), False, False),
    ("re-send due tasks", lambda r, batch: delivery.resend_due(r.pool, r.queue, batch), False, True),
    # A mail whose sender stopped mid-send may be out: failed (SEND_UNCERTAIN), never sent twice.
    ("abandon interrupted mail sends", lambda r, batch: outbox.abandon_expired_leases(r.pool, batch), False, False),
    ("send due mail", lambda r, batch: mail_delivery.send_due(r.pool, r.settings, batch), False, False),
    ("purge finished mail", lambda r, batch: outbox.purge_finished(r.pool, batch * 50), False, False),
    ("purge expired links", lambda r, batch: tokens.purge_expired(r.pool, batch * 50), False, False),
]


async def run_once(runtime: Runtime, batch: int = BATCH) -> dict[str, int]:
    """Run every step once; a failing step is logged and does not stop the others. The pass is
    recorded at its end, failed steps or not (the alert on its age says whether anything runs
    maintenance; the failed steps show apart)."""
    done: dict[str, int] = {}
    for name, step, needs_storage, needs_broker in STEPS:
        if needs_broker and runtime.queue is None:
            done[name] = 0
            continue
        if needs_storage and runtime.objects is None:
            continue
        try:
            done[name] = await step(runtime, batch)
        except Exception as error:
            log.warning("maintenance step %r failed: %s", name, type(error).__name__)
            done[name] = -1
    try:
        await tally.record_pass(runtime.pool, sum(1 for count in done.values() if count == -1))
    except Exception as error:
        log.warning("maintenance pass not recorded: %s", type(error).__name__)
    return done


async def run_loop(runtime: Runtime, seconds: float, stop: asyncio.Event, batch: int = BATCH) -> None:
    while not stop.is_set():
        summary = await run_once(runtime, batch)
        if any(count for count in summary.values()):
            log.info("maintenance: %s", ", ".join(f"{k}={v}" for k, v in summary.items() if v))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)
