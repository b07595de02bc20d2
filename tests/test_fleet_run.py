"""Fleet runs of the harness (slow): sites that already exist, from two commits of a temporary history of
this template, verified side by side with ``--site``; and an upgrade rehearsal (``--update``) of a site
rendered from an older commit of this checkout, its old data carried over."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from copier import run_copy

from harness import KIT_ROOT
from harness.processes import free_port

from .test_template_update import older_template_commit

# A few scenarios per site: the full suite is the plain harness run's (test_harness_run.py); here
# the fleet's path is proven — its own ports, names, copies, provenance and the books.
# What a fleet run proves is the fleet's: a few scenarios, and no fault campaigns (the kit's own
# harness run has both; the process kills would add a minute, the service faults minutes of waiting
# out the sites' timers here, and neither reads anything a fleet changes: they find the processes
# in the run's state like any run's).
SCENARIOS = ["--no-fault-campaign", "--no-service-faults", "--", "-k", "isolation or test_register_login_me_logout"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def temporary_history(root: Path) -> tuple[Path, str, str]:
    """This checkout's working tree as commit A of a fresh repository, and a commit B after it
    that changes a rendered file (so the two versions differ, and both pass today's scenarios)."""
    files = _git(KIT_ROOT, "ls-files", "-co", "--exclude-standard").splitlines()
    for name in files:
        if (KIT_ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(KIT_ROOT / name, root / name)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "A")
    toml = root / "template" / "site.toml.jinja"
    toml.write_text(toml.read_text() + "\n# revised in commit B\n")
    _git(root, "commit", "-qam", "B")
    return root, _git(root, "rev-parse", "HEAD~1"), _git(root, "rev-parse", "HEAD")


def render_at(template: Path, ref: str, destination: Path, slug: str, **answers: object) -> Path:
    """A site as a user makes one: `copier copy` at ``ref`` with the default throttles (and ``answers``),
    then a git repo."""
    port = free_port()
    run_copy(str(template), str(destination),
             data={"slug": slug, "site_name": slug.capitalize(), "port": port, **answers},
             defaults=True, unsafe=True, quiet=True, vcs_ref=ref)
    _git(destination, "init", "-q")
    _git(destination, "add", "-A")
    _git(destination, "commit", "-qm", "site as rendered")
    return destination


def verify(state: Path, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "harness", "verify", "--state", str(state), *args],
                            cwd=KIT_ROOT, capture_output=True, text=True, timeout=1200, check=False)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    report = json.loads((state / "report.json").read_text())
    assert report["ok"] is True and report["teardown"] == []
    assert report["tests"]["passed"] > 0 and report["tests"]["failed"] == 0
    return report


@pytest.mark.slow
def test_sites_from_two_template_commits_are_verified_together(tmp_path: Path) -> None:
    template, a, b = temporary_history(tmp_path / "template")
    # Two sites, one per commit: siblings from one commit are the plain harness run's (alpha and bravo).
    sites = [render_at(template, a, tmp_path / "north", "north"), render_at(template, b, tmp_path / "east", "east")]
    report = verify(tmp_path / "run", *(arg for site in sites for arg in ("--site", str(site))), *SCENARIOS)

    fleet = {site["slug"]: site["fleet"] for site in report["sites"]}
    assert list(fleet) == ["north", "east"]
    assert {slug: (f["template"], f["kind"], f["label"]) for slug, f in fleet.items()} == {
        slug: (str(template), "site", str(tmp_path / slug)) for slug in fleet}
    assert [_git(template, "rev-parse", f["commit"]) for f in fleet.values()] == [a, b]
    for slug, site in fleet.items():  # its own port (free when the test chose it) and names
        answers = json.loads((tmp_path / "run" / "run.json").read_text())["answers"][slug]
        assert site["port"] == answers["port"] and answers["database_name"] == slug
        assert site["overrides"]["writes_per_minute"] == "30 raised to 2000"
    assert all(s["tests"]["passed"] > 0 and s["books"]["audit_clean"] for s in report["sites"])
    assert report["chaos"] is None and report["chaos_skipped"] == "not asked for (--no-fault-campaign)"
    assert report["services_chaos_skipped"] == "not asked for (--no-service-faults)"
    summary = (tmp_path / "run" / "summary.txt").read_text()
    assert "fault campaign: skipped (not asked for (--no-fault-campaign))" in summary
    assert f"{tmp_path / 'east'} (template {template} @ " in summary
    # The user's folders were only read.
    assert not _git(tmp_path / "north", "status", "--porcelain") and not (tmp_path / "north" / ".venv").exists()


@pytest.mark.slow
def test_an_update_rehearsal_carries_the_old_data_over(tmp_path: Path) -> None:
    old = older_template_commit()
    site = render_at(KIT_ROOT, old, tmp_path / "legacy", "legacy")
    assert not (site / "legacy" / "migrations" / "0007_task_charges.sql").exists()
    # Beside it, a site of this checkout's last commit that asks new accounts to prove their address and
    # charges for tasks: its old data is made as its users make theirs (the mailed link followed, credits
    # granted), or the old version refuses the upload and the task.
    # (at the commit by name: at "HEAD" copier renders a working tree's uncommitted changes as a commit
    # of its own, which `copier update` cannot find again)
    priced = render_at(KIT_ROOT, _git(KIT_ROOT, "rev-parse", "HEAD"), tmp_path / "priced", "priced",
                       verify_email=True, charges_enabled=True, task_price=3)
    report = verify(tmp_path / "run", "--update", "--site", str(site), "--site", str(priced), *SCENARIOS)

    only, proven = report["sites"]
    assert proven["slug"] == "priced" and proven["update"]["checked"] is True, proven["update"]
    assert proven["update"]["problems"] == [] and proven["update"]["old_data"]["result"]["sha256"]
    update = only["update"]
    assert _git(KIT_ROOT, "rev-parse", update["from_commit"]) == old
    head = _git(KIT_ROOT, "rev-parse", "HEAD")
    assert update["to_commit"].split(" + ")[0] in (head[:7], _git(KIT_ROOT, "describe", "--tags", "--always"))
    assert "0007_task_charges.sql" in update["migrations"]
    assert update["checked"] is True and update["problems"] == [] and update["conflicts"] == []
    assert update["old_data"]["result"]["sha256"]
    assert f"update: {update['from_commit']} -> {update['to_commit']}" in (tmp_path / "run" / "summary.txt").read_text()
    assert not _git(site, "status", "--porcelain")  # the rehearsal ran on a copy
