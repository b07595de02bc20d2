"""``harness bench`` pieces that need no running site: statistics, ceiling math, formatting, options."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from harness import KIT_ROOT, cli
from harness.bench import (
    bare_worker,
    ceiling,
    compare,
    floor,
    measure,
    naive_site,
    reference,
    results,
    rounds,
    run,
    tables,
)
from harness.bench.accounts import input_text, normalized, submit_body
from harness.bench.api import accounts_needed
from harness.bench.listing import cursor_for
from harness.bench.measure import BenchError, Latency
from harness.bench.normalize_speed import sample
from harness.bench.results import (
    SUBMITS_PER_ACCOUNT,
    ApiSubmit,
    Baseline,
    BenchConfig,
    BenchReport,
    Commits,
    EndToEnd,
    Floor,
    FloorRun,
    Listing,
    Machine,
    Naive,
    Normalize,
    Pgbench,
)

# --- statistics --------------------------------------------------------------------


def test_percentiles_interpolate_between_closest_ranks() -> None:
    samples = [4.0, 1.0, 3.0, 2.0]  # order does not matter
    assert measure.percentile(samples, 0) == 1.0
    assert measure.percentile(samples, 50) == 2.5
    assert measure.percentile(samples, 100) == 4.0
    assert measure.percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert measure.percentile([7.0], 95) == 7.0


def test_percentile_refuses_no_samples_and_bad_quantiles() -> None:
    with pytest.raises(BenchError):
        measure.percentile([], 50)
    with pytest.raises(ValueError):
        measure.percentile([1.0], 101)


def test_latency_summary_is_in_milliseconds() -> None:
    summary = measure.latency([0.010, 0.020, 0.030, 0.040, 0.100])
    assert summary.count == 5
    assert summary.p50 == 30.0
    assert summary.max == 100.0
    assert summary.mean == 40.0
    assert summary.p50 <= summary.p95 <= summary.p99 <= summary.max


def test_rates_and_ratios() -> None:
    assert measure.rate(200, 8.0) == 25.0
    with pytest.raises(BenchError):
        measure.rate(10, 0.0)
    assert measure.ratio(20.0, 40.0) == 0.5
    assert measure.ratio(20.0, 0.0) is None
    assert measure.mib_per_second(1 << 20, 0.5) == 2.0


def test_commits_per_task_subtract_the_drivers_own_and_the_idle_noise() -> None:
    # 2 000 counted, 150 of them the driver's polls, 50 an idle site's: 1 800 over 200 tasks
    assert measure.per_task(2000, 150 + 50, 200) == 9.0
    assert measure.per_task(10, 50, 5) == 0.0  # never negative
    with pytest.raises(BenchError):
        measure.per_task(10, 0, 0)


def test_the_ceiling_is_the_commit_rate_over_the_commits_a_task_spends() -> None:
    assert measure.ceiling(1400.0, 7.0) == 200.0
    assert measure.ceiling(1400.0, 0.0) is None


# --- derived numbers and formatting ------------------------------------------------


def _latency(p50: float) -> Latency:
    return Latency(count=10, p50=p50, p95=p50 * 1.5, p99=p50 * 2, mean=p50, max=p50 * 2)


def _report() -> BenchReport:
    config = BenchConfig(sites=1, tasks=100, concurrency=4)
    return BenchReport(
        config=config,
        machine=Machine(cpu="Test CPU", cores=2, memory_gib=8.0, kernel="6.1", python="3.11.7",
                        filesystem="ext4 on /dev/x", postgres="18.6",
                        postgres_settings={"fsync": "on", "synchronous_commit": "on"},
                        load_before=(0.1, 0.2, 0.3), services="embedded"),
        wall_seconds=300.0,
        end_to_end=[EndToEnd(site="alpha", price=0, workers=1, tasks=100, seconds=5.0, tasks_per_s=20.0,
                             latency=_latency(180.0), cpu_ms_per_task={"web": 8.0, "worker": 15.5, "postgres": 9.0},
                             unit_ms=1.3),
                    EndToEnd(site="alpha", price=0, workers=2, tasks=100, seconds=4.0, tasks_per_s=25.0,
                             latency=_latency(150.0))],
        commits=[Commits(site="alpha", tasks=100, write_commits=700, all_commits=1100, poll_queries=80,
                         idle_noise=20.0, write_per_task=7.0, all_per_task=10.0)],
        api=[ApiSubmit(site="alpha", clients=4, accounts=4, requests=100, seconds=2.0, requests_per_s=50.0,
                       latency=_latency(70.0), created=100, rows=100, resent=10, resent_same=10, max_active=50,
                       limit_burst=100, limit_created=50, limit_refused=50, limit_active_rows=50, problems=[])],
        baseline=[Baseline(workers=1, tasks=100, seconds=2.5, tasks_per_s=40.0, latency=_latency(90.0),
                           cpu_ms_per_task={"bare worker": 10.0, "postgres": 1.0}),
                  Baseline(workers=2, tasks=100, seconds=2.0, tasks_per_s=50.0, latency=_latency(80.0))],
        naive=[Naive(workers=1, tasks=100, seconds=3.0, tasks_per_s=32.0, latency=_latency(110.0),
                     cpu_ms_per_task={"web": 3.0, "worker": 11.0, "postgres": 2.0}, unit_ms=1.0),
               Naive(workers=2, tasks=100, seconds=2.5, tasks_per_s=40.0, latency=_latency(100.0))],
        pgbench=[Pgbench(clients=1, seconds=8, tps=1000.0), Pgbench(clients=4, seconds=8, tps=1400.0)],
        normalize=Normalize(size=1 << 20, normalize_mib_s=200.0, normalize_trim_mib_s=90.0, copy_mib_s=20000.0),
        listing=[Listing(site="alpha", tasks=100_000, first_page=_latency(8.0), deep_page=_latency(9.0),
                         deep_offset=90_000)],
    )


def test_sites_are_compared_with_the_bare_actor_at_the_same_worker_count() -> None:
    assert tables.vs_baseline(_report()) == {("alpha", 1): 0.5, ("alpha", 2): 0.5}


def test_sites_are_compared_with_the_naive_site_at_the_same_worker_count() -> None:
    assert tables.vs_naive(_report()) == {("alpha", 1): 0.625, ("alpha", 2): 0.625}
    assert tables.vs_naive(BenchReport(config=BenchConfig(), end_to_end=_report().end_to_end)) == {
        ("alpha", 1): None, ("alpha", 2): None}


def test_the_reference_table_shows_both_ratios_per_worker_count() -> None:
    ((_, rendered),) = [s for s in tables.sections(_report()) if s[0].startswith("Against the references")]
    header, one, two = rendered.splitlines()
    assert "ours/naive" in header and "ours/bare" in header and "range" in header
    # one round: no range to show
    # CPU per task: alpha 1w 32.5 ms against the naive site's 16; at equal speed 32.5 / 1.3 against 16 / 1.0
    assert one.split() == ["alpha", "1", "1", "20.0", "32.0", "40.0", "0.62", "-", "0.50", "-", "2.03", "-", "1.56",
                           "-"]
    assert two.split() == ["alpha", "2", "1", "25.0", "40.0", "50.0", "0.62", "-", "0.50", "-", "-", "-", "-", "-"]
    no_naive = _report()
    no_naive.naive = []
    assert not [s for s in tables.sections(no_naive) if s[0].startswith("Against the references")]


def test_the_naive_site_has_its_rows_in_the_end_to_end_and_cpu_tables() -> None:
    sections = dict(tables.sections(_report()))
    end_to_end = next(v for k, v in sections.items() if k.startswith("End to end"))
    naive_1w = next(line for line in end_to_end.splitlines() if line.startswith("naive site") and " 1 " in line)
    assert naive_1w.split()[-2:] == ["0.80", "1.00"]  # naive over bare, 32 / 40; the probe's unit
    profile = next(v for k, v in sections.items() if k.startswith("CPU per task"))
    naive_cpu = next(line for line in profile.splitlines() if line.startswith("naive site 1w"))
    assert naive_cpu.split()[-1] == "16.0"  # web 3 + worker 11 + postgres 2


def test_the_ceiling_uses_the_best_commit_rate_and_the_sites_best_rate() -> None:
    (row,) = tables.ceiling_rows(_report())
    assert row.commits_per_s == 1400.0
    assert row.ceiling_tasks_per_s == 200.0
    assert row.ours_tasks_per_s == 25.0
    assert row.fraction == 0.125


def test_the_floor_gives_each_scripts_cost_and_its_ratio_to_the_naive_rows_within_a_round_and_pace() -> None:
    report = _report()
    costs = {"naive": (0.3, 0.6), "bare": (0.6, 0.9), "rows": (1.2, 1.5), "calls": (1.8, 2.4)}
    report.floor = Floor(site="alpha", seconds=10, history=10_000, runs=[
        FloorRun(script=name, round=number, tasks=1000, ms_per_task=both[number - 1] * (2 if rate else 1),
                 clients=clients, rate=rate)
        for number in (1, 2) for clients, rate in ((1, 0.0), (8, 120.0)) for name, both in costs.items()])
    ((title, rendered),) = [s for s in tables.sections(report) if s[0].startswith("PostgreSQL floor")]
    assert "alpha's schema, each run from 10,000 tasks of history" in title
    flat = {line.split()[0]: line for line in rendered.splitlines()[1:5]}
    paced = {line.split()[0]: line for line in rendered.splitlines()[5:9]}
    # calls: 1.8 and 2.4 ms; over the naive rows of the same round 6.0 and 4.0 (not 2.1 / 0.45 across rounds)
    assert flat["calls"].split()[1:3] == ["1,", "flat"]
    assert flat["calls"].split()[-4:] == ["2.10", "(1.80-2.40)", "5.00", "(4.00-6.00)"]
    assert flat["naive"].split()[-4:] == ["0.45", "(0.30-0.60)", "1.00", "(1.00-1.00)"]
    # at the pace, each against the naive rows at the same pace
    assert paced["calls"].split()[1:4] == ["8", "at", "120/s"]
    assert paced["calls"].split()[-4:] == ["4.20", "(3.60-4.80)", "5.00", "(4.00-6.00)"]
    # the live batches beside them, the site's and the naive site's: the postgres group at each worker count,
    # and the pace each went at
    live = [line.split() for line in rendered.splitlines() if line.startswith(("alpha", "naive site"))]
    assert [(row[0], row[-2:]) for row in live] == [("alpha", ["9.00", "-"]), ("alpha", ["-", "-"]),
                                                     ("naive", ["2.00", "-"]), ("naive", ["-", "-"])]
    assert live[0][2:5] == [str(report.config.concurrency), "at", "20/s"]
    assert not [s for s in tables.sections(_report()) if s[0].startswith("PostgreSQL floor")]


def test_the_floor_goes_at_the_pace_of_the_sites_first_worker_count() -> None:
    report = _report()
    config = msgspec.structs.replace(report.config, workers=(1, 2), concurrency=8)
    assert run.live_pace(report, "alpha", config) == floor.Pace(clients=8, rate=20)
    assert run.live_pace(report, "nobody", config) is None


def test_plain_table_aligns_columns() -> None:
    rendered = tables.table(["site", "tasks/s"], [["alpha", 20.0], ["bare actor", 1234.5]])
    lines = rendered.splitlines()
    assert lines[0].startswith("site") and lines[0].endswith("tasks/s")
    assert {len(line) for line in lines} == {len(lines[0])}
    assert lines[2].endswith("1,234.5") and lines[1].endswith("20.0")


def test_markdown_table_has_a_header_rule_and_one_row_per_line() -> None:
    rendered = tables.table(["site", "p99 ms", "fraction"], [["alpha", 3.14159, None]], markdown=True)
    assert rendered.splitlines() == ["| site | p99 ms | fraction |", "|:---|---:|---:|", "| alpha | 3.14 | - |"]


def test_the_printed_report_holds_every_phase_and_the_machine() -> None:
    printed = tables.text(_report())
    for expected in ("Test CPU", "fsync on", "End to end", "bare actor", "pgbench", "ceiling tasks/s", "API submit",
                     "50+50 of 100", "Normalisation", "after 90,000", "CPU per task by process", "bare worker"):
        assert expected in printed, expected
    assert "API checks failed" not in printed
    assert "| alpha |" in tables.markdown(_report())


def test_failed_api_checks_are_printed() -> None:
    bad = _report()
    bad.api[0].problems.append("101 task rows for 100 created submits")
    assert "API checks failed" in tables.text(bad) and "101 task rows" in tables.text(bad)


def test_json_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "out" / "bench.json"
    results.write_json(_report(), path)
    assert json.loads(path.read_text())["pgbench"][1]["tps"] == 1400.0
    assert results.read_json(path) == _report()


def test_plot_is_a_png(tmp_path: Path) -> None:
    path = tmp_path / "bench.png"
    from harness.bench.plot import plot

    plot(_report(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _after() -> BenchReport:
    """``_report()`` as a later run: fewer commits, less CPU, faster; the references measured again."""
    before = _report()
    first = before.end_to_end[0]
    return msgspec.structs.replace(
        before,
        end_to_end=[msgspec.structs.replace(first, tasks_per_s=30.0,
                                            cpu_ms_per_task={"web": 6.0, "worker": 10.0, "postgres": 4.0}),
                    *before.end_to_end[1:]],
        commits=[msgspec.structs.replace(before.commits[0], write_per_task=3.0)],
        round_trips=[results.RoundTrips(site="alpha", tasks=20, statements=200, transactions=80)],
        wal=[results.WalAnatomy(site="alpha", tasks=200, records_per_task=57.9)],
        naive=[msgspec.structs.replace(before.naive[0], tasks_per_s=40.0), *before.naive[1:]],
    )


def test_a_comparison_pairs_each_figure_before_and_after() -> None:
    rows = compare.rows([(_report(), _after())], "alpha")
    found = {row.label: (row.before, row.after) for row in rows[0]}
    assert found["write commits / task"] == (7.0, 3.0)
    assert found["round trips / task"] == (None, 10.0)  # the earlier run did not count them
    assert found["WAL records / task"] == (None, 57.9)
    assert found["CPU ms / task, all processes"] == (32.5, 20.0)
    assert found["ours / naive"] == (0.62, 0.75)  # each run against its own naive site
    assert found["ours / bare"] == (0.5, 0.75)
    assert "7.00 -> 3.00" in compare.text([(_report(), _after())], ["alpha"])


def test_a_comparison_plot_is_a_png(tmp_path: Path) -> None:
    path = tmp_path / "compare.png"
    compare.plot([(_report(), _after()), (_report(), _after())], ["alpha"], path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_compare_takes_pairs_of_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    results.write_json(_report(), before)
    results.write_json(_after(), after)
    assert cli.main(["bench-compare", str(before)]) == 2
    assert "in pairs" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{")
    assert cli.main(["bench-compare", str(before), str(tmp_path / "broken.json")]) == 2
    assert "not a bench report" in capsys.readouterr().err
    assert cli.main(["bench-compare", str(before), str(after), "--plot", str(tmp_path / "c.png")]) == 0
    assert "20.0 -> 30.0" in capsys.readouterr().out and (tmp_path / "c.png").exists()


# --- the measured work -------------------------------------------------------------


def test_the_bare_actor_normalises_by_the_sites_rules() -> None:
    for index in range(3):
        data = input_text(index)
        assert b"\r" in data and b"  \n" not in normalized(data)
        assert bare_worker.normalize(data, trim=True) == normalized(data)
    assert bare_worker.normalize(b"a \r\nb\rc\t", trim=False) == b"a \nb\nc\t"
    with pytest.raises(UnicodeDecodeError):
        bare_worker.normalize(b"\xff", trim=True)


def test_the_naive_site_takes_the_sites_submit_body() -> None:
    import uuid

    file_id = uuid.uuid4()
    body = submit_body(str(file_id), "key-1")
    submitted = msgspec.json.decode(json.dumps(body), type=naive_site.Submit)
    assert submitted.file_id == file_id and submitted.request_key == "key-1"
    assert submitted.processor == "text-normalize" and submitted.params.trim_trailing_whitespace
    assert naive_site.input_key(file_id) == f"inputs/{file_id}"


def test_the_naive_site_is_one_endpoint() -> None:
    config = bare_worker.Config(broker_url="redis://127.0.0.1:1", namespace="n", queue="q",
                                database_url="postgresql://d", s3_endpoint_url="http://s", s3_access_key_id="k",
                                s3_secret_access_key="s", s3_region="r", bucket="b")
    app = naive_site.create_app(config)
    routes = [(route.path, sorted(route.methods)) for route in app.routes if not route.path.startswith("/schema")]
    assert routes == [("/api/tasks", ["OPTIONS", "POST"])]  # and Litestar's default OpenAPI pages


def test_reference_scratch_names_carry_the_run_id_and_differ_by_kind() -> None:
    bare, naive = reference.scratch_names("r1", "bare"), reference.scratch_names("r1", "naive")
    assert bare == ("bench_r1_bare", "bench-r1-bare", "bench_r1_bare")
    assert not set(bare) & set(naive) and all("r1" in name for name in naive)


def test_normalisation_input_is_exact_size_valid_utf8() -> None:
    data = sample(1 << 20)
    assert len(data) == 1 << 20
    text = data.decode("utf-8")
    assert "\r\n" in text and "\r" in text.replace("\r\n", "") and not text.isascii()


def test_bare_worker_config_travels_in_the_environment() -> None:
    config = bare_worker.Config(broker_url="redis://x", namespace="n", queue="q", database_url="postgresql://d",
                                s3_endpoint_url="http://s", s3_access_key_id="k", s3_secret_access_key="s",
                                s3_region="r", bucket="b")
    environ = config.environ()
    assert environ["BARE_S3_SECRET_ACCESS_KEY"] == "s"
    import os

    saved = dict(os.environ)
    try:
        os.environ.update(environ)
        assert bare_worker.Config.from_environ() == config
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_api_phase_spreads_submits_below_the_active_limit() -> None:
    assert accounts_needed(200, 8) == 8
    assert accounts_needed(1000, 8) == -(-1000 // SUBMITS_PER_ACCOUNT)
    assert accounts_needed(5, 8) == 8


def test_list_cursor_is_the_sites_keyset_shape() -> None:
    import importlib.util
    from datetime import UTC, datetime
    from uuid import UUID

    # The site's own paging module (it imports nothing of the site), so the two cannot drift.
    paging_py = KIT_ROOT / "template" / "{{slug}}" / "web" / "paging.py"
    spec = importlib.util.spec_from_file_location("site_paging", paging_py)
    paging = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(paging)
    stamp, row = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), UUID(int=7)
    cursor = cursor_for(stamp, row)
    assert cursor == paging.encode_cursor(stamp, row)
    assert paging.decode_cursor(cursor) == (stamp, row)


def test_pgbench_output_is_parsed() -> None:
    output = ("transaction type: <builtin: simple update>\nnumber of clients: 8\n"
              "latency average = 5.9 ms\ntps = 1352.448211 (without initial connection time)\n")
    assert ceiling.parse_tps(output) == pytest.approx(1352.448211)
    with pytest.raises(BenchError):
        ceiling.parse_tps("pgbench: error: connection refused")
    assert ceiling.pgbench_path().name == "pgbench"


def test_pgbench_connects_like_the_url_says() -> None:
    args, env = ceiling._connection_args("postgresql://bench:s%40cret@db.local:6543/scratch")
    assert args == ["-h", "db.local", "-p", "6543", "-U", "bench", "scratch"]
    assert env == {"PGPASSWORD": "s@cret"}
    args, env = ceiling._connection_args("postgresql://postgres@127.0.0.1:5555/x")
    assert args[-1] == "x" and env == {}


# --- the command line --------------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["--sites", "0"], "--sites must be"),
    (["--sites", "11"], "--sites must be between 1 and 10"),
    (["--tasks", "0"], "--tasks must be at least 1"),
    (["--concurrency", "0"], "--concurrency must be"),
    (["--concurrency", "65"], "--concurrency must be"),
])
def test_bench_refuses_impossible_options_before_starting_anything(argv: list[str], message: str,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "cmd_bench", lambda args: pytest.fail("bench started"))
    assert cli.main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


def test_bench_defaults() -> None:
    args = cli.build_parser().parse_args(["bench"])
    assert (args.sites, args.tasks, args.concurrency, args.json) == (2, 200, 8, None)
    assert cli.bench_problem(args) is None
    config = cli.bench_config(args)
    assert (config.rounds, config.batch_seconds, config.history_tasks, config.floor_seconds) == (3, 15.0, 1_000_000, 10)
    assert config == BenchConfig(tasks=200, concurrency=8)


def test_quick_keeps_the_method_and_shrinks_every_phase() -> None:
    config = cli.bench_config(cli.build_parser().parse_args(["bench", "--quick", "--sites", "1"]))
    assert config.rounds == 3 and config.sites == 1  # still interleaved rounds, so the method is what runs
    assert config.batch_seconds == 0 and config.tasks <= 40 and config.scaling_tasks == 0
    assert 0 < config.history_tasks <= 20_000 and config.list_tasks < results.LIST_TASKS
    assert 0 < config.floor_seconds <= 2
    assert cli.bench_config(cli.build_parser().parse_args(["bench", "--rounds", "5", "--batch-seconds", "30"])
                            ).batch_seconds == 30
    # the history row alone at full size, every other phase small
    alone = cli.bench_config(cli.build_parser().parse_args(["bench", "--quick", "--history-tasks", "1000000"]))
    assert alone.history_tasks == 1_000_000 and alone.batch_seconds == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--batch-seconds", "-1"], "--batch-seconds must be 0 or more"),
    (["--history-tasks", "-1"], "--history-tasks must be 0"),
    (["--floor-seconds", "-1"], "--floor-seconds and --history-tasks must be 0"),
])
def test_bench_refuses_impossible_round_options(argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "cmd_bench", lambda args: pytest.fail("bench started"))
    assert cli.main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


def test_other_load_is_reported_by_its_worst_phase() -> None:
    quiet = _report()
    assert tables.other_load_line(quiet) == "other load: not measured"
    quiet.other_load = {"alpha end to end, 1 worker(s)": 0.02, "pgbench": 0.3}
    line = tables.other_load_line(quiet)
    assert "16%" in line and "at most 30% (pgbench)" in line
    assert "other processes used" in tables.text(quiet)


def test_processes_the_run_started_are_not_other_load() -> None:
    import os
    import signal
    import subprocess
    import time

    import psutil

    from harness.bench.machine import OtherLoad, ours

    # a child and a grandchild: with a command after it, the shell forks sleep instead of becoming it
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 30; true"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not (sleeps := [p.pid for p in psutil.Process(shell.pid).children()]) and time.monotonic() < deadline:
            time.sleep(0.05)
        run = ours(os.getpid())
        assert {os.getpid(), shell.pid, *sleeps} <= run and len(sleeps) == 1
        assert 1 not in run
    finally:
        os.killpg(shell.pid, signal.SIGKILL)  # the shell and its sleep
        shell.wait()
    assert shell.pid not in ours(os.getpid())
    meter = OtherLoad()
    with meter.phase("nothing"):
        pass
    assert 0.0 <= meter.phases["nothing"] <= 1.0


def test_cpu_per_task_is_milliseconds_in_the_reports_order() -> None:
    from harness.bench import cpu

    before = {"driver": 1.0, "postgres": 2.0, "web": 0.5}
    after = {"driver": 1.5, "postgres": 4.0, "web": 1.5}
    assert list(cpu.per_task(before, after, 100).items()) == [("web", 10.0), ("postgres", 20.0), ("driver", 5.0)]


def test_cpu_reading_finds_this_process() -> None:
    import os

    from harness.bench import cpu

    used = cpu.reading({"driver": {os.getpid()}, "nobody": set()})
    assert used["driver"] > 0 and used["nobody"] == 0

def test_the_cpu_a_piece_of_work_used_is_read_around_it() -> None:
    import asyncio
    import os
    import time

    from harness.bench import cpu

    async def burn() -> None:
        began = time.process_time()
        while time.process_time() - began < 0.3:
            pass

    used = asyncio.run(cpu.used_by({"driver": {os.getpid()}, "nobody": set()}, burn()))
    # the kernel's counters psutil reads tick in hundredths: each reading may be a tick short
    assert used["driver"] >= 0.25 and used["nobody"] == 0


# A stand-in for a postmaster: on "go" it starts a child that burns CPU, waits for it (as the
# postmaster reaps an autovacuum worker or a closed backend) and says so.
_REAPING_PARENT = """
import subprocess, sys
sys.stdin.readline()
subprocess.run([sys.executable, "-c", "import time\\nwhile time.process_time() < 0.4: pass"], check=True)
print("reaped", flush=True)
sys.stdin.readline()
"""


def test_the_cpu_of_a_postgres_child_that_ended_within_the_batch_is_counted() -> None:
    """An autovacuum worker that starts and ends between two readings is seen by neither as a live
    process: only its parent's count of reaped children holds what it used."""
    import subprocess
    import sys

    from harness.bench import cpu

    parent = subprocess.Popen([sys.executable, "-c", _REAPING_PARENT], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        groups = {"postgres": {parent.pid}}
        before = cpu.reading(groups)
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "reaped"
        used = cpu.reading(groups)["postgres"] - before["postgres"]
    finally:
        parent.stdin.close()
        parent.wait(timeout=30)
    assert used >= 0.35


def test_the_cpu_table_totals_each_run() -> None:
    ((_, rendered),) = [s for s in tables.sections(_report()) if s[0].startswith("CPU per task")]
    alpha = next(line for line in rendered.splitlines() if line.startswith("alpha 1w"))
    assert alpha.split()[-1] == "32.5"


def test_a_failed_measurement_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    from harness.bench import run

    def fail(config: BenchConfig, state_dir: Path) -> BenchReport:
        raise BenchError("job 42 did not finish within 120 s")

    monkeypatch.setattr(run, "run", fail)
    assert cli.main(["bench", "--state", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("bench: job 42 did not finish within 120 s (logs: ")


# --- round trips from the statement log, driven commits, scaling -------------------

# Lines PostgreSQL 18.6 wrote with statements.LINE_PREFIX (embedded server, asyncpg clients; the
# last ones from a bench site): a statement's further lines start with a tab, its parameters follow
# on a DETAIL line. A backslash below only continues the log's line here, to keep the source narrow.
STATEMENT_LOG = """\
2026-12-05 07:07:21.470 UTC [19584] db=postgres vx=1/6 app=sitekit-bench: LOG:  statement: SELECT pg_reload_conf()
2026-12-05 07:07:21.470 UTC [19567] db= vx= app=: LOG:  received SIGHUP, reloading configuration files
2026-12-05 07:07:21.986 UTC [19588] db=t1 vx=2/3 app=[unknown]: LOG:  statement: BEGIN;
2026-12-05 07:07:21.986 UTC [19588] db=t1 vx=2/3 app=[unknown]: LOG:  execute __asyncpg_stmt_1__: \
INSERT INTO x VALUES ($1, $2)
2026-12-05 07:07:21.986 UTC [19588] db=t1 vx=2/3 app=[unknown]: DETAIL:  Parameters: $1 = '1', $2 = 'multi
\tline'
2026-12-05 07:07:21.987 UTC [19588] db=t1 vx=2/3 app=[unknown]: LOG:  execute __asyncpg_stmt_2__: SELECT *
\tFROM x
\tWHERE a = $1
2026-12-05 07:07:21.987 UTC [19588] db=t1 vx=2/3 app=[unknown]: DETAIL:  Parameters: $1 = '1'
2026-12-05 07:07:21.987 UTC [19588] db=t1 vx=2/3 app=[unknown]: LOG:  statement: COMMIT;
2026-12-05 07:07:21.987 UTC [19588] db=t1 vx=2/4 app=[unknown]: LOG:  execute __asyncpg_stmt_3__: \
UPDATE x SET b = 'y' WHERE a = $1 RETURNING a
2026-12-05 07:07:21.987 UTC [19588] db=t1 vx=2/4 app=[unknown]: DETAIL:  Parameters: $1 = '1'
2026-12-05 07:07:21.988 UTC [19590] db=t1 vx=3/9 app=[unknown]: LOG:  execute __asyncpg_stmt_3__: \
UPDATE x SET b = 'y' WHERE a = $1 RETURNING a
2026-12-05 07:07:21.988 UTC [19588] db=t1 vx=2/6 app=[unknown]: ERROR:  division by zero
2026-12-05 07:07:21.988 UTC [19588] db=t1 vx=2/6 app=[unknown]: STATEMENT:  SELECT 1/0
2026-12-05 07:07:21.989 UTC [19591] db=t1 vx=4/2 app=sitekit-bench: LOG:  execute __asyncpg_stmt_1__: SELECT id, status
2026-12-05 07:07:21.989 UTC [19592] db=t2 vx=5/2 app=[unknown]: LOG:  statement: SELECT 1
2026-12-05 07:12:10.447 UTC [12551] db=alpha_24f194 vx=15/72 app=[unknown]: LOG:  statement: BEGIN;
2026-12-05 07:12:10.447 UTC [12551] db=alpha_24f194 vx=15/72 app=[unknown]: LOG:  execute __asyncpg_stmt_19__: \
-- Serialises an account's writers: quota (uploads, submits, results), credits, password, deletion.
\tSELECT id FROM account WHERE id = $1 FOR UPDATE
2026-12-05 07:12:10.447 UTC [12551] db=alpha_24f194 vx=15/72 app=[unknown]: DETAIL:  Parameters: $1 = \
'0c7a367e-a190-450e-bc8f-a3d4266dc7bb'
2026-12-05 07:12:10.457 UTC [12551] db=alpha_24f194 vx=15/72 app=[unknown]: LOG:  statement: COMMIT;
"""


def test_the_statement_log_yields_executed_statements_only() -> None:
    from harness.bench import statements

    logged = statements.logged_statements(STATEMENT_LOG)
    assert [s.sql for s in logged] == [
        "SELECT pg_reload_conf()", "BEGIN;", "INSERT INTO x VALUES ($1, $2)", "SELECT *", "COMMIT;",
        "UPDATE x SET b = 'y' WHERE a = $1 RETURNING a", "UPDATE x SET b = 'y' WHERE a = $1 RETURNING a",
        "SELECT id, status", "SELECT 1", "BEGIN;",
        "-- Serialises an account's writers: quota (uploads, submits, results), credits, password, deletion.",
        "COMMIT;"]
    assert (logged[1].pid, logged[1].database, logged[1].transaction, logged[1].application) == (
        19588, "t1", "2/3", "[unknown]")


def test_round_trips_count_the_sites_database_without_the_driver_by_role() -> None:
    from harness.bench import statements

    counted = statements.count(statements.logged_statements(STATEMENT_LOG), site="alpha", database="t1", tasks=2,
                               roles={19588: "web"})
    assert (counted.statements, counted.transactions) == (6, 3)  # BEGIN..COMMIT is one, each UPDATE one
    assert counted.by_role == {"other": 1, "web": 5}
    assert not counted.not_counted
    site = statements.count(statements.logged_statements(STATEMENT_LOG), site="alpha", database="alpha_24f194",
                            tasks=1, roles={12551: "worker"})
    assert (site.statements, site.transactions, site.by_role) == (3, 1, {"worker": 3})


def test_the_log_prefix_is_what_the_parser_reads() -> None:
    from harness.bench import statements

    line = (statements.LINE_PREFIX.replace("%m", "2026-12-05 07:07:21.987 UTC").replace("%p", "7")
            .replace("%d", "db").replace("%v", "3/1").replace("%a", "app") + "LOG:  statement: COMMIT;")
    assert statements.logged_statements(line)[0].sql == "COMMIT;"


def test_a_stretch_of_the_log_is_read_by_offsets(tmp_path: Path) -> None:
    from harness.bench import statements

    path = tmp_path / "postgres.log"
    path.write_bytes("before\nnaïve\nafter\n".encode())
    assert statements.read_log(path, 7, 14) == "naïve\n"


def _scaled_report() -> BenchReport:
    report = _report()
    report.round_trips = [results.RoundTrips(site="alpha", tasks=20, statements=640, transactions=200,
                                             by_role={"web": 260, "worker": 380}),
                          results.RoundTrips(site="bravo", tasks=20, not_counted="external PostgreSQL")]
    report.scaling = [results.Scaled(web=web, run=EndToEnd(site="alpha", price=0, workers=workers, tasks=100,
                                                           seconds=100 / rate, tasks_per_s=rate,
                                                           latency=_latency(150.0),
                                                           cpu_ms_per_task={"web": 7.0, "worker": 15.0}))
                      for web, workers, rate in ((1, 1, 20.0), (1, 2, 25.0), (1, 4, 30.0), (2, 2, 26.0))]
    return report


def test_round_trips_per_task_are_printed_and_an_uncounted_site_says_why() -> None:
    ((_, rendered),) = [s for s in tables.sections(_scaled_report()) if s[0].startswith("Database round trips")]
    alpha, bravo = rendered.splitlines()[1:]
    assert alpha.split() == ["alpha", "20", "32.0", "10.0", "13.0", "19.0"]
    assert "not counted: external PostgreSQL" in bravo


def test_wal_records_a_task_are_set_side_by_side_and_an_uncounted_site_says_why() -> None:
    lock, commit = results.WalCount("Heap/LOCK", "account", 3.0), results.WalCount("Transaction/COMMIT", "-", 3.0)
    report = msgspec.structs.replace(_report(), wal=[
        results.WalAnatomy(site="alpha", tasks=200, records_per_task=57.9, bytes_per_task=6539.4,
                           full_page_bytes_per_task=867.0, counts=[lock, commit]),
        results.WalAnatomy(site="bravo", tasks=200, records_per_task=61.0, bytes_per_task=7000.0,
                           counts=[commit, results.WalCount("Heap/INSERT", "credit_ledger", 2.0)]),
        results.WalAnatomy(site="charlie", tasks=0, not_counted="pg_walinspect: InsufficientPrivilegeError"),
    ])
    ((title, rendered),) = [s for s in tables.sections(report) if s[0].startswith("WAL records")]
    assert "200 alpha, 200 bravo" in title and "charlie not counted: pg_walinspect" in title
    lines = [line.split("  ") for line in rendered.splitlines()]
    cells = [[cell.strip() for cell in line if cell.strip()] for line in lines[1:]]
    assert cells == [["all records", "57.9", "61.0"], ["bytes (of them full-page images)", "6539 (867)", "7000 (0)"],
                     ["Heap/LOCK", "account", "3.00", "0.00"], ["Transaction/COMMIT", "-", "3.00", "3.00"],
                     ["Heap/INSERT", "credit_ledger", "0.00", "2.00"]]


def test_driven_write_commits_are_set_against_pgbench() -> None:
    (row,) = tables.driven_commit_rows(_report())
    assert row.write_commits_per_s == 140.0  # 700 write commits over the 1-worker batch's 5 s
    assert row.pgbench_commits_per_s == 1400.0 and row.fraction == 0.1


def test_scaling_rows_compare_with_the_first(tmp_path: Path) -> None:
    report = _scaled_report()
    ((_, rendered),) = [s for s in tables.sections(report) if s[0].startswith("Scaling")]
    assert [line.split()[:4] for line in rendered.splitlines()[1:]] == [
        ["1", "1", "20.0", "1.00"], ["1", "2", "25.0", "1.25"], ["1", "4", "30.0", "1.50"], ["2", "2", "26.0", "1.30"]]
    assert "| 2 | 2 | 26.0 |" in tables.markdown(report)
    results.write_json(report, tmp_path / "bench.json")
    assert results.read_json(tmp_path / "bench.json") == report


def test_bench_refuses_negative_phase_sizes(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "cmd_bench", lambda args: pytest.fail("bench started"))
    assert cli.main(["bench", "--scaling-tasks", "-1"]) == 2
    assert "--history-tasks must be 0" in capsys.readouterr().err


def test_bench_phase_sizes_default_to_the_configs() -> None:
    args = cli.build_parser().parse_args(["bench"])
    assert (args.statement_tasks, args.scaling_tasks) == (BenchConfig().statement_tasks, BenchConfig().scaling_tasks)


def test_an_external_postgres_is_left_as_it_is() -> None:
    import asyncio

    from harness.bench import statements
    from harness.state import ServiceRecord, SiteRecord

    site = SiteRecord(slug="alpha", name="Alpha", base_url="", upstream_url="", origin="", cookie_name="",
                      database_url="postgresql://db.example/alpha", broker_url="", broker_namespace="",
                      task_queue="", dead_queue="", s3_endpoint_url="", bucket="", object_prefix="", site_dir="",
                      venv_python="")
    external = ServiceRecord(kind="postgres", url="postgresql://db.example/postgres")  # no pid: not ours
    counted = asyncio.run(statements.round_trips(external, site, [], tasks=20))
    assert counted.not_counted.startswith("external PostgreSQL") and counted.statements == 0


# --- interleaved rounds ------------------------------------------------------------


def _rounds_report(ours: list[float], naive: list[float | None], bare: list[float]) -> BenchReport:
    """One site at 1 worker, round by round; a None leaves the naive site out of that round."""
    def run(cls, number, rate, **extra):
        return cls(workers=1, tasks=100, seconds=100 / rate, tasks_per_s=rate, latency=_latency(10.0),
                   cpu_ms_per_task={"web": number, "worker": 10.0}, round=number, **extra)
    return BenchReport(
        config=BenchConfig(sites=1, rounds=len(ours)),
        end_to_end=[run(EndToEnd, n, r, site="alpha", price=0) for n, r in enumerate(ours, 1)],
        naive=[run(Naive, n, r) for n, r in enumerate(naive, 1) if r is not None],
        baseline=[run(Baseline, n, r) for n, r in enumerate(bare, 1)],
    )


def test_a_spread_is_the_median_and_the_extremes_of_what_was_measured() -> None:
    assert rounds.spread([3.0, 1.0, 2.0]) == rounds.Spread(median=2.0, low=1.0, high=3.0, count=3)
    assert rounds.spread([1.0, 4.0, None, 2.0, 3.0]) == rounds.Spread(median=2.5, low=1.0, high=4.0, count=4)
    assert rounds.spread([None]) is None and rounds.spread([]) is None
    assert rounds.Spread(median=0.5, low=0.4, high=0.6, count=3).relative_range == 0.4


def test_each_round_runs_every_site_then_the_naive_site_then_the_bare_actor() -> None:
    order = rounds.schedule(3, ["alpha", "bravo"])
    assert order[:4] == [(1, "alpha"), (1, "bravo"), (1, "naive"), (1, "bare")]
    assert [what for _, what in order] == ["alpha", "bravo", "naive", "bare"] * 3
    assert [number for number, _ in order] == [1] * 4 + [2] * 4 + [3] * 4
    assert rounds.schedule(1, []) == [(1, "naive"), (1, "bare")]


def test_a_ratio_is_taken_within_its_round_and_judged_on_the_median() -> None:
    # Round 2 ran while the machine was busy: both sides slowed alike, so the round's ratio holds;
    # a ratio of medians across rounds would pair ours of one minute with naive of another.
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    assert rounds.ratios(report, rounds.NAIVE) == {("alpha", 1): [0.5, 0.5, 0.6]}
    assert rounds.ratio_spreads(report, rounds.NAIVE)[("alpha", 1)] == rounds.Spread(0.5, 0.5, 0.6, 3)
    assert tables.vs_naive(report) == {("alpha", 1): 0.5}
    assert tables.vs_baseline(report) == {("alpha", 1): 0.5}  # 0.5, 0.4, 0.5
    # a round whose reference is missing gives no ratio, and the others still do
    gap = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, None, 100.0], bare=[100.0, 50.0, 120.0])
    assert rounds.ratios(gap, rounds.NAIVE) == {("alpha", 1): [0.5, None, 0.6]}
    assert rounds.ratio_spreads(gap, rounds.NAIVE)[("alpha", 1)] == rounds.Spread(0.55, 0.5, 0.6, 2)


def test_rounds_are_paired_by_number_whatever_order_the_runs_were_stored_in() -> None:
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    report.end_to_end.reverse()
    report.naive = [report.naive[1], report.naive[2], report.naive[0]]
    assert rounds.ratios(report, rounds.NAIVE) == {("alpha", 1): [0.5, 0.5, 0.6]}


def test_the_reference_table_shows_each_ratios_median_and_range_across_rounds() -> None:
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    ((_, rendered),) = [s for s in tables.sections(report) if s[0].startswith("Against the references")]
    (row,) = rendered.splitlines()[1:]
    assert row.split() == ["alpha", "1", "3", "50.0", "100.0", "100.0", "0.50", "0.50-0.60", "0.50", "0.40-0.50",
                           "1.00", "1.00-1.00", "-", "-"]  # each round's CPU per task the same on both sides; no probe
    end_to_end = next(v for k, v in tables.sections(report) if k.startswith("End to end"))
    assert "3 interleaved rounds" in next(k for k, _ in tables.sections(report) if k.startswith("End to end"))
    assert len([line for line in end_to_end.splitlines() if line.startswith("alpha")]) == 3  # one row a round


def test_the_cpu_ratio_is_taken_within_each_round() -> None:
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    report.naive = [msgspec.structs.replace(n, cpu_ms_per_task={"web": 1.0, "worker": 4.0 * n.round})
                    for n in report.naive]
    # ours: 11, 12, 13 ms; naive: 5, 9, 13 ms
    assert rounds.cpu_ratios(report, rounds.NAIVE) == {("alpha", 1): [2.2, 1.333, 1.0]}
    assert rounds.cpu_ratio_spreads(report, rounds.NAIVE)[("alpha", 1)] == rounds.Spread(1.333, 1.0, 2.2, 3)


def test_each_process_is_compared_with_the_naive_sites_within_its_round() -> None:
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    # ours: web 1, 2, 3 ms and worker 10; naive: web 1 and worker 4, 8, 12 — the worker's drift is the
    # hour's, so by process within a round: web 1, 2, 3; worker 2.5, 1.25, 0.833
    report.naive = [msgspec.structs.replace(n, cpu_ms_per_task={"web": 1.0, "worker": 4.0 * n.round})
                    for n in report.naive]
    assert rounds.cpu_ratios(report, rounds.NAIVE, rounds.process_cpu("worker")) == {("alpha", 1): [2.5, 1.25, 0.833]}
    assert rounds.cpu_ratios(report, rounds.NAIVE, rounds.process_cpu("postgres")) == {("alpha", 1): [None] * 3}
    header, _, row = tables.process_ratio_table(report, markdown=True).splitlines()
    assert header == "| site | workers | web | worker | total |"
    assert row == "| alpha | 1 | 2.00 (1.00-3.00) | 1.25 (0.83-2.50) | 1.33 (1.00-2.20) |"


def test_at_equal_speed_each_sides_cpu_is_counted_in_its_own_batchs_probe_units() -> None:
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    # ours cost 11, 12, 13 ms; the naive site 10 ms in every round. In round 2 the machine ran slow
    # while ours ran (the probe's unit 1.2 ms against 1.0), in round 3 while the naive site ran.
    report.end_to_end = [msgspec.structs.replace(e, unit_ms=unit) for e, unit in zip(report.end_to_end,
                                                                                      [1.0, 1.2, 1.0], strict=True)]
    report.naive = [msgspec.structs.replace(n, cpu_ms_per_task={"web": 5.0, "worker": 5.0}, unit_ms=unit)
                    for n, unit in zip(report.naive, [1.0, 1.0, 1.3], strict=True)]
    assert rounds.cpu_ratios(report, rounds.NAIVE) == {("alpha", 1): [1.1, 1.2, 1.3]}
    assert rounds.cpu_ratios(report, rounds.NAIVE, rounds.at_equal_speed) == {("alpha", 1): [1.1, 1.0, 1.69]}
    assert (rounds.cpu_ratio_spreads(report, rounds.NAIVE, rounds.at_equal_speed)[("alpha", 1)]
            == rounds.Spread(1.1, 1.0, 1.69, 3))
    # a batch without a probe (a report from before it) gives no ratio at equal speed
    report.naive[0] = msgspec.structs.replace(report.naive[0], unit_ms=None)
    assert rounds.cpu_ratios(report, rounds.NAIVE, rounds.at_equal_speed) == {("alpha", 1): [None, 1.0, 1.69]}
    found = {row.label: row.after for row in compare.rows([(report, report)], "alpha")[0]}
    assert found["CPU / task, ours / naive, equal speed"] == 1.34  # the median of 1.0 and 1.69


def test_the_speed_probe_times_its_unit_in_a_process_of_its_own_until_told_to_stop() -> None:
    import asyncio
    import os

    from harness.bench import speed

    async def probed() -> speed.Probe:
        async with speed.Probe() as probe:
            assert probe.unit_ms is None  # known only once it stopped
            started = os.times()
            while os.times().elapsed - started.elapsed < 0.5:  # half a second of a batch's own work
                sum(i * i for i in range(10_000))
        return probe

    probe = asyncio.run(probed())
    assert probe.samples >= 1 and probe.unit_ms is not None
    # the unit is the same work in this process: the probe timed it, not its start-up or its waits
    own = sorted(speed.unit_ms() for _ in range(21))[10]
    assert own / 4 < probe.unit_ms < own * 4


def test_cpu_per_task_is_the_median_of_each_process_across_rounds() -> None:
    report = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    assert rounds.median_cpu(report.end_to_end) == {"web": 2.0, "worker": 10.0}
    profile = next(v for k, v in tables.sections(report) if k.startswith("CPU per task"))
    assert next(line for line in profile.splitlines() if line.startswith("alpha 1w")).split()[-1] == "12.0"


def test_a_comparison_takes_the_medians_of_each_runs_rounds() -> None:
    before = _rounds_report(ours=[50.0, 20.0, 60.0], naive=[100.0, 40.0, 100.0], bare=[100.0, 50.0, 120.0])
    after = _rounds_report(ours=[80.0, 90.0, 10.0], naive=[100.0, 100.0, 100.0], bare=[100.0, 100.0, 100.0])
    found = {row.label: (row.before, row.after) for row in compare.rows([(before, after)], "alpha")[0]}
    assert found["tasks/s"] == (50.0, 80.0)  # not the outlier round of either run
    assert found["ours / naive"] == (0.5, 0.8)
    assert found["CPU ms / task, all processes"] == (12.0, 12.0)
    assert found["CPU / task, ours / naive"] == (1.0, 1.0)
    printed = compare.text([(before, after)], ["alpha"])
    assert "ours / naive, range" in printed and "0.50-0.60 (3 rounds) -> 0.10-0.90 (3 rounds)" in printed


class _Finishing:
    """Completions that see every job finish ``after`` seconds after it started (loop.py's shape)."""

    polls = 0

    def __init__(self, after: float = 0.0) -> None:
        self.after = after

    async def run(self) -> None:
        return None

    def stop(self) -> None:
        return None

    async def wait(self, job_id):
        import asyncio
        import time as clock

        from harness.bench import loop

        await asyncio.sleep(self.after)
        return loop.Finished("succeeded", None, clock.time())


def test_a_time_bounded_batch_goes_on_until_its_seconds_have_passed() -> None:
    import asyncio
    import uuid

    from harness.bench import loop

    async def start(client: int, number: int) -> uuid.UUID:
        return uuid.uuid4()

    by_count = asyncio.run(loop.closed_loop(start, _Finishing(0.005), total=10, concurrency=2))
    assert len(by_count.jobs) == 10
    by_time = asyncio.run(loop.closed_loop(start, _Finishing(0.005), total=1, concurrency=2, seconds=0.3))
    assert by_time.seconds >= 0.3 and len(by_time.jobs) > 10
    assert by_time.jobs_per_s == pytest.approx(len(by_time.jobs) / by_time.seconds, rel=0.01)  # every job counted


def _history() -> results.History:
    def size(tasks: int, audit: float) -> results.HistorySize:
        return results.HistorySize(tasks=tasks, attempts=tasks, files=tasks, submit=_latency(20.0),
                                   list_first_page=_latency(5.0), maintenance_s=0.4, maintenance_steps={"x": 0},
                                   audit_s=audit, audit_clean=True, audit_findings=[])
    return results.History(site="alpha", seeded=1_000_000, seed_seconds=60.0, empty=size(10_000, 2.0),
                           full=size(1_010_000, 52.0), audit_s_per_100k_tasks=5.0, submit_p99_ratio=1.0,
                           list_p99_ratio=1.0, maintenance_ratio=1.0)


def test_the_history_row_sets_the_full_site_against_the_empty_one(tmp_path: Path) -> None:
    report = _report()
    report.history = _history()
    title, rendered = next((k, v) for k, v in tables.sections(report) if k.startswith("Cost as history grows"))
    assert "1,000,000 tasks" in title and "5.00 s per 100,000 tasks" in title
    _, full, ratios = rendered.splitlines()[1:]
    assert full.split()[:3] == ["+1,000,000", "tasks", "1010000"] and ratios.split()[-2] == "26.0"
    results.write_json(report, tmp_path / "r.json")
    assert results.read_json(tmp_path / "r.json").history == report.history


# --- the phases after the rounds ---------------------------------------------------


def _one_embedded_site():
    """One site record and its sites file, as the bench's phases read them (nothing behind them)."""
    from harness.bench import run
    from harness.state import SiteRecord, SitesFile

    site = SiteRecord(slug="alpha", name="Alpha", base_url="", upstream_url="", origin="", cookie_name="",
                      database_url="", broker_url="", broker_namespace="", task_queue="", dead_queue="",
                      s3_endpoint_url="", bucket="", object_prefix="", site_dir="", venv_python="")
    sites = SitesFile(sites=[site], services=msgspec.convert(
        {"mode": "embedded", "postgres": {"kind": "postgres", "url": ""}, "broker": {"kind": "redis", "url": ""},
         "s3": {"kind": "s3", "url": "", "access_key_id": "", "secret_access_key": ""}}, run.state.Services))
    return site, sites


def _no_other_load():
    """The bench's other-load watcher, watching nothing."""
    from contextlib import nullcontext

    return type("Other", (), {"phase": lambda self, name: nullcontext()})()


def test_the_accounts_of_the_phases_without_workers_are_made_while_the_workers_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The API and history phases stop the site's workers. Their accounts were registered after that,
    so on a site that asks for proven addresses (the worker mails the link) a bench run ended with
    "timed out after 60 s waiting for verify 1 to bench-15-… on bravo"."""
    import asyncio

    from harness.bench import run

    site, sites = _one_embedded_site()
    events: list[str] = []

    class Opened:
        async def reconnect(self) -> None:
            pass

        async def close(self) -> None:
            pass

    def workers(state_dir: Path, slug: str, count: int) -> None:
        events.append(f"workers {count}")

    async def api_accounts(*args, **kwargs):
        events.append("api accounts")
        return [Opened()], Opened()

    async def history_accounts(*args, **kwargs):
        events.append("history accounts")
        return [[Opened()], [Opened()]]

    async def measured(name: str, *args, **kwargs):
        events.append(name)

    monkeypatch.setattr(run, "set_workers", workers)
    monkeypatch.setattr(run.state, "load", lambda state_dir: sites)
    monkeypatch.setattr(run, "open_api_accounts", api_accounts)
    monkeypatch.setattr(run, "open_history_accounts", history_accounts)
    for name in ("api_submit", "history", "listing"):
        monkeypatch.setattr(run, name, lambda *args, _name=name, **kwargs: measured(_name))
    config = BenchConfig(sites=1, statement_tasks=0, wal_tasks=0, scaling_tasks=0, history_tasks=1000)
    report = BenchReport(config=config)
    other = _no_other_load()
    asyncio.run(run.site_phases(tmp_path, sites, site, [Opened()], config, report, other))
    assert events.index("workers 0") > max(events.index("api accounts"), events.index("history accounts"))
    assert events.index("workers 0") < min(events.index("api_submit"), events.index("history"))


def test_the_phases_accounts_are_closed_when_a_later_one_cannot_be_opened(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    """The API phase's accounts are opened first; if the history phase's cannot be (or the workers
    cannot be stopped), the API phase never runs to close them: the phases close what they opened."""
    import asyncio

    from harness.bench import run

    site, sites = _one_embedded_site()
    opened: list = []

    class Opened:
        def __init__(self) -> None:
            self.closed = False
            opened.append(self)

        async def reconnect(self) -> None:
            pass

        async def close(self) -> None:
            self.closed = True

    async def api_accounts(*args, **kwargs):
        return [Opened(), Opened()], Opened()

    async def history_accounts(*args, **kwargs):
        raise BenchError("registration refused")

    monkeypatch.setattr(run, "set_workers", lambda *args: None)
    monkeypatch.setattr(run.state, "load", lambda state_dir: sites)
    monkeypatch.setattr(run, "open_api_accounts", api_accounts)
    monkeypatch.setattr(run, "open_history_accounts", history_accounts)
    config = BenchConfig(sites=1, statement_tasks=0, wal_tasks=0, scaling_tasks=0, history_tasks=1000)
    other = _no_other_load()
    with pytest.raises(BenchError, match="registration refused"):
        asyncio.run(run.site_phases(tmp_path, sites, site, [], config, BenchReport(config=config), other))
    assert len(opened) == 3 and all(account.closed for account in opened)


def test_a_paced_batch_starts_each_job_no_earlier_than_its_turn() -> None:
    import asyncio
    import time as clock
    import uuid

    from harness.bench import loop

    started: dict[int, float] = {}

    async def start(client: int, number: int) -> uuid.UUID:
        started[number] = clock.time()
        return uuid.uuid4()

    paced = asyncio.run(loop.closed_loop(start, _Finishing(), total=20, concurrency=4, pace=100.0))
    assert len(paced.jobs) == 20 and sorted(started) == list(range(20))
    first = started[0]
    # held to 100 jobs/s (job 0 itself may start a little after the loop's clock did)
    assert all(started[n] >= first + n / 100.0 - 0.01 for n in started)
    assert paced.seconds >= 0.185 and paced.jobs_per_s <= 20 / 0.185  # an instant system, held back


def test_the_naive_site_is_paced_at_the_first_sites_rates_of_the_same_round() -> None:
    report = _rounds_report(ours=[50.0, 20.0], naive=[100.0, 40.0], bare=[100.0, 50.0])
    report.end_to_end.append(msgspec.structs.replace(report.end_to_end[1], workers=2, tasks_per_s=30.0))
    report.end_to_end.append(msgspec.structs.replace(report.end_to_end[1], site="bravo", tasks_per_s=99.0))
    assert run.round_paces(report, "alpha", 1) == {1: 50.0}
    assert run.round_paces(report, "alpha", 2) == {1: 20.0, 2: 30.0}
    assert run.round_paces(report, "alpha", 3) == {}


def test_the_paced_table_sets_each_site_beside_the_naive_site_held_to_that_sites_rate() -> None:
    report = _rounds_report(ours=[50.0, 40.0, 45.0], naive=[100.0, 90.0, 95.0], bare=[100.0, 90.0, 95.0])
    # alpha costs 10 + round (web) ms a task, as the naive site flat out does; held to alpha's rate the
    # naive site costs 12.5 ms a task in every round, held to bravo's (slower) 14.0
    report.end_to_end += [EndToEnd(site="bravo", price=0, workers=1, tasks=100, seconds=1.0, tasks_per_s=30.0,
                                   latency=_latency(9.0), cpu_ms_per_task={"web": 4.0, "worker": 10.0}, round=n)
                          for n in (1, 2, 3)]

    def held(site: str, cpu: dict[str, float]) -> list[Naive]:
        return [Naive(workers=1, tasks=100, seconds=2.0, tasks_per_s=run.tasks_per_s, latency=_latency(9.0),
                      cpu_ms_per_task=cpu, round=run.round, pace=run.tasks_per_s, paced_to=site)
                for run in report.end_to_end if run.site == site]

    # bravo's batches come first: each site is paired with the batches held to its own rate, not by order
    report.naive_paced = held("bravo", {"web": 4.0, "worker": 10.0}) + held("alpha", {"web": 2.5, "worker": 10.0})
    rows = tables.paced_table(report).splitlines()
    assert len(rows) == 3
    assert rows[1].split() == ["alpha", "1", "3", "45.0", "45.0", "12.0", "12.0", "12.5", "1.00", "(1.00-1.00)",
                               "0.96", "(0.88-1.04)"]
    assert rows[2].split() == ["bravo", "1", "3", "30.0", "30.0", "14.0", "12.0", "14.0", "1.17", "(1.08-1.27)",
                               "1.00", "(1.00-1.00)"]
    titles = [title for title, _ in tables.sections(report)]
    assert any(title.startswith("The naive site held to each site's rate") for title in titles)
    assert not any(title.startswith("The naive site held") for title, _ in tables.sections(_report()))
    profile = dict(tables.sections(report))
    by_process = next(text for title, text in profile.items() if title.startswith("CPU per task by process"))
    assert "naive at alpha's pace 1w" in by_process and "naive at bravo's pace 1w" in by_process


def test_a_report_from_before_every_site_was_paced_pairs_its_paced_batches_with_the_first_site() -> None:
    report = _rounds_report(ours=[50.0, 40.0], naive=[100.0, 90.0], bare=[100.0, 90.0])
    report.end_to_end.append(EndToEnd(site="bravo", price=0, workers=1, tasks=100, seconds=1.0, tasks_per_s=60.0,
                                      latency=_latency(9.0), cpu_ms_per_task={"web": 9.0}, round=1))
    # as such a report decodes: no paced_to
    report.naive_paced = [Naive(workers=1, tasks=100, seconds=2.0, tasks_per_s=run.tasks_per_s, latency=_latency(9.0),
                                cpu_ms_per_task={"web": 2.5, "worker": 10.0}, round=run.round, pace=run.tasks_per_s)
                          for run in report.end_to_end if run.site == "alpha"]
    encoded = msgspec.json.encode(report)
    assert b',"paced_to":""' in encoded
    legacy = msgspec.json.decode(encoded.replace(b',"paced_to":""', b""), type=BenchReport)
    rows = tables.paced_table(legacy).splitlines()
    assert [row.split()[0] for row in rows[1:]] == ["alpha"]  # bravo was never paced against
    assert rounds.cpu_ratio_spreads(legacy, rounds.NAIVE_PACED)[("bravo", 1)] is None
