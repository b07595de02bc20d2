"""A short fault campaign on one site, end to end: it passes, reports what happened, leaves nothing running."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import KIT_ROOT
from harness.services import embedded


@pytest.mark.slow
def test_a_short_campaign_passes_and_cleans_up(tmp_path: Path) -> None:
    state = tmp_path / "chaos"
    result = subprocess.run(
        [sys.executable, "-m", "harness", "chaos", "--sites", "1", "--seconds", "20", "--seed", "4",
         "--state", str(state)],
        cwd=KIT_ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "seed 4, 20 s of load: PASS" in result.stdout

    report = json.loads((state / "chaos.json").read_text())
    assert report["ok"] is True and report["seed"] == 4 and report["failure"] is None
    [site] = report["sites"]
    assert site["slug"] == "alpha" and site["audit_clean"] is True and site["findings"] == []
    assert site["tasks"] > 0 and site["succeeded"] + sum(site["failed"].values()) == site["tasks"]
    done = [kill for kill in site["kills"] if kill["at"] is not None]
    assert done and all(kill["error"] is None and kill["back_after"] for kill in done)
    assert {(k["role"], k["index"]) for k in report["plan"]} >= {(k["role"], k["index"]) for k in done}

    # Every process of the run is gone, the restarted ones included.
    final = json.loads((state / "sites.down.json").read_text())
    pids = [p for s in final["sites"] for role in s["pids"].values() for p in role]
    pids += [kill["pid"] for kill in done]
    assert len(final["sites"][0]["pids"]["worker"]) == 2
    assert not [p for p in pids if embedded().pid_alive(p)]
