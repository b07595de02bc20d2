"""The kill plan: which process of which site is SIGKILLed when, and for how long it stays down.

Drawn once, before the load starts, from ``random.Random(seed)``: the same seed
gives the same plan (times, targets, down times), whatever the machine does.
The times are the earliest a kill happens; the campaign carries them out in
order, one kill at a time per site, so a slow restart delays the next one.
"""

from __future__ import annotations

import random

import msgspec

from harness.state import ProcessCounts

# Seconds between a process coming back and the next kill at the same site.
GAP = (4.0, 10.0)
# Seconds a killed process stays down before it is started again.
DOWN = (0.2, 2.0)
# Seconds before the first kill (the clients get going first).
FIRST = (2.0, 6.0)
# Workers die more often than the web process: one kill in four takes the web down.
WEB_SHARE = 0.25


class Kill(msgspec.Struct, frozen=True):
    at: float  # seconds after the load started
    site: str
    role: str  # "worker" | "web"
    index: int  # which process of the role
    down: float  # seconds before it is started again


def plan(seed: int, seconds: float, sites: list[str], counts: ProcessCounts) -> list[Kill]:
    """Every kill of a campaign of ``seconds`` over ``sites``, ordered by time.

    A site gets at least one web kill once it gets three kills or more, so even a
    short campaign sees lost responses.
    """
    rng = random.Random(seed)
    kills: list[Kill] = []
    for site in sites:
        own: list[Kill] = []
        at = rng.uniform(*FIRST)
        while at < seconds:
            role = "web" if rng.random() < WEB_SHARE else "worker"
            kill = Kill(at=round(at, 2), site=site, role=role, index=rng.randrange(getattr(counts, role)),
                        down=round(rng.uniform(*DOWN), 2))
            own.append(kill)
            at += kill.down + rng.uniform(*GAP)
        if len(own) >= 3 and all(kill.role == "worker" for kill in own):
            middle = len(own) // 2
            own[middle] = msgspec.structs.replace(own[middle], role="web", index=0)
        kills += own
    return sorted(kills, key=lambda kill: (kill.at, kill.site))
