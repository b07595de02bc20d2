"""Carrying out the kill plan: SIGKILL from outside, a pause, the same process started again.

One thread per site walks that site's kills in order. A kill waits for its
planned time (the pacing of the plan, not a synchronisation); the restart
returns when the new process says it is ready. Once the load is over no
further kill starts, but a killed process is always started again.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from harness import control

from .results import KillDone
from .schedule import Kill


def carry_out(state_dir: Path, kills: list[Kill], began: float, stop: threading.Event) -> list[KillDone]:
    """The kills of one site, in order; ``began`` is the load's start (monotonic)."""
    done: list[KillDone] = []
    for kill in kills:
        record = KillDone(site=kill.site, role=kill.role, index=kill.index, planned_at=kill.at, down=kill.down)
        done.append(record)
        if stop.wait(max(0.0, began + kill.at - time.monotonic())):
            continue  # the load ended first: recorded as not carried out
        killed_at = time.monotonic()
        record.at = round(killed_at - began, 2)
        try:
            record.pid = control.kill(state_dir, kill.site, kill.role, kill.index)
            time.sleep(kill.down)  # down on purpose: clients meet refused connections meanwhile
            control.restart(state_dir, kill.site, kill.role, kill.index)
        except Exception as error:
            record.error = f"{type(error).__name__}: {error}"
            return done  # the site is not whole again: no further kills
        record.back_after = round(time.monotonic() - killed_at, 2)
    return done
