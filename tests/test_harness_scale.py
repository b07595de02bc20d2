"""Scale-out through the harness: two web processes on one port, three workers, 200 tasks run once each.

The site is stood up with ``harness up`` and only the scale scenario is run against it (as ``verify``
runs its scenarios): the fault campaign and the books are the kit's full harness run's
(test_harness_run.py), and here would only repeat them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness import KIT_ROOT, report
from harness.verify import PHASES, run_site_tests


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=KIT_ROOT, capture_output=True, text=True,
                          timeout=900, check=False)


@pytest.mark.slow
def test_scale_out_runs_every_task_exactly_once(tmp_path: Path) -> None:
    state = tmp_path / "run"
    up = _harness("up", "--sites", "1", "--web-processes", "2", "--workers", "3", "--state", str(state))
    try:
        assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
        pids = json.loads((state / "sites.json").read_text())["sites"][0]["pids"]
        assert len(pids["web"]) == 2 and len(pids["worker"]) == 3
        assert run_site_tests(state, 1, 1, ["-k", "scale"]) == 0
        cases = {c.name: c.outcome for c in report.read_junits([state / junit for junit, _ in PHASES]).cases}
        assert cases == {
            "site_tests.test_scale::test_two_hundred_tasks_across_web_processes_run_exactly_once[alpha]": "passed"}
    finally:
        down = _harness("down", "--state", str(state))
    assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-3000:]
    assert not [pid for pid in pids["web"] + pids["worker"] if psutil.pid_exists(pid)]
