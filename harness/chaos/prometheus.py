"""A real Prometheus (Debian's ``/usr/bin/prometheus``) beside a service-fault campaign.

It listens on loopback only, keeps its data in the state folder, scrapes every
site's ``/metrics`` with the site's METRICS_TOKEN (from a 0600 file, never the
command line) and loads each site's own alerting rules
(``<site_dir>/prometheus/alerts.yml``; a site without that file adds none). It
scrapes and evaluates every second so a fault of a few seconds can show. No
remote write or read, no admin API, no lifecycle API: only the query API the
campaign reads alerts from. Stopped by its pid.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from harness import processes, services, state
from harness.background import start_logged
from harness.state import SiteRecord

BINARY = "/usr/bin/prometheus"
INTERVAL = "1s"
READY_TIMEOUT = 60.0
RULES = Path("prometheus") / "alerts.yml"  # in the site's folder


class PrometheusError(RuntimeError):
    """Prometheus could not be started or asked."""


def available() -> bool:
    return shutil.which(BINARY) is not None


def rule_files(sites: list[SiteRecord]) -> list[str]:
    """Each site's rules file; one of several alike (sites rendered with the same policy): a rule
    evaluates over every site's series, so the same rule twice would make every alert twice."""
    files: dict[bytes, str] = {}
    for site in sites:
        path = Path(site.site_dir) / RULES
        if path.exists():
            files.setdefault(path.read_bytes(), str(path))
    return list(files.values())


def config(sites: list[SiteRecord], tokens: dict[str, Path]) -> dict:
    """The configuration: one job per site (its slug), scraped with the site's token."""
    return {
        "global": {"scrape_interval": INTERVAL, "scrape_timeout": INTERVAL, "evaluation_interval": INTERVAL},
        "rule_files": rule_files(sites),
        "scrape_configs": [{
            "job_name": site.slug,
            "metrics_path": "/metrics",
            "authorization": {"type": "Bearer", "credentials_file": str(tokens[site.slug])},
            "static_configs": [{"targets": [urlsplit(site.upstream_url).netloc]}],
        } for site in sites],
    }


class Prometheus:
    def __init__(self, pid: int, url: str, rules: int) -> None:
        self.pid = pid
        self.url = url
        self.rules = rules  # rule files loaded
        self.http = httpx.Client(base_url=url, timeout=10)

    def _get(self, path: str, **params) -> dict:
        response = self.http.get(path, params=params)
        response.raise_for_status()
        return response.json()["data"]

    def firing_between(self, start: float, end: float) -> list[str]:
        """Every alert that was firing at some evaluation from ``start`` to ``end`` (``name@site``)."""
        data = self._get("/api/v1/query_range", query='ALERTS{alertstate="firing"}', start=f"{start:.3f}",
                         end=f"{max(end, start + 1):.3f}", step="1")
        return sorted({_name(series["metric"]) for series in data["result"]})

    def firing_now(self) -> list[str]:
        return sorted({_name({**alert["labels"]}) for alert in self._get("/api/v1/alerts")["alerts"]
                       if alert["state"] == "firing"})

    def rule_names(self) -> list[str]:
        """The alerting rules loaded."""
        return sorted({rule["name"] for group in self._get("/api/v1/rules", type="alert")["groups"]
                       for rule in group["rules"]})

    def rule_windows(self) -> dict[str, float]:
        """Each alerting rule's longest range (``increase(…[15m])``: 900 s): an alert counting events
        fires for that long after the last one, by design."""
        return {rule["name"]: window_seconds(rule["query"])
                for group in self._get("/api/v1/rules", type="alert")["groups"] for rule in group["rules"]}

    def stop(self) -> None:
        self.http.close()
        services.embedded().stop_process(self.pid, signal.SIGTERM)


_RANGE = re.compile(r"\[(\d+)([smh])\]")


def window_seconds(query: str) -> float:
    """The longest range selector of a PromQL query, in seconds (0 when it has none)."""
    return max((int(count) * {"s": 1, "m": 60, "h": 3600}[unit] for count, unit in _RANGE.findall(query)),
               default=0.0)


def _name(labels: dict) -> str:
    return f"{labels.get('alertname', '?')}@{labels.get('job', '?')}"


def start(state_dir: Path, sites: list[SiteRecord]) -> Prometheus:
    folder = Path(state_dir) / "prometheus"
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    tokens: dict[str, Path] = {}
    for site in sites:
        token = state.load_site_env(state_dir, site.slug).get("METRICS_TOKEN")
        if not token:
            raise PrometheusError(f"{site.slug} has no METRICS_TOKEN (a run from before the harness set one)")
        tokens[site.slug] = folder / f"{site.slug}.token"
        tokens[site.slug].write_text(token)
        os.chmod(tokens[site.slug], 0o600)
    settings = config(sites, tokens)
    (folder / "prometheus.yml").write_text(json.dumps(settings, indent=2))  # JSON is YAML
    port = processes.free_port()
    log = folder / "prometheus.log"
    process = start_logged([BINARY, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
                            f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1d"], log)
    url = f"http://127.0.0.1:{port}"
    try:
        services.embedded().wait_until(lambda: _ready(url), READY_TIMEOUT, f"prometheus (see {log})", process)
    except BaseException:
        services.embedded().stop_process(process.pid)
        raise
    return Prometheus(process.pid, url, len(settings["rule_files"]))


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_resolved(prom: Prometheus, deadline_s: float, excused: Callable[[str], bool] = lambda name: False,
                  ) -> list[str]:
    """Poll until no alert fires but those ``excused``; returns every one firing then, or at the deadline."""
    deadline = time.monotonic() + deadline_s
    while (firing := prom.firing_now()) and not all(map(excused, firing)) and time.monotonic() < deadline:
        time.sleep(1.0)
    return firing
