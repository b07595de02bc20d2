"""Polling for a condition instead of sleeping."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 60.0, what: str = "condition",
             interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def wait_task(client, task_id: str, statuses: set[str], timeout: float = 60.0) -> dict:
    """Poll the task over HTTP until its status is one of ``statuses``."""

    def reached() -> dict | None:
        task = client.get(f"/api/tasks/{task_id}").json()
        return task if task["status"] in statuses else None

    return wait_for(reached, timeout, f"task {task_id} to become {'/'.join(sorted(statuses))}")
