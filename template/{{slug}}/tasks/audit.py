"""The tasks' books: attempts, pins, results and holds of every task.

Read-only. A result that was deleted or expired since is lawful (the task
shows it as gone); a result row that is missing, never published or someone
else's is not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import UUID

import asyncpg

from ..db.queries import Queries
from ..findings import BATCH, Finding
from .states import MANUAL_RETRY, TaskStatus

Q = Queries.load(__package__, "audit.sql")

PUBLISHED = ("ready", "deleting", "deleted")


def task_findings(task: asyncpg.Record) -> list[Finding]:
    subject = f"task {task['id']}"
    found: list[Finding] = []
    if task["attempt_rows"] != task["attempt_count"]:
        found.append(Finding("ATTEMPTS_MISMATCH", subject,
                             f"attempt_count is {task['attempt_count']}, {task['attempt_rows']} attempt rows"))
    if task["succeeded_attempts"] > 1:
        found.append(Finding("SUCCEEDED_TWICE", subject, f"{task['succeeded_attempts']} succeeded attempts"))
    if task["pinned"] and not task["active"]:
        found.append(Finding("PIN_ON_TERMINAL", subject, f"{task['status']} task still pins its input"))
    if task["status"] == TaskStatus.SUCCEEDED:
        if task["result_status"] is None:
            problem = f"result file {task['result_file_id']} has no row"
        elif task["result_status"] not in PUBLISHED:
            problem = f"result file {task['result_file_id']} is {task['result_status']}"
        elif task["result_kind"] != "result" or task["result_owner_id"] != task["owner_id"]:
            problem = f"file {task['result_file_id']} is not this task's result"
        else:
            problem = None
        if problem:
            found.append(Finding("RESULT_MISSING", subject, problem))
    if task["charge_status"] == "held" and not task["active"] and not _may_retry(task):
        found.append(Finding("HOLD_ON_TERMINAL", subject,
                             f"{task['status']} ({task['error_code'] or 'no error'}) still holds credits"))
    return found


def _may_retry(task: asyncpg.Record) -> bool:
    """A failure the owner may still retry keeps its hold (the owner may cancel to get it back)."""
    return (task["status"] == TaskStatus.FAILED and task["error_code"] in MANUAL_RETRY
            and task["attempt_count"] < task["max_attempts"])


async def audit_tasks(conn: asyncpg.Connection, batch: int = BATCH) -> AsyncIterator[Finding]:
    after = UUID(int=0)
    while rows := await conn.fetch(Q.task_facts_batch, after, batch):
        for row in rows:
            for finding in task_findings(row):
                yield finding
        after = rows[-1]["id"]
