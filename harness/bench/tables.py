"""A run's numbers as people read them: tables in plain text (printed) and Markdown (docs/benchmarks.md),
with the ratios derived from them."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from . import rounds
from .cpu import GROUPS
from .measure import ceiling, ratio
from .results import Baseline, BenchReport, EndToEnd, Naive


class CeilingRow(msgspec.Struct, frozen=True):
    site: str
    write_per_task: float
    all_per_task: float
    commits_per_s: float  # pgbench simple-update, the best of its client counts
    ceiling_tasks_per_s: float | None
    ours_tasks_per_s: float  # the site's best end-to-end rate
    fraction: float | None


def best_commit_rate(report: BenchReport) -> float:
    return max((p.tps for p in report.pgbench), default=0.0)


def rates(runs: Sequence[Baseline]) -> dict[int, float]:
    """A reference's tasks/s by worker processes: the median across rounds."""
    return {workers: found.median for workers, found in rounds.rate_spreads(runs).items() if found}


def vs_baseline(report: BenchReport) -> dict[tuple[str, int], float | None]:
    """Each site's end-to-end rate over the bare actor's at the same number of worker processes, taken
    within each round; the median across rounds."""
    return {key: found.median if found else None for key, found in rounds.ratio_spreads(report, rounds.BARE).items()}


def vs_naive(report: BenchReport) -> dict[tuple[str, int], float | None]:
    """Each site's end-to-end rate over the naive site's, at the same number of worker processes and in the
    same round, median across rounds: what the kit's guarantees cost against what one would write without it."""
    return {key: found.median if found else None
            for key, found in rounds.ratio_spreads(report, rounds.NAIVE).items()}


def ceiling_rows(report: BenchReport) -> list[CeilingRow]:
    rate = best_commit_rate(report)
    rows = []
    for counted in report.commits:
        ours = max((e.tasks_per_s for e in report.end_to_end if e.site == counted.site), default=0.0)
        bound = ceiling(rate, counted.write_per_task)
        rows.append(CeilingRow(site=counted.site, write_per_task=counted.write_per_task,
                               all_per_task=counted.all_per_task, commits_per_s=rate, ceiling_tasks_per_s=bound,
                               ours_tasks_per_s=ours, fraction=ratio(ours, bound or 0.0)))
    return rows


class DrivenCommits(msgspec.Struct, frozen=True):
    """How hard the counted end-to-end batch drove the server, against pgbench on the same server."""

    site: str
    write_commits_per_s: float  # write commits counted over the batch's seconds
    pgbench_commits_per_s: float  # the best of pgbench's client counts
    fraction: float | None


def driven_commit_rows(report: BenchReport) -> list[DrivenCommits]:
    rate = best_commit_rate(report)
    counted_with = report.config.workers[0] if report.config.workers else 1  # run.py counts the first batch
    rows = []
    for counted in report.commits:
        batch = next((e for e in report.end_to_end if e.site == counted.site and e.workers == counted_with), None)
        if batch is None or batch.seconds <= 0:
            continue
        driven = round(counted.write_commits / batch.seconds, 1)
        rows.append(DrivenCommits(site=counted.site, write_commits_per_s=driven, pgbench_commits_per_s=rate,
                                  fraction=ratio(driven, rate)))
    return rows


# --- tables -------------------------------------------------------------------------


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], markdown: bool = False) -> str:
    """Columns aligned for a terminal, or a Markdown table; the first column left, numbers right."""
    cells = [[cell(v) for v in row] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join(":---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines) + "\n"
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths,
                                                                                              strict=True)))

    return "\n".join([line(headers), *(line(r) for r in cells)]) + "\n"


def span(found: rounds.Spread | None) -> str:
    """A figure's range across rounds, ``low-high``; ``-`` for none or one round."""
    return f"{cell(found.low)}-{cell(found.high)}" if found and found.count > 1 else "-"


