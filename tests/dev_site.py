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

SERVICE_URLS = ("DATABASE_URL", "BROKER_URL", "S3_ENDPOINT_URL", "SMTP_URL")
STOP_TIMEOUT = 60.0


class DevSite:
    def __init__(self, process: subprocess.Popen, port: int, log: Path, children: list[psutil.Process],
                 command: list[str], state: Path, env: dict[str, str], cwd: Path) -> None:
        self.pid = process.pid
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.children = children
        self._command, self._state, self._env, self._cwd = command, state, env, cwd

    def command(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        """``python -m <site> ARGS --state <this dev's folder>``, with no service URL in its environment."""
        return subprocess.run([*self._command, *args, "--state", str(self._state)], cwd=self._cwd, env=self._env,
                              input=stdin, capture_output=True, text=True, timeout=120, check=False)


def without_services() -> dict[str, str]:
    """This environment without the service URLs: the site's commands find dev's services themselves."""
    return {k: v for k, v in os.environ.items() if k not in SERVICE_URLS}


def descendants(pid: int) -> list[psutil.Process]:
    """Every process below ``pid`` (none once it is gone)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def running(process: psutil.Process) -> bool:
    try:  # is_running also tells a reused pid from the process it was
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def kill_everything(dev: subprocess.Popen, known: list[psutil.Process]) -> None:
    """SIGKILL ``dev``'s process group and the group of every process it started (each server and site
    process runs in a session of its own, so killing dev's group alone would leave them), then wait."""
    everyone = [*known, *descendants(dev.pid)]
    kill_groups([psutil.Process(dev.pid), *everyone] if dev.poll() is None else everyone)
    dev.wait()
    wait_gone(everyone, 30)


def kill_groups(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            if not running(process):
                continue
            if os.getpgid(process.pid) == process.pid:  # a group leader: PostgreSQL's backends go with it
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass


def wait_gone(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of ``processes`` still running after ``timeout`` seconds (a zombie counts as gone: it
    is reaped by whoever inherited it)."""
    deadline = time.monotonic() + timeout
    while (alive := [p for p in processes if running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


@contextmanager
def dev_site(site_dir: Path, python: str, slug: str, state: Path, env: dict[str, str] | None = None,
             keep_state: bool = False, sigint_ignored: bool = False,
             stop_signal: signal.Signals = signal.SIGINT) -> Iterator[DevSite]:
    """The site with embedded services on a free port; on the way out ``stop_signal`` (Ctrl-C's by
    default), and every process dev started is gone. If dev does not stop within a minute (or never
    announced its URL), everything it started is killed and the test fails: a failed test leaks no server.

    ``sigint_ignored``: dev starts with SIGINT ignored, as a process started in the background by a
    non-interactive shell does (CI runners, process managers).

    The state folder (and root's PostgreSQL data kept outside it) is removed afterwards unless
    ``keep_state``: then the next ``dev_site`` on the same folder starts on the same data."""
    port = free_port()
    environment = without_services() | (env or {})
    log_path = state.parent / f"{state.name}-dev.log"
    log = log_path.open("a+")
    start = log.tell()
    command = [python, "-m", slug]
    dev = subprocess.Popen(
        [*command, "dev", "--port", str(port), "--state", str(state)],
        cwd=site_dir, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
    )
    children: list[psutil.Process] = []
    stopped = False
    try:
        def announced() -> bool:
            log.seek(start)
            return "is running at" in log.read()

        embedded().wait_until(announced, 120, "dev announcing its URL", dev)
        children = descendants(dev.pid)
        yield DevSite(dev, port, log_path, children, command, state, environment, site_dir)
        dev.send_signal(stop_signal)
        try:
            dev.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"dev did not stop within {STOP_TIMEOUT:.0f} s of {stop_signal.name}") from None
        stopped = True
    finally:
        if not stopped:
            kill_everything(dev, children)
        log.close()
    # dev's own waits are bounded (20 s for a process, 5 s for SeaweedFS), after which it SIGKILLs
    left = [f"{p.pid} {p.name()}" for p in wait_gone(children, 30)]
    kill_groups(children)
    assert left == [], f"dev left processes running: {left}"
    if not keep_state:
        remove_dev_state(state)


def remove_dev_state(state: Path) -> None:
    embedded().remove_state(embedded().postgres_data_dir(state.resolve()))
    embedded().remove_state(state)
