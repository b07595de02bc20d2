"""``maintain``: the scheduled, idempotent, batch-capped sweeps, in a fixed order.

Safe to run from several places at once (cron on two hosts, a loop next to a
one-shot): every step takes its rows with SKIP LOCKED or is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from . import ratelimits
from .files import cleanup, store
from .runtime import Runtime
from .tasks import delivery, lifecycle

log = logging.getLogger(__name__)

BATCH = 20

Step = Callable[[Runtime, int], Awaitable[int]]


async def _purge_counters(runtime: Runtime, batch: int) -> int:
    """Rate-limit windows (requests, sign-in and registration throttles) that no longer count."""
    return await ratelimits.purge(runtime.pool, batch * 50)


async def _purge_unpublished_results(runtime: Runtime, batch: int) -> int:
    """Result files reserved by attempts that are no longer running and were never published."""
    return await cleanup.purge_claimed(runtime, lifecycle.Q.claim_unpublished_results, cleanup.SETTLE_SECONDS,
                                       batch, store.drop_uploading)


async def _resend_due(runtime: Runtime, batch: int) -> int:
    if runtime.broker is None:
        return 0
    return await delivery.resend_due(runtime, batch)


# (name, step, needs object storage) in the order of SPEC §6.6
STEPS: list[tuple[str, Step, bool]] = [
    ("recover expired leases", lifecycle.recover_expired_leases, False),
    ("refund unretryable holds", lifecycle.refund_unretryable, False),
    ("purge unpublished results", _purge_unpublished_results, True),
    ("expire files", cleanup.expire_files, False),
    ("purge deleting files", cleanup.purge_deleting, True),
    ("purge stale uploads", cleanup.purge_stale_uploads, True),
    ("purge orphan objects", cleanup.purge_orphans, True),
    ("purge old rate counters", _purge_counters, False),
    ("re-send due tasks", _resend_due, False),
]


async def run_once(runtime: Runtime, batch: int = BATCH) -> dict[str, int]:
    """Run every step once; a failing step is logged and does not stop the others."""
    done: dict[str, int] = {}
    for name, step, needs_storage in STEPS:
        if needs_storage and runtime.storage is None:
            continue
        try:
            done[name] = await step(runtime, batch)
        except Exception as error:
            log.warning("maintenance step %r failed: %s", name, type(error).__name__)
            done[name] = -1
    return done


async def run_loop(runtime: Runtime, seconds: float, stop: asyncio.Event, batch: int = BATCH) -> None:
    while not stop.is_set():
        summary = await run_once(runtime, batch)
        if any(count for count in summary.values()):
            log.info("maintenance: %s", ", ".join(f"{k}={v}" for k, v in summary.items() if v))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)