def batches(runs: Sequence[Baseline | EndToEnd]) -> dict[tuple[str, int], list]:
    """The rounds of each batch, by (site, workers); the references' site is ''."""
    grouped: dict[tuple[str, int], list] = {}
    for run in runs:
        grouped.setdefault((getattr(run, "site", ""), run.workers), []).append(run)
    return grouped


def reference_table(report: BenchReport, markdown: bool = False) -> str:
    """Per site and worker count: its rate, both references' rates at that count (medians across rounds),
    and the two ratios, each the median of the ratios taken within a round, with their range."""
    naive, bare = rates(report.naive), rates(report.baseline)
    over_naive = rounds.ratio_spreads(report, rounds.NAIVE)
    over_bare = rounds.ratio_spreads(report, rounds.BARE)
    cpu_over_naive = rounds.cpu_ratio_spreads(report, rounds.NAIVE)
    even_over_naive = rounds.cpu_ratio_spreads(report, rounds.NAIVE, rounds.at_equal_speed)
    rows = []
    for (site, workers), runs in batches(report.end_to_end).items():
        ours = rounds.rate_spreads(runs)[workers]
        by_naive, by_bare = over_naive[(site, workers)], over_bare[(site, workers)]
        cpu, even = cpu_over_naive[(site, workers)], even_over_naive[(site, workers)]
        rows.append([site, workers, len(runs), ours.median if ours else None, naive.get(workers), bare.get(workers),
                     by_naive.median if by_naive else None, span(by_naive), by_bare.median if by_bare else None,
                     span(by_bare), cpu.median if cpu else None, span(cpu), even.median if even else None,
                     span(even)])
    return table(["site", "workers", "rounds", "tasks/s", "naive tasks/s", "bare tasks/s", "ours/naive", "range",
                  "ours/bare", "range", "CPU ours/naive", "range", "at equal speed", "range"], rows, markdown)


def spread_cell(found: rounds.Spread | None) -> str:
    """``median (low-high)``; the median alone for one round; ``-`` for none."""
    if not found:
        return "-"
    return f"{cell(found.median)} ({span(found)})" if found.count > 1 else cell(found.median)


def process_ratio_table(report: BenchReport, markdown: bool = False) -> str:
    """Per site and worker count, each process's CPU per task over the naive site's and the total's: the
    median of the ratios taken within a round, with their range. A process whose part of the distance
    is only the hour's drift reads about 1 here, however far apart the medians of the profile table are."""
    columns = [g for g in GROUPS if any(g in run.cpu_ms_per_task for run in report.naive)]
    by_process = {g: rounds.cpu_ratio_spreads(report, rounds.NAIVE, rounds.process_cpu(g)) for g in columns}
    total = rounds.cpu_ratio_spreads(report, rounds.NAIVE)
    rows = [[site, workers, *(spread_cell(by_process[g].get((site, workers))) for g in columns),
             spread_cell(total.get((site, workers)))]
            for site, workers in batches(report.end_to_end)]
    return table(["site", "workers", *columns, "total"], rows, markdown)


def paced_batches(report: BenchReport) -> dict[tuple[str, int], list[Naive]]:
    """The naive site's paced batches by (the site whose rate they were held to, workers)."""
    grouped: dict[tuple[str, int], list[Naive]] = {}
    for run in report.naive_paced:
        grouped.setdefault((rounds.paced_site(report, run), run.workers), []).append(run)
    return grouped


