"""Harness pieces that need no running site: answers, provenance, state and report files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest

from harness import KIT_ROOT, report, state
from harness.render import provenance, render_site, site_answers


def test_answers_are_distinct_per_site_and_run() -> None:
    runs = [site_answers(i, run, 8000 + i) for run in ("aaaaaa", "bbbbbb") for i in range(4)]
    for key in ("database_name", "task_queue", "dead_queue", "broker_namespace", "bucket"):
        values = [a[key] for a in runs]
        assert len(set(values)) == len(values), key
    for key in ("slug", "auth_namespace", "origin", "object_prefix"):
        values = [a[key] for a in runs[:4]]
        assert len(set(values)) == 4, key
    with pytest.raises(ValueError):
        site_answers(99, "aaaaaa", 8000)


def test_harness_answers_pass_the_templates_validators(tmp_path: Path) -> None:
    site = tmp_path / "site"
    render_site(site_answers(3, "abc123", 8123), site, vcs_ref=None)
    assert (site / "delta" / "cli.py").exists()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_provenance_is_honest_about_uncommitted_changes(tmp_path: Path) -> None:
    repo = tmp_path / "kit"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "file.txt").write_text("one\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    clean = provenance(repo)
    assert clean.commit == _git(repo, "rev-parse", "HEAD") and clean.dirty is False
    (repo / "file.txt").write_text("two\n")
    assert provenance(repo).dirty is True
    assert provenance(tmp_path / "not-a-repo").commit is None


def test_uncommitted_template_changes_are_rendered_and_reported(tmp_path: Path) -> None:
    """What the report calls dirty really went into the site (copier renders the working tree)."""
    kit = tmp_path / "kit"
    shutil.copytree(KIT_ROOT / "template", kit / "template")
    shutil.copy(KIT_ROOT / "copier.yml", kit / "copier.yml")
    _git(kit, "init", "-q")
    _git(kit, "add", ".")
    _git(kit, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "template")
    assert provenance(kit).dirty is False
    marker = "# an uncommitted change\n"
    readme = kit / "template" / "{{slug}}" / "__init__.py"
    readme.write_text(readme.read_text() + marker)
    site = render_site(site_answers(0, "abc123", 8123), tmp_path / "site", template=kit)
    assert (site / "alpha" / "__init__.py").read_text().endswith(marker)
    assert provenance(kit).dirty is True


def test_state_round_trip(tmp_path: Path) -> None:
    services = state.Services(
        mode="embedded",
        postgres=state.ServiceRecord(kind="postgres", url="postgresql://x/y", pid=1),
        broker=state.ServiceRecord(kind="redis", url="redis://x"),
        s3=state.S3Record(kind="s3", url="http://x", access_key_id="k", secret_access_key="s"),
    )
    site = state.SiteRecord(
        slug="alpha", name="A", base_url="http://127.0.0.1:1", upstream_url="http://127.0.0.1:1",
        origin="http://127.0.0.1:1",
        cookie_name="alpha_session", database_url="postgresql://x/a", broker_url="redis://x",
        broker_namespace="ns", task_queue="q", dead_queue="d", s3_endpoint_url="http://x", bucket="b",
        object_prefix="p", site_dir="/s", venv_python="/v/bin/python",
    )
    state.save(tmp_path, state.SitesFile(sites=[site], services=services, run_id="r"))
    raw = msgspec.json.decode(state.sites_path(tmp_path).read_bytes())
    assert set(raw) >= {"sites", "services"}
    assert list(raw["sites"][0]) == [
        "slug", "name", "base_url", "upstream_url", "origin", "cookie_name", "database_url", "broker_url",
        "broker_namespace", "task_queue", "dead_queue", "s3_endpoint_url", "bucket", "object_prefix", "site_dir",
        "venv_python", "ca_file", "mailbox", "pids", "logs",
    ]
    assert raw["sites"][0]["pids"] == {"web": [], "worker": []}
    assert state.load(tmp_path).sites[0] == site
    assert state.sites_path(tmp_path).stat().st_mode & 0o777 == 0o600


def test_junit_results_are_counted(tmp_path: Path) -> None:
    xml = tmp_path / "r.xml"
    xml.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="a" name="ok" time="0.5"/>'
        '<testcase classname="a" name="bad" time="1"><failure message="boom"/></testcase>'
        '<testcase classname="b" name="skip" time="0"><skipped message="later"/></testcase>'
        '<testcase classname="b" name="err" time="0"><error message="setup"/></testcase>'
        "</testsuite></testsuites>"
    )
    results = report.read_junit(xml)
    assert (results.passed, results.failed, results.skipped, results.errors) == (1, 1, 1, 1)
    assert [c.outcome for c in results.cases] == ["passed", "failed", "skipped", "error"]
    assert report.read_junit(tmp_path / "missing.xml").cases == []


def test_cases_are_attributed_to_the_site_they_ran_against_first() -> None:
    cases = [
        report.Case(name="t::test_files[alpha]", outcome="passed", seconds=1.5),
        report.Case(name="t::test_isolation[alpha-bravo]", outcome="failed", seconds=2.0),
        report.Case(name="t::test_origin[bravo-http://evil.example]", outcome="passed", seconds=1.0),
        report.Case(name="t::test_fuzz_bravo", outcome="skipped", seconds=0.0),
        report.Case(name="t::test_unparametrised", outcome="passed", seconds=9.0),
    ]
    results = report.TestResults(cases=cases)
    assert report.per_site(results, "alpha") == report.SiteTests(passed=1, failed=1, skipped=0, seconds=3.5)
    assert report.per_site(results, "bravo") == report.SiteTests(passed=1, failed=0, skipped=1, seconds=1.0)
    assert report.per_site(results, "charlie") == report.SiteTests()


def test_what_a_failed_locked_block_started_is_recorded(tmp_path: Path) -> None:
    """A block under the state lock that fails after starting something (a restart that brought a
    server back, then failed to start a site) still writes the new pid back, so `down` stops it."""
    from harness.control import locked

    services = state.Services(
        mode="embedded",
        postgres=state.ServiceRecord(kind="postgres", url="postgresql://x/y", pid=1),
        broker=state.ServiceRecord(kind="redis", url="redis://x"),
        s3=state.S3Record(kind="s3", url="http://x", access_key_id="k", secret_access_key="s"),
    )
    state.save(tmp_path, state.SitesFile(sites=[], services=services, run_id="r"))
    with pytest.raises(RuntimeError), locked(tmp_path) as sites:
        sites.services.postgres = msgspec.structs.replace(sites.services.postgres, pid=2)
        raise RuntimeError("a site failed to start")
    assert state.load(tmp_path).services.postgres.pid == 2
