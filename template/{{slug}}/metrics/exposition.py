"""What /metrics says. Task figures and the durable counters (tally/) are read from the database
at scrape time (they are the same whichever process answers); readiness is this process's check
(as /readyz answers it); HTTP latencies are summed over every web process of the site on this
address (prometheus_client's multiprocess mode, set up by `serve`: web_group.py). The alert rules
that read them are prometheus/alerts.yml at the site's root."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable
from typing import Protocol

import asyncpg
from litestar.types import ASGIApp, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeHistogramMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from .. import tally
from ..tally import Event
from ..tasks.figures import figures
from ..tasks.states import ACTIVE, TaskStatus
from .web_group import ENV

log = logging.getLogger(__name__)


class HttpMetrics:
    """Request latencies, labelled by route template (not raw path: bounded cardinality)."""

    def __init__(self) -> None:
        self.latency = Histogram(
            "sitekit_http_request_duration_seconds", "HTTP request latency by route",
            ["method", "route", "status"], registry=None,
        )

    def register(self, registry: CollectorRegistry) -> None:
        """Every web process's latencies under `serve` (the variable also made prometheus_client keep
        each process's values in files there); this process's own otherwise (an app built in a test)."""
        if os.environ.get(ENV):
            MultiProcessCollector(registry)
        else:
            registry.register(self.latency)

    def middleware(self, app: ASGIApp) -> ASGIApp:
        async def timed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            status = {"code": 500}

            async def record_status(message) -> None:
                if message["type"] == "http.response.start":
                    status["code"] = message["status"]
                await send(message)

            try:
                await app(scope, receive, record_status)
            finally:
                route = scope.get("path_template") or "unmatched"
                self.latency.labels(scope["method"], route, str(status["code"])).observe(
                    time.perf_counter() - started
                )

        return timed


class _Snapshot(Collector):
    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        yield from self.families


# The database figures give up after this, so a scrape still answers (with readiness and latencies)
# inside Prometheus's default 10 s scrape timeout while the database is slow or gone.
FIGURES_TIMEOUT = 5.0

DEAD_LETTER_CLASSES = {"applied": Event.DEAD_LETTER_APPLIED, "deferred": Event.DEAD_LETTER_DEFERRED,
                       "stale": Event.DEAD_LETTER_STALE, "missing": Event.DEAD_LETTER_MISSING,
                       "invalid": Event.DEAD_LETTER_INVALID}


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation)
    family.add_metric([], value)
    return family


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation)
    family.add_metric([], value)
    return family


async def database_families(pool: asyncpg.Pool) -> list:
    """Gauges of what the tables hold now, and the durable counters (tally/)."""
    async with asyncio.timeout(FIGURES_TIMEOUT), pool.acquire() as conn:
        now = await figures(conn)
        counted = await tally.read(conn)
    active = GaugeMetricFamily("sitekit_tasks_active", "Active tasks by status", labels=["status"])
    for status in sorted(ACTIVE):
        active.add_metric([status.value], now.active.get(status.value, 0))
    finished = GaugeMetricFamily("sitekit_tasks_finished_last_hour", "Tasks that ended in the last hour, by status",
                                 labels=["status"])
    for status in TaskStatus:
        if status not in ACTIVE:
            finished.add_metric([status.value], now.finished_last_hour.get(status.value, 0))
    histogram = GaugeHistogramMetricFamily("sitekit_task_claim_to_publish_last_hour_seconds",
                                           "Claim to publish of the tasks that succeeded in the last hour")
    histogram.add_metric([], [*now.durations, ("+Inf", now.succeeded_last_hour)], gsum_value=now.seconds_total)
    letters = CounterMetricFamily("sitekit_dead_letters", "Dead-letter receipts by class", labels=["class"])
    for name, event in DEAD_LETTER_CLASSES.items():
        letters.add_metric([name], counted.counts[event])
    return [
        active, finished, histogram, letters,
        _gauge("sitekit_task_oldest_waiting_seconds",
               "How long the task waiting longest for a worker has waited (0: none waits)", now.oldest_waiting_seconds),
        _counter("sitekit_task_messages_sent", "Task messages sent to the broker (first sends and re-sends)",
                 counted.messages_sent),
        _counter("sitekit_task_claims", "Claims (attempts started)", counted.claims),
        _counter("sitekit_task_lease_recoveries", "Running tasks whose lease expired, recovered by maintenance",
                 counted.counts[Event.LEASE_RECOVERED]),
        _counter("sitekit_storage_errors", "Object storage calls that failed (web, worker and maintenance)",
                 counted.counts[Event.STORAGE_ERROR]),
        _counter("sitekit_maintenance_passes", "Maintenance passes run", counted.counts[Event.MAINTENANCE_PASS]),
        _gauge("sitekit_maintenance_last_pass_timestamp_seconds",
               "When the last maintenance pass ended (0: never)", counted.last_pass_at or 0),
        _gauge("sitekit_maintenance_last_pass_failed_steps", "Steps of the last maintenance pass that failed",
               counted.last_pass_failed_steps),
    ]


class Readiness(Protocol):
    """What /readyz answers (web/health.py), as far as the metrics read it."""

    status: str  # "ready" or "unready"
    database: str  # "ok", "down" or "absent", as broker and storage
    broker: str
    storage: str


def readiness_families(checks: Readiness) -> list:
    ready = _gauge("sitekit_ready", "1 when /readyz answers ready (every service the site uses answers)",
                   1 if checks.status == "ready" else 0)
    services = GaugeMetricFamily("sitekit_service_up", "1 when the service answers this process (the services "
                                 "the site runs without are not listed)", labels=["service"])
    for service in ("database", "broker", "storage"):
        if (state := getattr(checks, service)) != "absent":
            services.add_metric([service], 1 if state == "ok" else 0)
    return [ready, services]


async def render(pool: asyncpg.Pool, http: HttpMetrics, ready: Awaitable[Readiness]) -> bytes:
    registry = CollectorRegistry()
    tables, checks = await asyncio.gather(database_families(pool), ready, return_exceptions=True)
    if isinstance(tables, BaseException):
        # The scrape still answers: readiness says what is down, and the rules read absent figures as unknown.
        log.warning("metrics: database figures unavailable (%s)", type(tables).__name__)
        tables = []
    if isinstance(checks, BaseException):
        raise checks
    registry.register(_Snapshot([*tables, *readiness_families(checks)]))
    http.register(registry)
    return generate_latest(registry)
