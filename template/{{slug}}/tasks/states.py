"""The task lifecycle, stated once. The database mirrors it with CHECK constraints (0004-0006; since 0022
one CHECK calling task_invariants_hold, each invariant still refused under its own name).

Who moves a task in and out of each state:

``pending``      created by submit or manual retry, or put back by lease recovery /
                 a due ``retry_wait`` — each starts a delivery round and bumps
                 ``dispatch_version`` in that same statement. The sender takes a 30 s delivery lease, sends
                 ``{taskId, dispatchVersion}`` and marks it ``queued``; a failed send
                 leaves it here and maintenance re-sends once the lease is over.
``queued``       sent. A claim moves it to ``running``; unclaimed for 2 minutes,
                 maintenance re-sends it under the same dispatch version (same round).
``running``      claimed under a 2-minute execution lease (``lease_version``).
                 The executor publishes (``succeeded``), fails (``failed`` /
                 ``retry_wait``), or settles a requested cancel (``canceled``). An
                 expired lease is recovered by maintenance: redelivered while budget
                 remains, ``failed / LEASE_EXPIRED`` when spent, ``reconciling``
                 for a processor this code does not know.
``retry_wait``   a ``STORAGE_UNAVAILABLE`` failure with budget left; back to
                 ``pending`` 30 s after the first attempt, 60 s after the second.
``reconciling``  an unknown processor lost its lease: keeps its pin, is never
                 delivered automatically; cancel only records the request.
``succeeded`` / ``failed`` / ``canceled``
                 terminal: the pin is released, nothing changes them again.
"""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    RETRY_WAIT = "retry_wait"
    RECONCILING = "reconciling"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


# Mirrors the database function task_is_active (0004).
ACTIVE = frozenset({TaskStatus.PENDING, TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.RETRY_WAIT,
                    TaskStatus.RECONCILING})


class ErrorCode(StrEnum):
    """Why a task failed. Stable: clients and the pages map them to words."""

    INPUT_MISSING = "INPUT_MISSING"
    INPUT_INVALID = "INPUT_INVALID"
    PROCESSOR_UNAVAILABLE = "PROCESSOR_UNAVAILABLE"
    STORAGE_FULL = "STORAGE_FULL"
    RESULT_TOO_LARGE = "RESULT_TOO_LARGE"
    STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    DELIVERY_EXHAUSTED = "DELIVERY_EXHAUSTED"
    # A processor's own outcomes (tasks/contract.py): it raised an error it did not declare, ran
    # past its time limit, or a service it calls failed in a way it declared worth retrying.
    PROCESSOR_FAILED = "PROCESSOR_FAILED"
    PROCESSOR_TIMEOUT = "PROCESSOR_TIMEOUT"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"


# Retried automatically (retry_wait) while budget remains.
AUTO_RETRY = frozenset({ErrorCode.STORAGE_UNAVAILABLE, ErrorCode.SERVICE_UNAVAILABLE})
# May be retried by the owner while budget remains.
MANUAL_RETRY = frozenset({
    ErrorCode.STORAGE_UNAVAILABLE,
    ErrorCode.STORAGE_FULL,
    ErrorCode.LEASE_EXPIRED,
    ErrorCode.PROCESSOR_UNAVAILABLE,
    ErrorCode.DELIVERY_EXHAUSTED,
    ErrorCode.PROCESSOR_TIMEOUT,
    ErrorCode.SERVICE_UNAVAILABLE,
})

EXECUTION_LEASE_SECONDS = 120
DELIVERY_LEASE_SECONDS = 30
UNCLAIMED_RESEND_SECONDS = 120
# A new task's first delivery round (task_submit, migration 0018).
FIRST_ROUND = 1


def retry_delay_seconds(attempts_used: int) -> int:
    """30 s after the first attempt, 60 s after the second (and later)."""
    return 30 if attempts_used <= 1 else 60