def paced_table(report: BenchReport, markdown: bool = False) -> str:
    """Each site against the naive site flat out and held to that site's own rate of the round: CPU per task
    (every process) of each, medians across rounds, and the two ratios (median of those taken within a
    round, range). A site the naive site was never held to (a report from before every site was) is left
    out."""
    flat, paced = rounds.cpu_ratio_spreads(report, rounds.NAIVE), rounds.cpu_ratio_spreads(report, rounds.NAIVE_PACED)
    naive_cpu = {workers: rounds.spread(rounds.total_cpu(run) for run in runs)
                 for (_, workers), runs in batches(report.naive).items()}
    paced_runs = paced_batches(report)
    rows = []
    for (site, workers), runs in batches(report.end_to_end).items():
        if (site, workers) not in paced_runs:
            continue
        held = paced_runs[(site, workers)]
        rows.append([site, workers, len(runs), rounds.rate_spreads(runs)[workers].median,
                     rounds.rate_spreads(held)[workers].median,
                     rounds.spread(rounds.total_cpu(run) for run in runs).median,
                     naive_cpu[workers].median if naive_cpu.get(workers) else None,
                     rounds.spread(rounds.total_cpu(run) for run in held).median,
                     spread_cell(flat.get((site, workers))), spread_cell(paced.get((site, workers)))])
    return table(["site", "workers", "rounds", "tasks/s", "naive paced tasks/s", "CPU ms ours", "naive flat out",
                  "naive paced", "ours/naive flat out", "ours/naive paced"], rows, markdown)


def sections(report: BenchReport, markdown: bool = False) -> list[tuple[str, str]]:
    """(title, table) for every phase that has numbers."""
    config = report.config
    out: list[tuple[str, str]] = []
    bare_by_round = rounds.by_round(report.baseline)

    def vs_bare(run: Baseline | EndToEnd) -> float | None:  # within the run's own round
        return ratio(run.tasks_per_s, bare_by_round.get((run.workers, run.round), 0.0))

    rows: list[list[object]] = [
        [e.site, e.price, e.workers, e.round, e.tasks, e.tasks_per_s, e.latency.p50, e.latency.p95, e.latency.p99,
         vs_bare(e), e.unit_ms] for e in report.end_to_end]
    rows += [["bare actor", "-", b.workers, b.round, b.tasks, b.tasks_per_s, b.latency.p50, b.latency.p95,
              b.latency.p99, 1.0, b.unit_ms] for b in report.baseline]
    rows += [["naive site", "-", n.workers, n.round, n.tasks, n.tasks_per_s, n.latency.p50, n.latency.p95,
              n.latency.p99, vs_bare(n), n.unit_ms] for n in report.naive]
    rows += [[f"naive site at {rounds.paced_site(report, n)}'s {n.pace:.0f}/s", "-", n.workers, n.round, n.tasks,
              n.tasks_per_s, n.latency.p50, n.latency.p95, n.latency.p99, vs_bare(n), n.unit_ms]
             for n in report.naive_paced]
    if rows:
        out.append((f"End to end, submit -> succeeded ({config.concurrency} in flight, batches of at least "
                    f"{config.tasks} tasks and {config.batch_seconds:g} s, {config.rounds} interleaved rounds)",
                    table(["site", "price", "workers", "round", "tasks", "tasks/s", "p50 ms", "p95 ms", "p99 ms",
                           "vs bare", "probe unit ms"], rows, markdown)))
    if report.end_to_end and report.naive:
        out.append(("Against the references, medians across rounds (each ratio taken within a round) and their "
                    "ranges: tasks/s of ours / naive site (the price of the guarantees), ours / bare actor, and "
                    "CPU per task (every process) of ours / naive site, as measured and at equal machine speed "
                    "(each batch's CPU over its speed probe's unit, speed.py)",
                    reference_table(report, markdown)))
        out.append(("Ours / naive site by process: CPU per task, the median of the ratios taken within a round "
                    "(range)", process_ratio_table(report, markdown)))
    if report.end_to_end and report.naive_paced:
        out.append(("The naive site held to each site's rate of each round: CPU per task (every process), "
                    "medians across rounds, and ours / naive flat out and paced (median of the ratios taken "
                    "within a round, range)", paced_table(report, markdown)))
    if report.end_to_end or report.baseline or report.naive:
        runs = [(f"{site} {workers}w", rounds.median_cpu(group))
                for (site, workers), group in batches(report.end_to_end).items()]
        runs += [(f"bare actor {workers}w", rounds.median_cpu(group))
                 for (_, workers), group in batches(report.baseline).items()]
        runs += [(f"naive site {workers}w", rounds.median_cpu(group))
                 for (_, workers), group in batches(report.naive).items()]
        runs += [(f"naive at {site}'s pace {workers}w", rounds.median_cpu(group))
                 for (site, workers), group in paced_batches(report).items()]
        columns = [g for g in GROUPS if any(g in used for _, used in runs)]
        if columns:
            out.append(("CPU per task by process, ms, median across rounds (the profile across processes)", table(
                ["run", *columns, "total"],
                [[name, *(used.get(g) for g in columns), round(sum(used.values()), 2)] for name, used in runs],
                markdown)))
    if report.pgbench:
        out.append(("PostgreSQL commit rate (pgbench simple-update)", table(
            ["clients", "seconds", "commits/s"], [[p.clients, p.seconds, p.tps] for p in report.pgbench], markdown)))
    if report.commits:
        out.append(("Commits per task and the ceiling they imply", table(
            ["site", "write commits", "all commits", "ceiling tasks/s", "ours tasks/s", "fraction"],
            [[c.site, c.write_per_task, c.all_per_task, c.ceiling_tasks_per_s, c.ours_tasks_per_s, c.fraction]
             for c in ceiling_rows(report)], markdown)))
    if report.api:
        out.append((f"API submit ({config.concurrency} clients, workers stopped) and the checks after", table(
            ["site", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "rows/201s", "resent ok", "limit burst",
             "correct"],
            [[a.site, a.requests, a.requests_per_s, a.latency.p50, a.latency.p95, a.latency.p99,
              f"{a.rows}/{a.created}", f"{a.resent_same}/{a.resent}",
              f"{a.limit_created}+{a.limit_refused} of {a.limit_burst}", "yes" if not a.problems else "NO"]
             for a in report.api], markdown)))
    if report.normalize:
        n = report.normalize
        out.append((f"Normalisation of {n.size // (1 << 20)} MiB in one call", table(
            ["operation", "MiB/s", "copy is x faster"],
            [["normalise", n.normalize_mib_s, ratio(n.copy_mib_s, n.normalize_mib_s)],
             ["normalise + trim", n.normalize_trim_mib_s, ratio(n.copy_mib_s, n.normalize_trim_mib_s)],
             ["bytes copy", n.copy_mib_s, 1.0]], markdown)))
    if report.listing:
        out.append((f"List latency, one account with {config.list_tasks:,} tasks ({config.list_samples} requests each)",
                    table(["site", "page", "p50 ms", "p95 ms", "p99 ms"],
                          [row for item in report.listing for row in (
                              [item.site, "first", item.first_page.p50, item.first_page.p95, item.first_page.p99],
                              [item.site, f"after {item.deep_offset:,}", item.deep_page.p50, item.deep_page.p95,
                               item.deep_page.p99])], markdown)))
    out += cost_and_scaling_sections(report, markdown)
    if report.floor:
        out.append(floor_section(report, markdown))
    if report.history:
        out.append(history_section(report, markdown))
    return out


