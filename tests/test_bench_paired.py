"""``harness bench-paired``: the order of its slices, how they are pooled and paired, and its options."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from harness import cli, state
from harness.bench import paired
from harness.bench.measure import BenchError
from harness.bench.paired import Paired, Slice
from harness.bench.rounds import NAIVE


def _slice(side: str, pair: int, tasks: int, web: float, worker: float) -> Slice:
    return Slice(side=side, pair=pair, tasks=tasks, seconds=6.0, cpu_ms={"web": web, "worker": worker})


def _measured() -> Paired:
    # Pair 0 on a fast machine, pair 1 on one twice as slow: each side's CPU a task doubles with it.
    return Paired(site="alpha", workers=2, slice_seconds=6.0, slices=[
        _slice("alpha", 0, 100, 300.0, 900.0), _slice(NAIVE, 0, 200, 400.0, 1200.0),
        _slice(NAIVE, 1, 100, 400.0, 1200.0), _slice("alpha", 1, 50, 300.0, 900.0),
    ])


def test_the_slices_take_turns_and_the_first_of_a_pair_alternates() -> None:
    assert [paired.order(pair, "alpha") for pair in range(4)] == [
        ("alpha", NAIVE), (NAIVE, "alpha"), ("alpha", NAIVE), (NAIVE, "alpha")]


def test_each_side_is_pooled_over_its_slices_and_each_pair_gives_a_ratio_of_its_own() -> None:
    measured = _measured()
    assert measured.per_task("alpha") == {"web": 4.0, "worker": 12.0, "total": 16.0}  # 600 / 150, 1800 / 150
    assert measured.per_task(NAIVE) == {"web": 2.67, "worker": 8.0, "total": 10.67}  # 800 / 300, 2400 / 300
    assert measured.ratio() == round(16.0 / 10.67, 3)
    # Within each pair both sides saw the same machine: 12 / 8 and 24 / 16, the drift cancelled.
    assert measured.pair_ratios() == [1.5, 1.5]
    spread = measured.pair_spread()
    assert spread is not None and (spread.median, spread.low, spread.high, spread.count) == (1.5, 1.5, 1.5, 2)
    assert measured.pair_error() == 0.0


def test_the_pairs_standard_error_is_their_spread_over_the_root_of_their_count() -> None:
    slices = [_slice("alpha", 0, 100, 0.0, 1200.0), _slice(NAIVE, 0, 100, 0.0, 1000.0),
              _slice(NAIVE, 1, 100, 0.0, 1000.0), _slice("alpha", 1, 100, 0.0, 1400.0)]
    measured = Paired(site="alpha", workers=1, slice_seconds=6.0, slices=slices)
    assert measured.pair_ratios() == [1.2, 1.4]
    assert measured.pair_error() == round(0.1414 / 1.4142, 3)  # stdev 0.1414 of two, over the root of 2
    assert msgspec.structs.replace(measured, slices=slices[:2]).pair_error() is None


def test_a_pair_missing_a_side_gives_no_ratio_and_a_side_without_tasks_is_refused() -> None:
    cut = msgspec.structs.replace(_measured(), slices=_measured().slices[:3])
    assert cut.pair_ratios() == [1.5]
    with pytest.raises(BenchError, match="bravo ran no task"):
        cut.per_task("bravo")


def test_the_text_gives_both_sides_by_process_and_both_ratios() -> None:
    shown = paired.text([_measured()])
    assert "alpha, 2 worker(s), 2 pairs of 6-s slices" in shown
    assert "alpha  4.00   12.00  16.00" in shown and "naive  2.67    8.00  10.67" in shown
    assert "pooled: 1.50; by pair: median 1.50 (1.50-1.50), standard error of their mean 0.000" in shown


def test_measurements_round_trip_as_json() -> None:
    held = msgspec.structs.replace(_measured(), rate=40.0)
    encoded = msgspec.json.encode([_measured(), held])
    assert msgspec.json.decode(encoded, type=list[Paired]) == [_measured(), held]


def test_each_sides_rate_is_its_tasks_over_its_slices_time_and_a_held_run_says_so() -> None:
    measured = _measured()  # alpha 150 tasks in 12 s, the naive site 300
    assert (measured.tasks_per_second("alpha"), measured.tasks_per_second(NAIVE)) == (12.5, 25.0)
    assert measured.tasks_per_second("bravo") == 0.0
    assert "tasks/s: alpha 12.5, naive 25" in paired.text([measured])
    assert "held" not in paired.text([measured])
    held = msgspec.structs.replace(measured, rate=40.0)
    assert "alpha, 2 worker(s), 2 pairs of 6-s slices, both held to 40 tasks/s: CPU ms a task" in paired.text([held])


def test_the_rate_reaches_every_slice_as_the_loops_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    paces = []

    async def loop(start, completions, total, concurrency, seconds=0.0, pace=None):
        paces.append(pace)
        return msgspec.defstruct("Batch", [("jobs", list), ("seconds", float)])(jobs=[], seconds=seconds)

    monkeypatch.setattr(paired, "closed_loop", loop)
    monkeypatch.setattr(paired.cpu, "reading", lambda groups: {"web": 0.0})
    side = paired.Side(start=None, conn=None, groups={}, vacuum=None)
    for rate in (None, 40.0):
        taken, _ = asyncio.run(paired._slice("alpha", side, 0, 6.0, 8, rate))
        assert taken.side == "alpha" and paces[-1] == rate


@pytest.mark.parametrize(("argv", "message"), [
    (["--pairs", "0"], "must be positive"),
    (["--seconds", "0"], "must be positive"),
    (["--workers", "1", "0"], "must be positive"),
    (["--rate", "0"], "must be positive"),
    (["--rate", "-5"], "must be positive"),
])
def test_impossible_options_are_refused_before_anything_starts(argv: list[str], message: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sites.json").write_text("{}")
    monkeypatch.setattr(paired, "measure", lambda *a, **k: pytest.fail("measured"))
    assert cli.main(["bench-paired", "--state", str(tmp_path), "--site", "alpha", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_state_folder_without_sites_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        cli.main(["bench-paired", "--state", str(tmp_path), "--site", "alpha"])
    assert refused.value.code == 2
    assert "no harness state here" in capsys.readouterr().err


def test_a_site_the_run_does_not_hold_is_refused_before_anything_starts(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    services = state.Services(
        mode="embedded", postgres=state.ServiceRecord(kind="postgres", url="postgresql://x/y"),
        broker=state.ServiceRecord(kind="redis", url="redis://x"),
        s3=state.S3Record(kind="s3", url="http://x", access_key_id="k", secret_access_key="s"))
    state.save(tmp_path, state.SitesFile(sites=[], services=services, run_id="r"))
    assert cli.main(["bench-paired", "--state", str(tmp_path), "--site", "zeta", "--pairs", "1"]) == 1
    assert f"no site 'zeta' in {tmp_path}" in capsys.readouterr().err
