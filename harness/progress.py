"""Progress of long work, one line as each step starts and one as it ends, with its time.

Rendering, installing and starting sites takes minutes on a fresh machine: the user sees which
site is at which step, and how long each took, in plain log lines (readable on a terminal and in a
CI log alike).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("harness")


@contextmanager
def step(what: str) -> Iterator[None]:
    """``what …`` now, and ``what: done in 1.2 s`` (or ``failed after``) when the block ends."""
    log.info("%s …", what)
    started = time.monotonic()
    try:
        yield
    except BaseException:
        log.info("%s: failed after %.1f s", what, time.monotonic() - started)
        raise
    log.info("%s: done in %.1f s", what, time.monotonic() - started)
