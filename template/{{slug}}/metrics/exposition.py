"""What /metrics says. Task, delivery and dead-letter figures are read from the database at
scrape time (they are the same whichever process answers); HTTP latencies are summed over
every web process of the site on this address (prometheus_client's multiprocess mode, set up
by `serve`: web_group.py)."""

from __future__ import annotations

import os
import time

import asyncpg
from litestar.types import ASGIApp, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from ..tasks.figures import figures
from ..tasks.states import TaskStatus
from .web_group import ENV


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


async def database_families(pool: asyncpg.Pool) -> list:
    async with pool.acquire() as conn:
        now = await figures(conn)
    tasks = GaugeMetricFamily("sitekit_tasks", "Tasks by status", labels=["status"])
    for status in TaskStatus:
        tasks.add_metric([status.value], now.by_status.get(status.value, 0))
    histogram = HistogramMetricFamily("sitekit_task_claim_to_publish_seconds",
                                      "Claim to publish of successful attempts")
    histogram.add_metric([], [*now.durations, ("+Inf", now.succeeded_attempts)], sum_value=now.seconds_total)
    sends = CounterMetricFamily("sitekit_task_deliveries", "Task messages sent (dispatch versions spent)")
    sends.add_metric([], now.sends)
    claims = CounterMetricFamily("sitekit_task_claims", "Claims (attempts spent)")
    claims.add_metric([], now.claims)
    letters = CounterMetricFamily("sitekit_dead_letters", "Dead-letter receipts by class", labels=["class"])
    for name in ("applied", "deferred", "stale", "missing", "invalid"):
        letters.add_metric([name], now.dead_letters.get(name, 0))
    return [tasks, histogram, sends, claims, letters]


async def render(pool: asyncpg.Pool, http: HttpMetrics) -> bytes:
    registry = CollectorRegistry()
    registry.register(_Snapshot(await database_families(pool)))
    http.register(registry)
    return generate_latest(registry)