FLOOR_SCRIPTS = {
    "naive": "the naive site's two commits",
    "bare": "SPEC 6's rows, three commits, tables with keys only",
    "rows": "the same rows on the site's tables",
    "calls": "the site's three calls",
}


def floor_section(report: BenchReport, markdown: bool = False) -> tuple[str, str]:
    """The PostgreSQL floor (floor.py): each script's server CPU a task across rounds, and over the naive
    rows' within each round; beside it the site's live batches, which add the session reads and polls."""
    f = report.floor
    assert f is not None
    rows = []
    for clients, rate in dict.fromkeys((run.clients, run.rate) for run in f.runs):
        mode = [run for run in f.runs if (run.clients, run.rate) == (clients, rate)]
        naive = {run.round: run.ms_per_task for run in mode if run.script == "naive"}
        how = f"{clients} at {rate:g}/s" if rate else f"{clients}, flat out"
        for name, what in FLOOR_SCRIPTS.items():
            runs = [run for run in mode if run.script == name]
            cost = rounds.spread(r.ms_per_task for r in runs)
            over_naive = rounds.spread(ratio(r.ms_per_task, naive.get(r.round)) for r in runs)
            rows.append([name, how, what, sum(run.tasks for run in runs), spread_cell(cost), spread_cell(over_naive)])
    live = [(f"{site} {workers}w", "the site's live batches", group)
            for (site, workers), group in batches(report.end_to_end).items() if site == f.site]
    live += [(f"naive site {workers}w", "the naive site's live batches", group)
             for (_, workers), group in batches(report.naive).items()]
    for name, what, group in live:
        cost = rounds.spread(run.cpu_ms_per_task.get("postgres") for run in group)
        pace = rounds.spread(run.tasks_per_s for run in group)
        rows.append([name, f"{report.config.concurrency} at {pace.median:.0f}/s" if pace else None, what,
                     sum(r.tasks for r in group), spread_cell(cost), None])
    tables_were = (f"{f.site}'s schema, each run from {f.history:,} tasks of history" if f.history
                   else f"{f.site}'s database")
    title = (f"PostgreSQL floor: the server's CPU a task by pgbench script on {tables_were} ({f.seconds:g} s a "
             f"run), median across rounds (range); flat out and at a live batch's pace")
    return title, table(["script", "clients", "statements", "tasks", "ms / task", "x naive rows"], rows, markdown)


