"""How the sites came through a service fault, from the evidence. Pure: rows and answers in, figures out.

Times are seconds since the epoch: the harness's clock for answers and faults, the
database's ``now()`` for rows — one machine, one clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .checks import TERMINAL, TaskRow
from .load import Heard

NO_ANSWER = "no answer"


def first_success(rows: Iterable[TaskRow], back_at: float) -> float | None:
    """Seconds from ``back_at`` until the first task succeeded after it (None: none did)."""
    times = [row.finished_at for row in rows
             if row.status == "succeeded" and row.finished_at is not None and row.finished_at >= back_at]
    return round(min(times) - back_at, 2) if times else None


def drained(rows: Iterable[TaskRow], back_at: float) -> float | None:
    """Seconds from ``back_at`` until every task accepted before it had ended (0: nothing was left
    waiting; None: one never ended)."""
    before = [row for row in rows if row.created_at <= back_at]
    if any(row.status not in TERMINAL or row.finished_at is None for row in before):
        return None
    return round(max([0.0, *(row.finished_at - back_at for row in before)]), 2)


def answers_between(heard: Iterable[Heard], start: float, end: float) -> dict[str, int]:
    """The answers the clients got from ``start`` to ``end``, by status."""
    counted = Counter(NO_ANSWER if answer.status == 0 else str(answer.status)
                      for answer in heard if start <= answer.at <= end)
    return dict(sorted(counted.items()))


def answer_findings(heard: Iterable[Heard]) -> list[str]:
    """An outage answers 503 with Retry-After; any other 5xx (a proxy's 502/504 aside: a lost
    response) or a 503 that does not say when to come back is a finding."""
    wrong = Counter()
    for answer in heard:
        if answer.status >= 500 and answer.status not in (502, 503, 504):
            wrong[f"answered {answer.status}"] += 1
        elif answer.status == 503 and not answer.retry_after:
            wrong["answered 503 without Retry-After"] += 1
    return [f"{count} request(s) {what}" for what, count in sorted(wrong.items())]
