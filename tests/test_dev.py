"""``python -m <site> dev`` on a freshly rendered site: embedded services, a login page, the site's
commands reaching those services, a clean stop on SIGINT (also when it was started with SIGINT ignored)
and on SIGTERM, and a restart on the same folder that finds every row and every byte again."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import stat
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import httpx
import pytest

from harness.processes import free_port
from harness.services import embedded

from .dev_site import dev_site, remove_dev_state, without_services

PASSWORD = "correct horse battery"


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read().decode()


@pytest.mark.slow
def test_dev_started_with_sigint_ignored_serves_its_commands_and_stops_on_sigint(
        installed_site: tuple[Path, str], tmp_path: Path) -> None:
    """As a CI runner or a process manager starts it: in the background, SIGINT inherited ignored."""
    site_dir, python = installed_site
    state = tmp_path / "state"
    try:
        _serve_commands_then_stop(site_dir, python, state)
    finally:
        remove_dev_state(state)


def _serve_commands_then_stop(site_dir: Path, python: str, state: Path) -> None:
    with dev_site(site_dir, python, "zeta9", state, keep_state=True, sigint_ignored=True) as dev:
        assert len(dev.children) >= 5  # postgres, valkey, s3, the smtp sink, web
        status, body = _get(f"{dev.url}/login")
        assert status == 200 and 'id="auth-form"' in body
        status, body = _get(f"{dev.url}/readyz")
        assert status == 200 and '"status":"ready"' in body
        assert re.search(rf"running at http://127\.0\.0\.1:{dev.port}", dev.log.read_text())
        # The site's commands find the services of the running dev, with no URL in their environment.
        assert stat.S_IMODE((state / "dev.json").stat().st_mode) == 0o600  # it holds the S3 secret key
        created = dev.command("create-user", "first@example.com", "--password-stdin", stdin=f"{PASSWORD}\n")
        assert created.returncode == 0, created.stderr
        granted = dev.command("operator", "grant", "first@example.com")
        assert granted.returncode == 0, granted.stderr
        assert granted.stdout.strip() == "first@example.com is an operator now"
        audit = dev.command("audit")
        assert audit.returncode == 0, audit.stderr
        assert audit.stdout.strip() == "audit: clean"  # storage checked too: the S3 keys came with the URL
        # Mail goes to dev's own SMTP sink, sent by its worker, and is listed at /dev/mail.
        with _client(dev.url) as client:
            assert client.post("/api/auth/reset", json={"email": "first@example.com"}).status_code == 202
            deadline = time.monotonic() + 60
            while "first@example.com" not in (listed := client.get("/dev/mail")).text:
                assert time.monotonic() < deadline, "no mail listed at /dev/mail"
                time.sleep(0.2)
        assert listed.status_code == 200 and f"{dev.url}/reset#token=" in listed.text
        second = dev.command("dev", "--port", str(free_port()))
        assert second.returncode == 2
        assert f"already running (pid {dev.pid})" in second.stderr, second.stderr
    # dev_site sent SIGINT, and dev stopped with everything it started; a command now says how to start one.
    after = subprocess.run([python, "-m", "zeta9", "audit", "--state", str(state)], cwd=site_dir,
                           env=without_services(), capture_output=True, text=True, timeout=60, check=False)
    assert after.returncode == 2
    assert "no `dev` is running" in after.stderr and "python -m zeta9 dev" in after.stderr, after.stderr


@pytest.mark.slow
def test_a_port_in_use_is_refused_before_any_service_starts(installed_site: tuple[Path, str], tmp_path: Path) -> None:
    """dev holds its web port from its first step: seen in the kit's test run, dev's own SeaweedFS master
    was given the port the test had chosen for dev's web (the kernel handed it out again, free until the
    web bound it), and the site's requests reached SeaweedFS (404 on /api/auth/register). Held from the
    start, the port can go to no service of dev's, and a port somebody else holds is said at once."""
    import socket

    site_dir, python = installed_site
    state = tmp_path / "state"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            refused = subprocess.run([python, "-m", "zeta9", "dev", "--port", str(port), "--state", str(state)],
                                     cwd=site_dir, env=without_services(), capture_output=True, text=True,
                                     timeout=120, check=False)
        finally:
            remove_dev_state(state)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"port {port} on 127.0.0.1 is in use" in refused.stderr, refused.stderr
    assert "migrations" not in refused.stdout  # nothing was started or migrated first
    assert not (state / "postgres.log").exists() and not (state / "valkey.log").exists()


