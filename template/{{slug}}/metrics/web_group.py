"""The web processes serving one site on one address share their HTTP metrics.

prometheus_client's multiprocess mode: each process writes its samples to files named by
its pid in one directory, and a scrape (whichever process answers it) sums every file
there. Nothing else is shared, so the directory is the group: one per site and address.
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
import tempfile
from pathlib import Path

from ..settings import SettingsError

ENV = "PROMETHEUS_MULTIPROC_DIR"
LOCK = "group.lock"  # not *.db: the collector reads every *.db file in the directory


def join_web_group(slug: str, host: str, port: int) -> Path:
    """Put this process's metrics in its group's directory, wiping it if this is the first process of a run.

    Must run before anything imports prometheus_client: the library chooses between in-memory
    and file-backed values once, at import, from the environment variable.
    """
    if "prometheus_client" in sys.modules:
        raise RuntimeError(f"prometheus_client was imported before {ENV} was set; metrics would stay per process")
    directory = group_directory(slug, host, port)
    # Stale files: a histogram file of a dead process must keep counting while its group serves
    # on (its requests happened; dropping them would make the counter go back, which Prometheus
    # reads as a reset). mark_process_dead does not help here: it only removes live-gauge files.
    # prometheus_client's docs say to wipe the directory when the whole group starts; with
    # independent `serve` processes there is no parent to do it, so the group is known by a lock:
    # every process holds it shared for its whole life (the kernel drops it when the process ends,
    # however it ends), and a starting process that gets it exclusively knows no other is alive,
    # hence no file in the directory belongs to a live process: it is an earlier run's, wiped.
    descriptor = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass  # the group is serving: join it with the counts it has
    else:
        for stale in directory.glob("*.db"):
            stale.unlink()
    # Blocks only while another starting process wipes. The descriptor is never closed: the lock
    # is this process's membership. (A downgrade from exclusive is not atomic, but a process that
    # slips in between finds only files of dead processes too: this one has written none yet.)
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    # Set from Python, not by a start-up script as the docs advise: `serve` has no child processes.
    os.environ[ENV] = str(directory)
    return directory


def leave_web_group(directory: Path) -> None:
    """On a clean exit: the library's bookkeeping for a dead process (it drops live gauges only;
    the histogram's file stays, its counts are part of the group's totals)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid(), str(directory))


def group_directory(slug: str, host: str, port: int) -> Path:
    """$PROMETHEUS_MULTIPROC_DIR if the operator set it (one per site is theirs to keep), else a
    directory named after the site and address: two sites never serve one address at once."""
    if configured := os.environ.get(ENV):
        directory = Path(configured)
        directory.mkdir(parents=True, exist_ok=True)
        return directory
    directory = Path(tempfile.gettempdir()) / f"{slug}-metrics-{os.getuid()}-{host}-{port}"
    directory.mkdir(mode=0o700, exist_ok=True)
    # In a shared /tmp someone else may have made it first, to feed figures into our scrape.
    found = directory.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise SettingsError(f"{directory} is not a private directory of this user; set {ENV} to one for this site")
    return directory
