"""Controlling a live run from outside the sites: restart processes, break and heal storage.

Used by site_tests' fault scenarios (several pytest workers at once: every
change to sites.json happens under a file lock) and by the fault campaign. A
process is started under the lock — its pid recorded at once, so ``down``
finds it whatever happens next — and waited for outside it.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from . import processes, stand, state
from .services import FAULT_PROXY
from .state import SiteRecord, SitesFile


@contextmanager
def locked(state_dir: Path) -> Iterator[SitesFile]:
    """sites.json, read and written back under an exclusive lock — also when the block fails, so
    what it started before failing (a restarted server's pid, say) is recorded and `down` stops it."""
    with open(Path(state_dir) / "sites.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sites = state.load(state_dir)
        try:
            yield sites
        finally:
            state.save(state_dir, sites)


def _site(sites: SitesFile, slug: str) -> SiteRecord:
    return next(site for site in sites.sites if site.slug == slug)


def stop(state_dir: Path, slug: str, roles: tuple[str, ...] = stand.ROLES, kill: bool = False) -> None:
    with locked(state_dir) as sites:
        stand.stop_roles(_site(sites, slug), roles, kill=kill)


def start(state_dir: Path, slug: str, roles: tuple[str, ...] = stand.ROLES) -> None:
    with locked(state_dir) as sites:
        stand.start_roles(state_dir, _site(sites, slug), roles, counts=sites.processes)


def kill(state_dir: Path, slug: str, role: str, index: int) -> int:
    """SIGKILL process ``index`` of ``role``: it finishes nothing it holds. Its pid stays recorded
    (``down`` skips a dead pid) until ``restart`` puts a new one in its place. Returns the pid."""
    with locked(state_dir) as sites:
        record = _site(sites, slug)
        pid = getattr(record.pids, role)[index]
        processes.kill_site_process(pid, record.venv_python)
        return pid


def restart(state_dir: Path, slug: str, role: str, index: int) -> int:
    """Start process ``index`` of ``role`` again, in place of a stopped one; returns once it is ready."""
    with locked(state_dir) as sites:
        record = _site(sites, slug)
        started = stand.spawn(state_dir, record, role, index)
        getattr(record.pids, role)[index] = started.pid
    stand.wait_started(record, started)
    return started.pid


def scale(state_dir: Path, slug: str, role: str, count: int) -> int:
    """Run exactly ``count`` processes of ``role``: start the missing ones, stop (SIGTERM) those above.
    Returns how many ran before, to scale back to."""
    with locked(state_dir) as sites:
        record = _site(sites, slug)
        pids = getattr(record.pids, role)
        before = len(pids)
        for pid in pids[count:]:
            processes.stop_site_process(pid, record.venv_python)
        del pids[count:]
        started = [stand.spawn(state_dir, record, role, index) for index in range(len(pids), count)]
        pids.extend(process.pid for process in started)
    for process in started:
        stand.wait_started(record, process)
    return before


def _signal_proxy(state_dir: Path, slug: str, sig: int, expect: str) -> None:
    proxy = state.load(state_dir).services.s3_proxies[slug]
    try:
        cmdline = psutil.Process(proxy.pid).cmdline()
    except psutil.Error:  # gone (or a zombie): not the proxy to signal either
        cmdline = []
    if str(FAULT_PROXY) not in cmdline:
        raise RuntimeError(f"pid {proxy.pid} is not {slug}'s storage proxy any more")
    os.kill(proxy.pid, sig)
    state_file = Path(proxy.data_dir) / "s3-proxy.port.state"
    deadline = time.monotonic() + 10
    while state_file.read_text() != expect:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{slug}'s storage proxy did not become {expect}")
        time.sleep(0.02)


def break_storage(state_dir: Path, slug: str) -> None:
    """From now on the site's S3 connections are refused or cut (returns once that holds)."""
    _signal_proxy(state_dir, slug, signal.SIGUSR1, "broken")


def heal_storage(state_dir: Path, slug: str) -> None:
    _signal_proxy(state_dir, slug, signal.SIGUSR2, "healthy")
