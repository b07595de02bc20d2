"""A full harness run of two sites: up, site_tests, report, down — and nothing left behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import KIT_ROOT
from harness.services import embedded
from harness.verify import SERVICE_FAULTS


@pytest.mark.slow
def test_verify_two_sites(tmp_path: Path) -> None:
    state = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "harness", "verify", "--sites", "2", "--state", str(state)],
        cwd=KIT_ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]

    report = json.loads((state / "report.json").read_text())
    assert report["ok"] is True
    assert [s["slug"] for s in report["sites"]] == ["alpha", "bravo"]
    assert report["tests"]["passed"] > 0 and report["tests"]["failed"] == 0
    assert report["provenance"]["commit"] and isinstance(report["provenance"]["dirty"], bool)
    assert report["provenance"]["copier_version"]
    assert report["teardown"] == []
    # The pages ran in real Chromium against both sites (the test command requires the browser).
    pages = {c["name"]: c["outcome"] for c in report["tests"]["cases"] if ".test_pages::" in c["name"]}
    assert {name.rsplit("[", 1)[1] for name in pages} >= {"alpha]", "bravo]", "alpha-bravo]", "bravo-alpha]"}
    assert set(pages.values()) == {"passed"}, pages
    # Mail went through each site's own SMTP sink: every flow and isolation scenario ran and passed.
    mail = {c["name"]: c["outcome"] for c in report["tests"]["cases"]
            if ".test_mail::" in c["name"] or ".test_mail_pages::" in c["name"]}
    assert {name.rsplit("[", 1)[1] for name in mail} >= {"alpha]", "bravo]", "alpha-bravo]", "bravo-alpha]"}
    assert set(mail.values()) == {"passed"}, mail
    # ... and the second site asked new accounts for a proven address, so its clients followed mailed links.
    assert [s["answers"]["verify_email"] for s in report["sites"]] == [False, True]
    assert "PASS" in (state / "summary.txt").read_text()
    # On the embedded services each site holds only its own keys, and the attacker's-seat scenarios ran
    # (a shared service would have skipped them).
    assert report["privilege"] == {"database": "isolated by privilege", "broker": "isolated by privilege",
                                   "storage": "isolated by privilege"}
    privilege = {c["name"]: c["outcome"] for c in report["tests"]["cases"] if ".test_privilege::" in c["name"]}
    assert len(privilege) == 12 and set(privilege.values()) == {"passed"}, privilege
    assert "  database: isolated by privilege" in (state / "summary.txt").read_text()
    # The processor docs/processors.md has an owner add ran beside the shipped one on both sites.
    added = {c["name"]: c["outcome"] for c in report["tests"]["cases"] if ".test_processors::" in c["name"]}
    assert len(added) == 10 and set(added.values()) == {"passed"}, added
    # The fuzzer ran against each site, every operation of its operators' document (counted per site
    # and worker in <state>/fuzz/; the schema is loaded only where the site's fuzz test runs).
    fuzz = {c["name"]: c["outcome"] for c in report["tests"]["cases"] if ".test_fuzz::test_fuzz_" in c["name"]}
    assert fuzz == {f"site_tests.test_fuzz::test_fuzz_{slug}": "passed" for slug in ("alpha", "bravo")}, fuzz
    operations: dict[str, set[str]] = {}
    for counts in (state / "fuzz").glob("*.json"):
        outcomes = json.loads(counts.read_text())["outcomes"]
        operations.setdefault(counts.name.split("-")[0], set()).update(o.rsplit(" ", 1)[0] for o in outcomes)
    assert operations.keys() == {"alpha", "bravo"} and min(map(len, operations.values())) >= 25, operations
    # The short fault campaign ran on the first site, with an extra worker, and found nothing.
    chaos = report["chaos"]
    assert chaos["ok"] is True and [site["slug"] for site in chaos["sites"]] == ["alpha"]
    assert chaos["sites"][0]["tasks"] > 0 and chaos["sites"][0]["findings"] == []
    assert any(kill["at"] is not None for kill in chaos["sites"][0]["kills"])
    assert json.loads((state / "chaos.json").read_text()) == chaos
    # Then the short service-fault campaign: each server faulted once, the site recovered on its own.
    outages = report["services_chaos"]
    assert outages["ok"] is True, outages
    assert sorted(done["kind"] for done in outages["outages"]) == sorted(SERVICE_FAULTS)
    assert all(done["first_success_s"] is not None and done["drained_s"] is not None for done in outages["outages"])
    assert outages["sites"][0]["findings"] == [] and outages["sites"][0]["audit_clean"] is True
    assert json.loads((state / "chaos-services.json").read_text()) == outages

    # Everything the run started is gone: site processes and embedded servers.
    final = json.loads((state / "sites.down.json").read_text())
    pids = [p for site in final["sites"] for role in site["pids"].values() for p in role]
    pids += [final["services"][kind]["pid"] for kind in ("postgres", "broker", "s3")]
    pids += [sink["pid"] for sink in final["services"]["smtp_sinks"].values()]
    assert len(final["services"]["smtp_sinks"]) == 2
    assert pids and not [p for p in pids if embedded().pid_alive(p)]
    assert not (state / "sites.json").exists()
    assert not Path(final["services"]["postgres"]["data_dir"]).exists()
