"""Installing a rendered site into its own virtualenv, and starting / stopping its processes.

Processes are started in their own session (they outlive ``up``) and are
stopped by pid — and only after checking that the pid still runs this site's
interpreter, so a recycled pid is never signalled.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import psutil

from .background import start_logged
from .services import embedded

log = logging.getLogger(__name__)


class ProcessError(RuntimeError):
    """A site process failed to install or start; the message points at its log."""


def _uv() -> str | None:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def install_site(site_dir: Path, venv_dir: Path, log_path: Path, extras: str = "") -> str:
    """A virtualenv with the site installed editable (reinstalled if the venv exists); returns its python."""
    target = f"{site_dir}[{extras}]" if extras else str(site_dir)
    uv = _uv()
    python = venv_dir / "bin" / "python"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        if uv:
            steps = [
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv_dir)],
                [uv, "pip", "install", "--quiet", "--python", str(python), "-e", target],
            ]
        else:
            steps = [
                [sys.executable, "-m", "venv", str(venv_dir)],
                [str(python), "-m", "pip", "install", "--quiet", "-e", target],
            ]
        if python.exists():
            steps = steps[1:]
        for argv in steps:
            if subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False).returncode != 0:
                raise ProcessError(f"installing {site_dir.name} failed; see {log_path}")
    return str(venv_dir / "bin" / "python")


def run_site_command(python: str, slug: str, args: list[str], env: dict[str, str], cwd: str,
                     timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python -m <slug> ARGS`` to completion (migrate, maintain, tasks inspect, ...)."""
    return subprocess.run(
        [python, "-m", slug, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_site_process(python: str, slug: str, args: list[str], env: dict[str, str], cwd: str,
                       log_path: Path) -> int:
    return start_logged([python, "-m", slug, *args], log_path, env=env, cwd=cwd).pid


def runs(pid: int, python: str) -> bool:
    """Is ``pid`` alive and still this site's interpreter?"""
    try:
        cmdline = psutil.Process(pid).cmdline()
    except psutil.Error:  # gone, a zombie, or not ours to read
        return False
    return bool(cmdline) and cmdline[0] == python and embedded().pid_alive(pid)


def stop_site_process(pid: int, python: str, timeout: float = 20.0) -> None:
    if runs(pid, python):
        embedded().stop_process(pid, signal.SIGTERM, timeout)


def kill_site_process(pid: int, python: str) -> None:
    """SIGKILL: the process gets no chance to finish what it holds (for crash scenarios)."""
    if runs(pid, python):
        embedded().stop_process(pid, signal.SIGKILL, 10.0)


def _wait_alive(ready: Callable[[], bool], pid: int, log_path: Path, timeout: float, *, awaited: str,
                subject: str) -> None:
    """Poll ``ready`` until it holds; a process that exits first fails at once, not at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not embedded().pid_alive(pid):
            raise ProcessError(f"process {pid} exited before {awaited}; see {log_path}")
        if ready():
            return
        time.sleep(0.1)
    raise ProcessError(f"{subject} not ready after {timeout:.0f} s; see {log_path}")


def wait_ready(url: str, pid: int, log_path: Path, timeout: float = 90.0) -> None:
    def answers() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    _wait_alive(answers, pid, log_path, timeout, awaited=f"{url} answered", subject=url)


def wait_logged(log_path: Path, offset: int, text: str, pid: int, timeout: float = 60.0) -> None:
    """Wait until the process wrote ``text`` to its log after ``offset`` (how a worker says it consumes)."""

    def logged() -> bool:
        with open(log_path, "rb") as log:
            log.seek(offset)
            return text.encode() in log.read()

    _wait_alive(logged, pid, log_path, timeout, awaited="it was ready", subject=f"process {pid}")


def free_port() -> int:
    return embedded().free_port()


def process_env(extra: dict[str, str]) -> dict[str, str]:
    """A clean environment for a site process: PATH and locale from here, the rest explicit."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")}
    return {**keep, **extra}
