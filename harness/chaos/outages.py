"""Service faults (``chaos --services``): the embedded servers under every site die or freeze, one at a time.

The plan is drawn once from ``random.Random(seed)``: the order of the faults and
how long each lasts. A fault is carried out from outside, by the server's pid:

    broker-kill     Valkey SIGKILLed, started again on its port and data (the append-only file)
    broker-empty    the sites' workers frozen first so messages wait in the broker; Valkey SIGKILLed
                    and started EMPTY (every queued message lost; its users file kept); workers resumed
    postgres-short  the postmaster SIGKILLed, started again on the same data (crash recovery) soon
    postgres-long   ... after longer than a site's pool waits for a connection (db/pool.py)
    s3-freeze       SeaweedFS stopped (SIGSTOP) past the site's object timeout, then resumed
    s3-kill         SeaweedFS SIGKILLed, started again on its port and data

Each server comes back with the ports, data and credentials ``harness up`` gave it
(services.start_again); its new pid is recorded in sites.json at once.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from pathlib import Path

import msgspec

from harness import processes, services, state
from harness.control import locked

# The site's own limits the long faults must outlast: db/pool.py ACQUIRE_TIMEOUT and
# services/storage.py OBJECT_TIMEOUT (tests/test_chaos_units.py holds them equal).
POOL_ACQUIRE_TIMEOUT = 5.0
OBJECT_TIMEOUT = 15.0

# kind -> (service record, action, seconds gone (range))
KINDS: dict[str, tuple[str, str, tuple[float, float]]] = {
    "broker-kill": ("broker", "kill", (1.0, 3.0)),
    "broker-empty": ("broker", "kill", (1.0, 3.0)),
    "postgres-short": ("postgres", "kill", (1.0, 3.0)),
    "postgres-long": ("postgres", "kill", (POOL_ACQUIRE_TIMEOUT + 2.0, POOL_ACQUIRE_TIMEOUT + 5.0)),
    "s3-freeze": ("s3", "freeze", (OBJECT_TIMEOUT + 2.0, OBJECT_TIMEOUT + 5.0)),
    "s3-kill": ("s3", "kill", (2.0, 5.0)),
}
# Seconds the workers are frozen before the broker is emptied: submits meanwhile leave messages waiting.
WORKER_PAUSE = (4.0, 8.0)
# Seconds of plain load before each fault (the previous one recovered first).
GAP = (3.0, 8.0)


class Outage(msgspec.Struct, frozen=True):
    kind: str
    service: str  # the record in sites.json: "broker" | "postgres" | "s3"
    action: str  # "kill" | "freeze"
    down: float  # seconds the server is gone or frozen
    gap: float  # seconds of plain load before it
    empty: bool = False  # started again without its data
    pause_workers: float = 0.0  # seconds the sites' workers are frozen before it


def plan(seed: int, kinds: tuple[str, ...] = tuple(KINDS)) -> list[Outage]:
    """Every fault of ``kinds`` once, in a seeded order, each with its seeded durations."""
    rng = random.Random(seed)
    order = list(kinds)
    rng.shuffle(order)
    planned: list[Outage] = []
    for kind in order:
        service, action, down = KINDS[kind]
        empty = kind == "broker-empty"
        planned.append(Outage(kind=kind, service=service, action=action, down=round(rng.uniform(*down), 2),
                              gap=round(rng.uniform(*GAP), 2), empty=empty,
                              pause_workers=round(rng.uniform(*WORKER_PAUSE), 2) if empty else 0.0))
    return planned


class OutageDone(msgspec.Struct):
    """One fault as it was carried out, and what the sites did about it (times: wall clock, seconds)."""

    kind: str
    down: float
    started_at: float | None = None  # the server killed or frozen (workers frozen first: the freeze)
    back_at: float | None = None  # the server answering again
    pid_before: int | None = None
    pid_after: int | None = None
    first_success_s: float | None = None  # back → the first task to succeed after it
    drained_s: float | None = None  # back → every task accepted before it ended
    answers: dict[str, int] = msgspec.field(default_factory=dict)  # status → count, from start to drained
    alerts_fired: list[str] = msgspec.field(default_factory=list)
    alerts_unresolved: list[str] = msgspec.field(default_factory=list)
    # still firing, but counting events over a range that has not passed since the last fault
    alerts_within_range: list[str] = msgspec.field(default_factory=list)
    error: str | None = None


def _worker_pids(state_dir: Path) -> list[tuple[int, str]]:
    return [(pid, site.venv_python) for site in state.load(state_dir).sites for pid in site.pids.worker
            if processes.runs(pid, site.venv_python)]


def _signal_all(pids: list[tuple[int, str]], sig: int) -> None:
    for pid, _ in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def carry_out(state_dir: Path, outage: Outage) -> OutageDone:
    """The fault, from the first signal until its server answers again; any error is recorded."""
    done = OutageDone(kind=outage.kind, down=outage.down)
    frozen: list[tuple[int, str]] = []
    try:
        if outage.pause_workers:
            frozen = _worker_pids(state_dir)
            done.started_at = time.time()
            _signal_all(frozen, signal.SIGSTOP)
            time.sleep(outage.pause_workers)  # messages pile up in the broker meanwhile
        if outage.action == "freeze":
            _freeze(state_dir, outage, done)
        else:
            _kill_and_start(state_dir, outage, done)
        done.back_at = time.time()
    except Exception as error:
        done.error = f"{type(error).__name__}: {error}"
    finally:
        _signal_all(frozen, signal.SIGCONT)
    return done


def _freeze(state_dir: Path, outage: Outage, done: OutageDone) -> None:
    pid = getattr(state.load(state_dir).services, outage.service).pid
    done.pid_before = done.pid_after = pid
    done.started_at = done.started_at or time.time()
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(outage.down)  # requests meanwhile meet a server that accepts and never answers
    finally:
        os.kill(pid, signal.SIGCONT)


def _kill_and_start(state_dir: Path, outage: Outage, done: OutageDone) -> None:
    with locked(state_dir) as sites:  # the new pid is recorded even if a later step fails
        record = getattr(sites.services, outage.service)
        done.pid_before = record.pid
        done.started_at = done.started_at or time.time()
        services.stop_server(record, kill=True)
        time.sleep(outage.down)
        record = services.start_again(state_dir, record, empty=outage.empty)
        setattr(sites.services, outage.service, record)
        done.pid_after = record.pid
