"""``python -m <site> dev`` run by a test: started, waited for, and stopped with everything it started."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from harness.processes import free_port
from harness.services import embedded

SERVICE_URLS = ("DATABASE_URL", "BROKER_URL", "S3_ENDPOINT_URL")


class DevSite:
    def __init__(self, port: int, log: Path, children: set[int]) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.children = children


def descendants(pid: int) -> set[int]:
    """The direct children of ``pid`` (none once it is gone)."""
    try:
        return {child.pid for child in psutil.Process(pid).children()}
    except psutil.NoSuchProcess:
        return set()


@contextmanager
def dev_site(site_dir: Path, python: str, slug: str, state: Path, env: dict[str, str] | None = None,
             keep_state: bool = False) -> Iterator[DevSite]:
    """The site with embedded services on a free port; on the way out Ctrl-C, and every child is gone.

    The state folder (and root's PostgreSQL data kept outside it) is removed afterwards unless
    ``keep_state``: then the next ``dev_site`` on the same folder starts on the same data."""
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if k not in SERVICE_URLS} | (env or {})
    log_path = state.parent / f"{state.name}-dev.log"
    log = log_path.open("a+")
    start = log.tell()
    dev = subprocess.Popen(
        [python, "-m", slug, "dev", "--port", str(port), "--state", str(state)],
        cwd=site_dir, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    children: set[int] = set()
    try:
        def announced() -> bool:
            log.seek(start)
            return "is running at" in log.read()

        embedded().wait_until(announced, 120, "dev announcing its URL", dev)
        children = descendants(dev.pid)
        yield DevSite(port, log_path, children)
    finally:
        dev.send_signal(signal.SIGINT)
        dev.wait(timeout=60)
        log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(embedded().pid_alive(p) for p in children):
        time.sleep(0.1)
    assert not [p for p in children if embedded().pid_alive(p)], "dev left processes running"
    if not keep_state:
        remove_dev_state(state)


def remove_dev_state(state: Path) -> None:
    embedded().remove_state(embedded().postgres_data_dir(state.resolve()))
    embedded().remove_state(state)
