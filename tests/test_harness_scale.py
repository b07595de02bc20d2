"""Scale-out through the harness: two web processes on one port, three workers, 200 tasks run once each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import KIT_ROOT


@pytest.mark.slow
def test_scale_out_runs_every_task_exactly_once(tmp_path: Path) -> None:
    state = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "harness", "verify", "--sites", "1", "--web-processes", "2", "--workers", "3",
         "--state", str(state), "--no-service-faults", "--", "-k", "scale"],  # the faults: the kit's harness run
        cwd=KIT_ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    report = json.loads((state / "report.json").read_text())
    cases = {c["name"]: c["outcome"] for c in report["tests"]["cases"]}
    assert cases == {"site_tests.test_scale::test_two_hundred_tasks_across_web_processes_run_exactly_once[alpha]":
                     "passed"}
    final = json.loads((state / "sites.down.json").read_text())
    assert len(final["sites"][0]["pids"]["web"]) == 2 and len(final["sites"][0]["pids"]["worker"]) == 3
