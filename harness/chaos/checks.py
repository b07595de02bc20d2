"""What the evidence of a campaign must show, task by task. Pure: rows and bytes in, findings out.

- every task is terminal;
- its attempt rows match its attempt count;
- a succeeded task has exactly one succeeded attempt and its result is the
  expected normalised text, byte for byte; any other task has none;
- a failed task failed the way a campaign of kills can make it fail: its lease
  ran out with the budget spent (``LEASE_EXPIRED``, or ``STORAGE_UNAVAILABLE``
  retried until the budget was spent, as a storage call cut by a dying process
  or a loaded machine can make it), or its deliveries were exhausted
  (``DELIVERY_EXHAUSTED``: the dead-letter path). Its inputs are valid and
  nobody cancels, so any other ending is a finding;
- its request key sent again answers 200 with the same task;
- the campaign's accounts hold no task no client asked for.
"""

from __future__ import annotations

import msgspec

TERMINAL = frozenset({"succeeded", "failed", "canceled"})
# Failures a campaign can cause only by spending the whole budget.
BUDGET_SPENT = frozenset({"LEASE_EXPIRED", "STORAGE_UNAVAILABLE"})
# Failures it can cause with budget left: a waiting task whose message was dead-lettered.
ANY_BUDGET = frozenset({"DELIVERY_EXHAUSTED"})


class TaskRow(msgspec.Struct, frozen=True):
    """A task as its site's database has it, with counts of its attempt rows."""

    id: str
    request_key: str
    status: str
    error_code: str | None
    attempt_count: int
    max_attempts: int
    attempt_rows: int
    succeeded_attempts: int
    created_at: float = 0.0  # seconds since the epoch, the database's clock
    finished_at: float | None = None


class Outcome(msgspec.Struct):
    """Everything known about one request key after the campaign."""

    request_key: str
    task_id: str  # the task its submit was answered with
    expected: bytes
    row: TaskRow | None = None
    result: bytes | None = None  # a succeeded task's result, downloaded by its owner
    result_problem: str | None = None  # why the result could not be downloaded
    resubmit_status: int | None = None
    resubmit_task_id: str | None = None


def failure_allowed(row: TaskRow) -> bool:
    if row.error_code in ANY_BUDGET:
        return True
    return row.error_code in BUDGET_SPENT and row.attempt_count == row.max_attempts


def task_findings(outcome: Outcome) -> list[str]:
    row = outcome.row
    subject = f"task {outcome.task_id}"
    if row is None:
        return [f"{subject}: no row for request key {outcome.request_key}"]
    found: list[str] = []
    if row.id != outcome.task_id:
        found.append(f"{subject}: request key {outcome.request_key} belongs to task {row.id}")
    if row.status not in TERMINAL:
        found.append(f"{subject}: still {row.status} after settling "
                     f"(attempt {row.attempt_count} of {row.max_attempts})")
    if row.attempt_rows != row.attempt_count:
        found.append(f"{subject}: attempt_count {row.attempt_count}, {row.attempt_rows} attempt rows")
    if row.status == "succeeded":
        if row.succeeded_attempts != 1:
            found.append(f"{subject}: succeeded with {row.succeeded_attempts} succeeded attempts")
        if outcome.result_problem:
            found.append(f"{subject}: result not downloaded: {outcome.result_problem}")
        elif outcome.result != outcome.expected:
            size = "nothing" if outcome.result is None else f"{len(outcome.result)} bytes"
            found.append(f"{subject}: result is {size} that differ from the expected {len(outcome.expected)} bytes")
    elif row.succeeded_attempts:
        found.append(f"{subject}: {row.status} with {row.succeeded_attempts} succeeded attempt(s)")
    if row.status == "failed" and not failure_allowed(row):
        found.append(f"{subject}: failed {row.error_code} after {row.attempt_count} of {row.max_attempts} "
                     "attempts; only a spent budget or exhausted deliveries can fail a campaign task")
    if row.status == "canceled":
        found.append(f"{subject}: canceled, though no client canceled it")
    if outcome.resubmit_status != 200 or outcome.resubmit_task_id != outcome.task_id:
        found.append(f"{subject}: its request key sent again answered {outcome.resubmit_status} "
                     f"with task {outcome.resubmit_task_id}")
    return found


def findings(outcomes: list[Outcome], rows: list[TaskRow], sent: set[str]) -> list[str]:
    """Every finding of the campaign at one site: ``outcomes`` of the answered submits, ``rows`` all
    tasks of its accounts, ``sent`` every request key a client sent (answered or not)."""
    found = [finding for outcome in outcomes for finding in task_findings(outcome)]
    found += [f"task {row.id}: request key {row.request_key} was never sent by a client"
              for row in rows if row.request_key not in sent]
    return found
