"""Before and after: pairs of bench runs (``--json`` files) side by side, as a table and a plot.

``python -m harness bench-compare BEFORE.json AFTER.json [BEFORE2.json AFTER2.json …] --plot PNG``.
Each pair is meant to be two runs back to back on one machine, the template being the only
difference; the references (bare actor, naive site, pgbench) are measured again in every run,
so the ratios compare like with like. Each run's figures are medians across its interleaved
rounds (rounds.py), the ratios' ranges printed beside them.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from . import rounds
from .measure import BenchError
from .results import BenchReport, EndToEnd, read_json
from .tables import cell

# The processes whose CPU the lifecycle spends; the rest (S3, its proxy, broker, driver) is shared work.
OWN = ("web", "worker", "postgres")


class Row(msgspec.Struct, frozen=True):
    label: str
    before: float | None
    after: float | None


def load(path: Path) -> BenchReport:
    try:
        return read_json(Path(path))
    except (OSError, msgspec.DecodeError) as error:
        raise BenchError(f"{path}: not a bench report ({error})") from None


def _batches(report: BenchReport, site: str, workers: int) -> list[EndToEnd]:
    """The site's batches at ``workers``, one per round."""
    return [e for e in report.end_to_end if e.site == site and e.workers == workers]


def _median_ratio(report: BenchReport, reference: str, site: str, workers: int) -> float | None:
    found = rounds.ratio_spreads(report, reference).get((site, workers))
    return round(found.median, 2) if found else None


def _median_cpu_ratio(report: BenchReport, site: str, workers: int, equal_speed: bool = False) -> float | None:
    cost = rounds.at_equal_speed if equal_speed else rounds.total_cpu
    found = rounds.cpu_ratio_spreads(report, rounds.NAIVE, cost).get((site, workers))
    return round(found.median, 2) if found else None


def figures(report: BenchReport, site: str, workers: int = 1) -> dict[str, float | None]:
    """One run's numbers for one site's batches, by the label they are compared under: medians across its
    rounds (a run from before the rounds has one)."""
    batches = _batches(report, site, workers)
    commits = next((c for c in report.commits if c.site == site), None)
    trips = next((t for t in report.round_trips if t.site == site and not t.not_counted), None)
    written = next((w for w in report.wal if w.site == site and not w.not_counted), None)
    cpu = rounds.median_cpu(batches) if batches else {}
    rate = rounds.rate_spreads(batches).get(workers)
    return {
        "write commits / task": commits.write_per_task if commits else None,
        "round trips / task": round(trips.statements / trips.tasks, 1) if trips and trips.tasks else None,
        "WAL records / task": written.records_per_task if written else None,
        "CPU ms / task, all processes": round(sum(cpu.values()), 2) if cpu else None,
        "CPU ms / task, web + worker + postgres": round(sum(cpu.get(k, 0.0) for k in OWN), 2) if cpu else None,
        "tasks/s": rate.median if rate else None,
        "ours / naive": _median_ratio(report, rounds.NAIVE, site, workers),
        "ours / bare": _median_ratio(report, rounds.BARE, site, workers),
        "CPU / task, ours / naive": _median_cpu_ratio(report, site, workers),
        "CPU / task, ours / naive, equal speed": _median_cpu_ratio(report, site, workers, equal_speed=True),
    }


def ranges(report: BenchReport, site: str, workers: int = 1) -> dict[str, str]:
    """The two ratios' ranges across the run's rounds, as ``low-high (n rounds)``."""
    out = {}
    for label, reference in (("ours / naive", rounds.NAIVE), ("ours / bare", rounds.BARE)):
        found = rounds.ratio_spreads(report, reference).get((site, workers))
        out[label] = f"{cell(found.low)}-{cell(found.high)} ({found.count} rounds)" if found else "-"
    return out


def rows(pairs: list[tuple[BenchReport, BenchReport]], site: str, workers: int = 1) -> list[list[Row]]:
    """Per pair, one row per label."""
    out = []
    for before, after in pairs:
        old, new = figures(before, site, workers), figures(after, site, workers)
        out.append([Row(label, old[label], new[label]) for label in old])
    return out


