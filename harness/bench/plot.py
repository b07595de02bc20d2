"""The plot of a bench run (docs/benchmarks.png): throughput, latency, API submit and list pages."""

from __future__ import annotations

from pathlib import Path

from . import rounds
from .results import BenchReport
from .tables import batches, ceiling_rows, cell, machine_line


def plot(report: BenchReport, path: Path) -> None:
    """Four panels: throughput against the references and the ceiling, latency, API submit, list pages."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    (rates, latencies), (api, lists) = axes

    # Medians across rounds, each with its range as an error bar.
    names, spreads, colours = [], [], []
    for label, runs, colour in (("", report.end_to_end, "tab:blue"), ("bare", report.baseline, "tab:gray"),
                                ("naive", report.naive, "tab:orange")):
        for (site, workers), group in batches(runs).items():
            names.append(f"{site or label}\n{workers}w")
            spreads.append(rounds.rate_spreads(group)[workers])
            colours.append(colour)
    values = [found.median if found else 0.0 for found in spreads]
    errors = [[v - (f.low if f else v) for v, f in zip(values, spreads, strict=True)],
              [(f.high if f else v) - v for v, f in zip(values, spreads, strict=True)]]
    for row in ceiling_rows(report):
        if row.ceiling_tasks_per_s:
            names.append(f"ceiling\n{row.site}")
            values.append(row.ceiling_tasks_per_s)
            colours.append("tab:red")
    errors[0] += [0.0] * (len(values) - len(errors[0]))
    errors[1] += [0.0] * (len(values) - len(errors[1]))
    rates.bar(names, values, color=colours, yerr=errors, capsize=3)
    rates.set_yscale("log")
    rates.margins(y=0.15)
    rates.set_ylabel("tasks/s (log)")
    rates.set_title("End-to-end tasks/s (median, range across rounds): sites, bare actor, naive site, ceiling")
    for x, v in enumerate(values):
        rates.annotate(cell(v), (x, v), ha="center", va="bottom", fontsize=8)

    rounds_of = max((e.round for e in report.end_to_end), default=1)
    runs = [(f"{e.site} {e.workers}w" + (f" r{e.round}" if rounds_of > 1 else ""), e.latency)
            for e in report.end_to_end]
    runs += [(f"bare {b.workers}w" + (f" r{b.round}" if rounds_of > 1 else ""), b.latency) for b in report.baseline]
    runs += [(f"naive {n.workers}w" + (f" r{n.round}" if rounds_of > 1 else ""), n.latency) for n in report.naive]
    width = 0.27
    for offset, (label, pick) in enumerate((("p50", "p50"), ("p95", "p95"), ("p99", "p99"))):
        latencies.bar([i + (offset - 1) * width for i in range(len(runs))],
                      [getattr(lat, pick) for _, lat in runs], width, label=label)
    latencies.set_xticks(range(len(runs)), [name for name, _ in runs], rotation=30, ha="right", fontsize=8)
    latencies.set_ylabel("ms")
    latencies.set_title("Submit -> succeeded latency")
    latencies.legend()

    api.bar([a.site for a in report.api], [a.requests_per_s for a in report.api], color="tab:green")
    for x, a in enumerate(report.api):
        api.annotate(f"{cell(a.requests_per_s)}/s\np99 {cell(a.latency.p99)} ms", (x, a.requests_per_s),
                     ha="center", va="bottom", fontsize=8)
    api.set_ylabel("requests/s")
    api.margins(y=0.25)  # room for the labels above the bars
    api.set_title(f"API submit, {report.config.concurrency} clients")

    labels = [item.site for item in report.listing]
    lists.bar([i - 0.2 for i in range(len(labels))], [i.first_page.p50 for i in report.listing], 0.4,
              label="first page p50")
    lists.bar([i + 0.2 for i in range(len(labels))], [i.deep_page.p50 for i in report.listing], 0.4,
              label="deep page p50")
    lists.set_xticks(range(len(labels)), labels)
    lists.set_ylabel("ms")
    lists.set_title(f"List at {report.config.list_tasks:,} tasks")
    lists.margins(y=0.25)
    lists.legend(loc="upper right")

    fig.suptitle(f"sitekit bench — {machine_line(report)}", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
