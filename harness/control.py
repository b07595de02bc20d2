"""Controlling a live run from outside the sites: restart processes, break and heal storage.

Used by site_tests' fault scenarios (several pytest workers at once: every
change to sites.json happens under a file lock).
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import stand, state
from .services import FAULT_PROXY
from .state import SiteRecord, SitesFile


@contextmanager
def locked(state_dir: Path) -> Iterator[SitesFile]:
    """sites.json, read and written back under an exclusive lock."""
    with open(Path(state_dir) / "sites.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sites = state.load(state_dir)
        yield sites
        state.save(state_dir, sites)


def _site(sites: SitesFile, slug: str) -> SiteRecord:
    return next(site for site in sites.sites if site.slug == slug)


def stop(state_dir: Path, slug: str, roles: tuple[str, ...] = stand.ROLES, kill: bool = False) -> None:
    with locked(state_dir) as sites:
        stand.stop_roles(_site(sites, slug), roles, kill=kill)


def start(state_dir: Path, slug: str, roles: tuple[str, ...] = stand.ROLES) -> None:
    with locked(state_dir) as sites:
        stand.start_roles(state_dir, _site(sites, slug), roles, counts=sites.processes)


def _signal_proxy(state_dir: Path, slug: str, sig: int, expect: str) -> None:
    proxy = state.load(state_dir).services.s3_proxies[slug]
    cmdline = Path(f"/proc/{proxy.pid}/cmdline").read_bytes().split(b"\0")
    if str(FAULT_PROXY).encode() not in cmdline:
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
