"""The Prometheus alert rules every site ships (prometheus/alerts.yml), checked with Debian's promtool:
valid, unit-tested rule by rule, reading only the site's own scrape job and the series its /metrics
exposes, each alert documented."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness import KIT_ROOT

from .conftest import render

PROMTOOL = Path("/usr/bin/promtool")


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool") or (str(PROMTOOL) if PROMTOOL.exists() else None)
    if binary is None:
        message = "promtool is not installed (Debian's prometheus package; `kit.py test` installs it)"
        if os.environ.get("SITEKIT_REQUIRE_TOOLS"):
            pytest.fail(message)
        pytest.skip(message)
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def rules(site: Path) -> list[dict]:
    document = yaml.safe_load((site / "prometheus" / "alerts.yml").read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


@pytest.mark.parametrize("slug", ["orchid", "a2_b3"])
def test_the_rules_are_valid_and_pass_their_unit_tests(tmp_path: Path, slug: str) -> None:
    site = render(tmp_path, slug=slug, tasks_enabled=slug == "orchid")
    checked = promtool("check", "rules", "prometheus/alerts.yml", cwd=site)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "prometheus/alerts_test.yml", cwd=site)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_a_rule_that_cannot_fire_fails_its_unit_test(tmp_path: Path) -> None:
    """The unit tests hold each threshold: one moved makes promtool fail."""
    site = render(tmp_path, slug="orchid")
    path = site / "prometheus" / "alerts.yml"
    original = path.read_text()
    for before, after in (("> 120", "> 100000"), ("> 300", "> 100000"), ("> 0.05", "> 0.9"),
                          ("[15m])) > 0", "[15m])) > 5"), ("[5m])) > 0", "[5m])) > 5")):
        assert before in original
        path.write_text(original.replace(before, after, 1))
        assert promtool("test", "rules", "prometheus/alerts_test.yml", cwd=site).returncode == 1, before


def test_every_alert_is_tested_firing_and_quiet(tmp_path: Path) -> None:
    site = render(tmp_path, slug="orchid")
    names = {rule["alert"] for rule in rules(site)}
    tests = yaml.safe_load((site / "prometheus" / "alerts_test.yml").read_text())["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    assert {case["alertname"] for case in cases if case.get("exp_alerts")} == names
    assert {case["alertname"] for case in cases if not case.get("exp_alerts")} == names


def test_each_alert_reads_its_own_site_and_says_what_to_do(tmp_path: Path) -> None:
    site = render(tmp_path, slug="orchid")
    operations = (KIT_ROOT / "docs" / "operations.md").read_text()
    exposition = (site / "orchid" / "metrics" / "exposition.py").read_text()
    for rule in rules(site):
        assert rule["labels"]["site"] == "orchid"
        assert rule["labels"]["severity"] in ("warning", "critical")
        selectors = re.findall(r"\{([^}]*)\}", rule["expr"])
        assert selectors and all('job="orchid"' in selector for selector in selectors), rule["alert"]
        # Every series the rule reads is one the site's /metrics exposes (or Prometheus's own `up`).
        for metric in set(re.findall(r"\b(sitekit_[a-z_]+|up)\{", rule["expr"])) - {"up"}:
            base = re.sub(r"_(total|count)$", "", metric)
            assert f'"{base}"' in exposition, (rule["alert"], metric)
        annotations = rule["annotations"]
        assert annotations["summary"].startswith("orchid: ")
        assert f"docs/operations.md, Alerts, {rule['alert']}." in " ".join(annotations["description"].split())
        assert f"### {rule['alert']}" in operations, f"docs/operations.md has no section for {rule['alert']}"


def test_the_site_readme_scrapes_the_job_the_rules_read(tmp_path: Path) -> None:
    site = render(tmp_path, slug="a2_b3", port=65000)
    readme = (site / "README.md").read_text()
    assert "prometheus/alerts.yml" in readme and "promtool test rules prometheus/alerts_test.yml" in readme
    assert "  - job_name: a2_b3\n" in readme and '"127.0.0.1:65000"' in readme
    assert all('job="a2_b3"' in rule["expr"] for rule in rules(site))


def test_thresholds_follow_the_site_lifecycle_times(tmp_path: Path) -> None:
    """The backlog alert fires past the re-send time of tasks/states.py: moved there, moved here."""
    site = render(tmp_path, slug="orchid")
    states = (site / "orchid" / "tasks" / "states.py").read_text()
    resend = int(re.search(r"^UNCLAIMED_RESEND_SECONDS = (\d+)$", states, re.MULTILINE).group(1))
    backlog = next(rule for rule in rules(site) if rule["alert"] == "TaskBacklogOld")
    assert backlog["expr"].endswith(f"> {resend}")
