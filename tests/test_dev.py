"""``python -m <site> dev`` on a freshly rendered site: embedded services, a login page, a clean stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from harness.processes import free_port
from harness.services import embedded


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read().decode()


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


@pytest.mark.slow
def test_dev_serves_login_and_ready_then_stops_everything(installed_site: tuple[Path, str], tmp_path: Path) -> None:
    site_dir, python = installed_site
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BROKER_URL", "S3_ENDPOINT_URL")}
    log = (tmp_path / "dev.log").open("w+")
    dev = subprocess.Popen(
        [python, "-m", "zeta9", "dev", "--port", str(port), "--state", str(tmp_path / "state")],
        cwd=site_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    children: set[int] = set()
    try:
        def announced() -> bool:
            log.seek(0)
            return "is running at" in log.read()

        embedded().wait_until(announced, 120, "dev announcing its URL", dev)
        children = _descendants(dev.pid)
        assert len(children) >= 4  # postgres, valkey, s3, web
        status, body = _get(f"http://127.0.0.1:{port}/login")
        assert status == 200 and 'id="auth-form"' in body
        status, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert status == 200 and '"status":"ready"' in body
        log.seek(0)
        assert re.search(rf"running at http://127\.0\.0\.1:{port}", log.read())
    finally:
        dev.send_signal(signal.SIGINT)
        dev.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(embedded().pid_alive(p) for p in children):
        time.sleep(0.1)
    assert not [p for p in children if embedded().pid_alive(p)], "dev left processes running"
    embedded().remove_state(embedded().postgres_data_dir((tmp_path / "state").resolve()))