def text(pairs: list[tuple[BenchReport, BenchReport]], sites: list[str]) -> str:
    lines = []
    for site in sites:
        lines.append(f"{site}, 1 worker: before -> after, pair by pair (medians across each run's rounds)")
        table = rows(pairs, site)
        for index, row in enumerate(table[0]):
            cells = [f"{cell(t[index].before)} -> {cell(t[index].after)}" for t in table]
            lines.append(f"  {row.label:40s} " + " | ".join(cells))
        for label in ("ours / naive", "ours / bare"):
            cells = [f"{ranges(before, site)[label]} -> {ranges(after, site)[label]}" for before, after in pairs]
            lines.append(f"  {label + ', range':40s} " + " | ".join(cells))
    return "\n".join(lines) + "\n"


def plot(pairs: list[tuple[BenchReport, BenchReport]], sites: list[str], path: Path) -> None:
    """Three panels per site: commits and round trips, CPU by process, and the two ratios."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(sites), 3, figsize=(14, 4.2 * len(sites)), squeeze=False)
    for line, site in zip(axes, sites, strict=True):
        counts, cpu, ratios = line
        table = rows(pairs, site)
        labels = ["write commits / task", "round trips / task"]
        _paired_bars(counts, table, labels, f"{site}: per task, from the server")
        processes = sorted({k for b, a in pairs for r in (b, a) for e in r.end_to_end if e.site == site
                            for k in e.cpu_ms_per_task})
        _cpu_bars(cpu, pairs, site, processes)
        _paired_bars(ratios, table, ["ours / naive", "ours / bare"], f"{site}, 1 worker: against the references")
        ratios.axhline(0.8, color="tab:red", linewidth=0.8, linestyle="--")
    fig.suptitle("sitekit bench: before and after, " + ", ".join(f"pair {i + 1}" for i in range(len(pairs))),
                 fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _paired_bars(axis, table: list[list[Row]], labels: list[str], title: str) -> None:
    width = 0.8 / (2 * len(table))
    for p, pair in enumerate(table):
        chosen = [row for row in pair if row.label in labels]
        for side, (name, colour) in enumerate((("before", "tab:gray"), ("after", "tab:blue"))):
            offset = (2 * p + side) * width - 0.4 + width / 2
            values = [getattr(row, name) or 0.0 for row in chosen]
            bars = axis.bar([i + offset for i in range(len(chosen))], values, width, color=colour,
                            label=f"{name}" if p == 0 else None, alpha=1.0 if p == 0 else 0.6)
            axis.bar_label(bars, [cell(v) for v in values], fontsize=7)
    axis.set_xticks(range(len(labels)), labels, fontsize=8)
    axis.set_title(title, fontsize=9)
    axis.margins(y=0.2)
    axis.legend(fontsize=8)


def _cpu_bars(axis, pairs: list[tuple[BenchReport, BenchReport]], site: str, processes: list[str]) -> None:
    names, bottoms = [], []
    for p, (before, after) in enumerate(pairs):
        for name, report in (("before", before), ("after", after)):
            names.append(f"{name}\npair {p + 1}")
            bottoms.append(rounds.median_cpu(_batches(report, site, 1)))
    base = [0.0] * len(names)
    for process in processes:
        values = [cpu.get(process, 0.0) for cpu in bottoms]
        axis.bar(names, values, bottom=base, label=process)
        base = [b + v for b, v in zip(base, values, strict=True)]
    for x, total in enumerate(base):
        axis.annotate(cell(round(total, 2)), (x, total), ha="center", va="bottom", fontsize=7)
    axis.set_ylabel("CPU ms / task")
    axis.set_title(f"{site}, 1 worker: CPU per task by process (medians across rounds)", fontsize=9)
    axis.legend(fontsize=7, ncol=4)
    axis.margins(y=0.35)  # room for the legend above the bars
