"""One audit of the books at a time per site.

An audit reads every table and lists the bucket with a pool and a storage client of its own:
thirty operators' clicks (or one script) must not run thirty at once. The lock is the
database's, so it holds across every web process of the site: a session advisory lock taken
with the run's start row (migration 0015) and held on one pooled connection until the run ends.
The pool keeps sessions as they are, advisory locks included (db/pool.py, ``_keep_session``): a
connection that may still hold the lock after a failed statement is closed, never given back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from ..db.queries import Queries
from .errors import AuditRunning

Q = Queries.load(__package__)

# The advisory lock key of the audit ("opsaudit"); the migration runner's is another.
AUDIT_LOCK_KEY = 0x6F70_7361_7564_6974


@asynccontextmanager
async def one_at_a_time(pool: asyncpg.Pool) -> AsyncIterator[None]:
    """Hold the site's audit lock for the body; AuditRunning (409) at once if another run holds it."""
    async with pool.acquire() as conn:
        try:
            started = await conn.fetchval(Q.start_audit_run, AUDIT_LOCK_KEY)
        except BaseException:
            conn.terminate()  # the statement may have taken the lock before it failed
            raise
        if started is None:
            raise AuditRunning.since(await conn.fetchval(Q.running_audit_started_at))
        try:
            yield
        finally:
            try:
                await conn.fetchval(Q.finish_audit_run, AUDIT_LOCK_KEY)
            except BaseException:
                conn.terminate()
                raise
