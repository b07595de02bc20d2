"""Interleaved rounds: the order batches run in, and each figure's median and range across rounds.

One batch per reference is too noisy to judge a ratio on a shared machine (issue 33: ours/naive
read 0.52-0.97 across single runs). So every round runs each site, then the naive site, then
the bare actor, in turn; a ratio is taken within a round (both sides saw the same minute of the
machine) and judged on its median across rounds, its range (min-max) shown beside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence

import msgspec

from .measure import ratio
from .results import Baseline, BenchReport, EndToEnd, Naive

NAIVE = "naive"
BARE = "bare"
NAIVE_PACED = "naive paced"  # the naive site held to each site's rate (run.round_paces)


def reference_runs(report: BenchReport, reference: str) -> list:
    """The batches of ``reference``: NAIVE, BARE or NAIVE_PACED."""
    return {NAIVE: report.naive, BARE: report.baseline, NAIVE_PACED: report.naive_paced}[reference]


class Spread(msgspec.Struct, frozen=True):
    """A figure across rounds: its median, lowest and highest value, and how many rounds gave one."""

    median: float
    low: float
    high: float
    count: int

    @property
    def relative_range(self) -> float | None:
        """(high - low) / median: how far apart the rounds were, as a share of the figure."""
        return round((self.high - self.low) / self.median, 3) if self.median else None


def spread(values: Iterable[float | None]) -> Spread | None:
    """Median, min and max of the values given (None: a round without the figure), or None if there are none."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return Spread(median=round(statistics.median(present), 3), low=min(present), high=max(present),
                  count=len(present))


def schedule(rounds: int, sites: Sequence[str]) -> list[tuple[int, str]]:
    """(round, what) in the order batches run: each round every site, then the naive site, then the bare actor."""
    return [(number, what) for number in range(1, rounds + 1) for what in (*sites, NAIVE, BARE)]


def by_round(runs: Iterable[Baseline | EndToEnd]) -> dict[tuple[int, int], float]:
    """tasks/s by (workers, round)."""
    return {(run.workers, run.round): run.tasks_per_s for run in runs}


def paced_site(report: BenchReport, run: Naive) -> str:
    """The site whose rate a paced batch of the naive site was held to. Reports from before every site was
    paced name none: theirs was the first site's."""
    return run.paced_to or (report.end_to_end[0].site if report.end_to_end else "")


def ratios(report: BenchReport, reference: str) -> dict[tuple[str, int], list[float | None]]:
    """Each site's tasks/s over ``reference``'s (``naive`` or ``bare``) at the same worker count, round by
    round: {(site, workers): [ratio of round 1, round 2, …]} (None where that round lacks the reference)."""
    theirs = by_round(reference_runs(report, reference))
    out: dict[tuple[str, int], list[float | None]] = {}
    for run in sorted(report.end_to_end, key=lambda e: e.round):
        out.setdefault((run.site, run.workers), []).append(
            ratio(run.tasks_per_s, theirs.get((run.workers, run.round), 0.0)))
    return out


def ratio_spreads(report: BenchReport, reference: str) -> dict[tuple[str, int], Spread | None]:
    return {key: spread(values) for key, values in ratios(report, reference).items()}


# What a batch's task costs, as a ratio compares it: ``total_cpu`` or ``at_equal_speed``.
Cost = Callable[[Baseline | EndToEnd], float | None]


def total_cpu(run: Baseline | EndToEnd) -> float:
    """The batch's CPU per task, every process."""
    return sum(run.cpu_ms_per_task.values())


def at_equal_speed(run: Baseline | EndToEnd) -> float | None:
    """The batch's CPU per task (every process) in units of the speed probe's work (speed.py): counted
    so, a round whose two batches ran at different machine speeds is compared as if both had run at
    one. None for a batch without a probe (reports from before it)."""
    if not run.unit_ms:
        return None
    return total_cpu(run) / run.unit_ms


def process_cpu(name: str) -> Cost:
    """One process group's CPU per task (None for a batch that did not measure it): compared round by
    round, it tells which process carries the distance, judged as the total is."""

    def cost(run: Baseline | EndToEnd) -> float | None:
        return run.cpu_ms_per_task.get(name)

    return cost


def cpu_ratios(report: BenchReport, reference: str,
               cost: Cost = total_cpu) -> dict[tuple[str, int], list[float | None]]:
    """Each site's CPU per task (``cost``: every process as measured, or ``at_equal_speed``) over
    ``reference``'s, round by round, as ``ratios`` pairs them. Far steadier than the rates on a shared
    machine: another process's load slows both sides' clocks, but a task still costs the CPU it costs."""
    # A paced batch stands beside the one site it was held to; the other references beside every site (None).
    paced = reference == NAIVE_PACED
    theirs = {(paced_site(report, run) if paced else None, run.workers, run.round): cost(run)
              for run in reference_runs(report, reference)}
    out: dict[tuple[str, int], list[float | None]] = {}
    for run in sorted(report.end_to_end, key=lambda e: e.round):
        ours, other = cost(run), theirs.get((run.site if paced else None, run.workers, run.round))
        out.setdefault((run.site, run.workers), []).append(ratio(ours, other) if ours is not None and other else None)
    return out


def cpu_ratio_spreads(report: BenchReport, reference: str,
                      cost: Cost = total_cpu) -> dict[tuple[str, int], Spread | None]:
    return {key: spread(values) for key, values in cpu_ratios(report, reference, cost).items()}


def rate_spreads(runs: Iterable[Baseline | EndToEnd]) -> dict[int, Spread | None]:
    """tasks/s across rounds by worker processes (of one site, or of one reference)."""
    grouped: dict[int, list[float]] = {}
    for run in runs:
        grouped.setdefault(run.workers, []).append(run.tasks_per_s)
    return {workers: spread(values) for workers, values in grouped.items()}


def median_cpu(runs: Sequence[Baseline | EndToEnd]) -> dict[str, float]:
    """CPU ms per task by process, each the median across ``runs`` (rounds of one batch)."""
    processes = [name for run in runs for name in run.cpu_ms_per_task]
    return {name: round(statistics.median(run.cpu_ms_per_task[name] for run in runs
                                          if name in run.cpu_ms_per_task), 2)
            for name in dict.fromkeys(processes)}


def median_p99(runs: Sequence[Baseline | EndToEnd]) -> Spread | None:
    return spread(run.latency.p99 for run in runs)