def history_section(report: BenchReport, markdown: bool = False) -> tuple[str, str]:
    """The same site empty and holding the seeded history: what should stay flat, and the audit's slope."""
    h = report.history
    assert h is not None
    rows = [[name, size.tasks, size.attempts, size.files, size.submit.p50, size.submit.p99,
             size.list_first_page.p50, size.list_first_page.p99, size.first_pass_s, size.maintenance_s, size.audit_s,
             "yes" if size.audit_clean else f"NO ({len(size.audit_findings)})"]
            for name, size in (("as it was", h.empty), (f"+{h.seeded:,} tasks", h.full))]
    rows.append(["full / empty", ratio(h.full.tasks, h.empty.tasks), None, None, None, h.submit_p99_ratio, None,
                 h.list_p99_ratio, ratio(h.full.first_pass_s, h.empty.first_pass_s), h.maintenance_ratio,
                 ratio(h.full.audit_s, h.empty.audit_s), None])
    title = (f"Cost as history grows: {h.site} as it was, then with {h.seeded:,} tasks of history "
             f"({h.live_objects:,} of them with a live result and its object; seeded in {h.seed_seconds:g} s); "
             f"the audit takes {cell(h.audit_s_per_100k_tasks)} s per 100,000 tasks")
    return title, table(["site", "tasks", "attempts", "files", "submit p50 ms", "submit p99 ms", "list p50 ms",
                         "list p99 ms", "first pass s", "pass s (median of 3)", "audit s", "audit clean"], rows,
                 markdown)


WAL_ROWS = 25  # each site's most frequent records, the union of them


def wal_section(report: BenchReport, markdown: bool = False) -> tuple[str, str]:
    """The WAL records a task (wal.py), side by side by site: all of them, their bytes, then the most
    frequent by kind and relation."""
    counted = [w for w in report.wal if not w.not_counted]
    uncounted = "; ".join(f"{w.site} not counted: {w.not_counted}" for w in report.wal if w.not_counted)
    keys: list[tuple[str, str]] = []
    for found in counted:
        keys += [key for c in found.counts[:WAL_ROWS] if (key := (c.kind, c.relation)) not in keys]
    per_site = [{(c.kind, c.relation): c.per_task for c in found.counts} for found in counted]
    rows = [["all records", "", *(w.records_per_task for w in counted)],
            ["bytes (of them full-page images)", "",
             *(f"{w.bytes_per_task:.0f} ({w.full_page_bytes_per_task:.0f})" for w in counted)],
            *([kind, relation, *(found.get((kind, relation), 0.0) for found in per_site)] for kind, relation in keys)]
    batches = ", ".join(f"{w.tasks} {w.site}" for w in counted)
    title = (f"WAL records a task, by kind and relation (a batch of {batches} tasks"
             f"{'; ' + uncounted if uncounted else ''})" if counted else f"WAL records a task: {uncounted}")
    return title, table(["record", "relation", *(w.site for w in counted)], rows, markdown)


