"""``tasks inspect TASK_ID``: one task's state, attempts and dead-letter receipts, for operators.

Prints no secrets: no delivery token, request fingerprint, params or file contents.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from .sql import Q


def _line(label: str, value: object) -> str:
    return f"  {label:<26} {'-' if value is None else value}"


async def describe_task(conn: asyncpg.Connection, task_id: UUID) -> str | None:
    task = await conn.fetchrow(Q.inspect_task, task_id)
    if task is None:
        return None
    lines = [f"task {task['id']}"]
    lines += [_line(key, task[key]) for key in task.keys() if key != "id"]  # noqa: SIM118 - a Record iterates values
    attempts = await conn.fetch(Q.inspect_attempts, task_id)
    lines.append(f"attempts ({len(attempts)})")
    for a in attempts:
        lines.append(f"  v{a['lease_version']}: {a['started_at']} -> {a['ended_at'] or 'running'}  "
                     f"{a['outcome'] or '-'} {a['error_code'] or ''} result={a['result_file_id'] or '-'}")
    receipts = await conn.fetch(Q.inspect_dead_letters, task_id)
    lines.append(f"dead letters ({len(receipts)})")
    for r in receipts:
        lines.append(f"  {r['received_at']}  {r['classification']:<8} dispatch v{r['dispatch_version']}  "
                     f"{r['queue_name']}/{r['message_id']}")
    return "\n".join(lines)
