"""How the sites came through a service fault, from the evidence. Pure: rows and answers in, figures out.

Times are seconds since the epoch: the harness's clock for answers and faults, the
database's ``now()`` for rows — one machine, one clock.
"""

from __future__ import annotations

import re
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


_COUNT = re.compile(r"^sitekit_http_request_duration_seconds_count\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def server_errors(exposition: str) -> dict[str, float]:
    """From a site's /metrics: how many requests each route has answered with a 5xx, by every web
    process of the site (its latency histogram, which sees every answer: Prometheus's scrapes too)."""
    found: dict[str, float] = {}
    for match in _COUNT.finditer(exposition):
        labels = dict(_LABEL.findall(match["labels"]))
        if labels.get("status", "").startswith("5"):
            found[f"{labels.get('method')} {labels.get('route')} {labels['status']}"] = float(match["value"])
    return found


def new_server_errors(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """Answers of a 5xx other than 503 that came between two readings of ``server_errors``."""
    return [f"{key.rsplit(' ', 1)[0]} answered {key.rsplit(' ', 1)[1]} {after[key] - before.get(key, 0):g} time(s)"
            for key in sorted(after) if not key.endswith(" 503") and after[key] > before.get(key, 0)]