def _client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Origin": url}, timeout=30)


def _wait_finished(client: httpx.Client, task_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while (task := client.get(f"/api/tasks/{task_id}").json())["status"] not in ("succeeded", "failed", "canceled"):
        assert time.monotonic() < deadline, f"task still {task['status']}"
        time.sleep(0.1)
    return task


@pytest.mark.slow
def test_a_restart_keeps_every_byte(installed_site: tuple[Path, str], tmp_path: Path) -> None:
    site_dir, python = installed_site
    state = tmp_path / "state"
    source = b"kept  \r\nacross a restart\t\r\n"
    try:
        with dev_site(site_dir, python, "zeta9", state, keep_state=True, stop_signal=signal.SIGTERM) as dev, \
                _client(dev.url) as client:
            account = client.post("/api/auth/register", json={"email": "keeper@example.com", "password": PASSWORD})
            assert account.status_code == 201, account.text
            file = client.post("/api/files", params={"name": "in.txt"}, content=source,
                               headers={"Content-Type": "text/plain"}).json()
            task = client.post("/api/tasks", json={"requestKey": str(uuid.uuid4()), "processor": "text-normalize",
                                                   "fileId": file["id"], "params": {"trimTrailingWhitespace": True}})
            assert task.status_code == 201, task.text
            done = _wait_finished(client, task.json()["id"])
            assert done["status"] == "succeeded", done
        # dev stopped the way systemd, Docker and Kubernetes stop it, every child gone; the same folder again:
        with dev_site(site_dir, python, "zeta9", state, keep_state=True) as dev, _client(dev.url) as client:
            login = client.post("/api/auth/login", json={"email": "keeper@example.com", "password": PASSWORD})
            assert login.status_code == 200 and login.json()["id"] == account.json()["id"]
            listed = {item["id"] for item in client.get("/api/files").json()["items"]}
            assert listed == {file["id"], done["result"]["fileId"]}
            data = client.get(f"/api/files/{file['id']}/content")
            assert data.status_code == 200, data.text
            assert data.content == source
            result = client.get(f"/api/files/{done['result']['fileId']}/content")
            assert result.status_code == 200, result.text
            assert result.content == b"kept\nacross a restart\n"
            assert hashlib.sha256(result.content).hexdigest() == done["result"]["sha256"]
    finally:
        remove_dev_state(state)


@pytest.mark.slow
def test_ctrl_c_while_dev_stops_after_a_crash_does_not_cut_the_stop_short(
        installed_site: tuple[Path, str], tmp_path: Path) -> None:
    site_dir, python = installed_site
    with dev_site(site_dir, python, "zeta9", tmp_path / "state") as dev:
        web = next(p for p in dev.children if "serve" in p.cmdline())
        web.kill()
        embedded().wait_until(lambda: "web exited" in dev.log.read_text(), 30, "dev noticing web's exit")
        # dev is stopping what it started (SeaweedFS alone takes seconds): an impatient Ctrl-C now
        os.kill(dev.pid, signal.SIGINT)
    # dev_site: dev exited, and every process it started is gone


def test_a_server_still_starting_when_dev_is_stopped_is_stopped_too(tmp_path: Path) -> None:
    """Ctrl-C (or SIGTERM) while dev waits for a server to answer: the half-started server goes too."""
    launched: list[subprocess.Popen] = []

    def launch() -> tuple[subprocess.Popen, object, int]:
        launched.append(subprocess.Popen(["sleep", "120"], start_new_session=True))

        def ready() -> bool:
            raise KeyboardInterrupt  # what dev's signal handler raises, here while the server starts

        return launched[-1], ready, 0

    try:
        with pytest.raises(KeyboardInterrupt):
            embedded()._start("server", tmp_path / "server.log", None, launch, embedded().stop_process)
        assert launched[0].poll() is not None, "the server was left running"
    finally:
        for process in launched:
            process.kill()
            process.wait()
