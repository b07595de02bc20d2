"""``python -m <site> audit``: check the site's books and report every broken invariant.

Read-only twice over: the audit's connections refuse writes
(``default_transaction_read_only``), and the rows are read in one
repeatable-read snapshot, so every rule sees the same moment. Each package
checks the tables it owns; this module only runs them in order and collects
the findings.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

import msgspec

from .charges.audit import audit_balances
from .db.pool import SERVER_SETTINGS, create_pool
from .files.audit import audit_objects, audit_unreferenced_results, audit_usage
from .files.cleanup import ORPHAN_GRACE
from .files.objects import open_object_store
from .findings import BATCH, Finding
from .settings import Settings
from .tasks.audit import audit_tasks

# An audit walks whole tables: a slice may take longer than a request is allowed.
AUDIT_SETTINGS = {**SERVER_SETTINGS, "statement_timeout": "300s", "idle_in_transaction_session_timeout": "0",
                  "default_transaction_read_only": "on"}


class AuditReport(msgspec.Struct, frozen=True):
    clean: bool
    started_at: datetime
    findings: list[Finding]
    storage_checked: bool


async def run_audit(settings: Settings, *, batch: int = BATCH, grace: timedelta = ORPHAN_GRACE) -> AuditReport:
    """Every finding of the site's books. ``batch`` rows per statement; objects younger than ``grace``
    may be uploads in flight and are not orphans yet."""
    started = datetime.now(UTC)
    findings: list[Finding] = []
    async with AsyncExitStack() as stack:
        pool = await create_pool(settings.require_database_url(), min_size=2, max_size=2,
                                 server_settings=AUDIT_SETTINGS)
        stack.push_async_callback(pool.close)
        objects = await open_object_store(settings, stack)
        async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            checks = [audit_usage(conn, batch), audit_unreferenced_results(conn, batch), audit_tasks(conn, batch),
                      audit_balances(conn, batch)]
            if objects is not None:
                checks.append(audit_objects(conn, pool, objects, started, batch, grace))
            for check in checks:
                findings += [finding async for finding in check]
    return AuditReport(clean=not findings, started_at=started, findings=findings, storage_checked=objects is not None)

