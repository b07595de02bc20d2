"""Starting a process in the background, its output appended to a log file.

Every long-lived process the harness starts (site processes, the storage fault
proxy, nginx, the bench's bare workers) starts this way: in its own session, so
it outlives the command that started it and a Ctrl-C in the terminal does not
reach it; stopped later by pid.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def start_logged(argv: list[str], log_path: Path, **popen: Any) -> subprocess.Popen:
    """Start ``argv`` with no stdin, stdout and stderr appended to ``log_path``; the pid is the caller's
    to record. ``popen``: further ``subprocess.Popen`` arguments (env, cwd)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, **popen)