def cost_and_scaling_sections(report: BenchReport, markdown: bool = False) -> list[tuple[str, str]]:
    """Round trips per task (statement log), WAL records a task, commits driven against pgbench, and the
    scaling rows."""
    out: list[tuple[str, str]] = []
    if report.round_trips:
        roles = sorted({role for r in report.round_trips for role in r.by_role})
        rows = [[r.site, r.tasks, f"not counted: {r.not_counted}", None, *([None] * len(roles))] if r.not_counted else
                [r.site, r.tasks, round(r.statements / r.tasks, 2), round(r.transactions / r.tasks, 2),
                 *(round(r.by_role.get(role, 0) / r.tasks, 2) for role in roles)] for r in report.round_trips]
        out.append(("Database round trips per task (statements in the server's log, driver's left out)", table(
            ["site", "tasks", "round trips / task", "transactions / task", *(f"{role} / task" for role in roles)],
            rows, markdown)))
    if report.wal:
        out.append(wal_section(report, markdown))
    if driven := driven_commit_rows(report):
        out.append(("Write commits driven by the counted end-to-end batch against pgbench", table(
            ["site", "write commits/s", "pgbench commits/s", "fraction"],
            [[d.site, d.write_commits_per_s, d.pgbench_commits_per_s, d.fraction] for d in driven], markdown)))
    if report.scaling:
        first = report.scaling[0].run.tasks_per_s
        out.append((f"Scaling: {report.scaling[0].run.site} end to end by process count "
                    f"({report.config.concurrency} in flight, {report.scaling[0].run.tasks} tasks a batch)", table(
                        ["web", "workers", "tasks/s", "x first row", "p50 ms", "p95 ms", "CPU ms / task"],
                        [[s.web, s.run.workers, s.run.tasks_per_s, ratio(s.run.tasks_per_s, first),
                          s.run.latency.p50, s.run.latency.p95, round(sum(s.run.cpu_ms_per_task.values()), 1)]
                         for s in report.scaling], markdown)))
    return out


def machine_line(report: BenchReport) -> str:
    m = report.machine
    if m is None:
        return "machine: not described"
    pg = m.postgres_settings
    return (f"{m.cpu}, {m.cores} cores, {m.memory_gib} GiB, Linux {m.kernel}, Python {m.python}; "
            f"PostgreSQL {m.postgres} on {m.filesystem} (fsync {pg.get('fsync')}, synchronous_commit "
            f"{pg.get('synchronous_commit')}); {m.services} services; load before "
            f"{' / '.join(f'{x:.2f}' for x in m.load_before)}")


def other_load_line(report: BenchReport) -> str:
    """How much the rest of the machine was doing while the phases ran."""
    if not report.other_load:
        return "other load: not measured"
    worst = max(report.other_load, key=report.other_load.__getitem__)
    mean = sum(report.other_load.values()) / len(report.other_load)
    return (f"other processes used {mean:.0%} of the CPU during the phases on average, "
            f"at most {report.other_load[worst]:.0%} ({worst})")


def text(report: BenchReport) -> str:
    c = report.config
    head = (f"sitekit bench: {c.sites} site(s), {c.rounds} round(s) of batches of at least {c.tasks} tasks and "
            f"{c.batch_seconds:g} s, {c.concurrency} clients, "
            f"in {report.wall_seconds:.0f} s\n{machine_line(report)}\n{other_load_line(report)}\n")
    problems = [f"  {a.site}: {p}" for a in report.api for p in a.problems]
    body = "".join(f"\n{title}\n{rendered}" for title, rendered in sections(report))
    return head + body + ("\nAPI checks failed:\n" + "\n".join(problems) + "\n" if problems else "")


def markdown(report: BenchReport) -> str:
    return f"Machine: {machine_line(report)}.\n\nLoad: {other_load_line(report)}.\n" + "".join(
        f"\n**{title}**\n\n{rendered}" for title, rendered in sections(report, markdown=True))
