"""``verify``: up, run site_tests against the live sites, write the report, down."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from . import KIT_ROOT, report, stand
from .render import provenance

log = logging.getLogger(__name__)


def run_site_tests(state_dir: Path, workers: int | str, extra: list[str] | None = None) -> int:
    argv = [
        sys.executable, "-m", "pytest", str(KIT_ROOT / "site_tests"),
        "-n", str(workers),
        "--junitxml", str(state_dir / "site_tests.xml"),
        "-p", "no:cacheprovider",
        "-q", "-rfE",
        *(extra or []),
    ]
    env = {**os.environ, "SITEKIT_STATE": str(state_dir)}
    return subprocess.run(argv, env=env, cwd=KIT_ROOT, check=False).returncode


def verify(state_dir: Path, count: int, *, keep: bool, workers: int | str, pytest_args: list[str] | None = None,
           overrides: dict | None = None) -> tuple[bool, str]:
    state_dir = Path(state_dir).resolve()
    started_at = report.now()
    origin = provenance()
    failure: str | None = None
    teardown: list[str] = []
    tests_rc = 1
    services_mode = "?"
    try:
        sites = stand.up(state_dir, count, overrides)
        services_mode = sites.services.mode
        tests_rc = run_site_tests(state_dir, workers, pytest_args)
    except Exception as error:  # noqa: BLE001 - the report must be written whatever happened
        failure = f"{type(error).__name__}: {error}"
        log.error("run failed: %s", failure)
    finally:
        if not keep and (state_dir / "sites.json").exists():
            teardown = stand.down(state_dir)
    results = report.read_junit(state_dir / "site_tests.xml")
    ok = failure is None and tests_rc == 0 and results.failed == 0 and results.errors == 0 and not teardown
    if ok and results.passed == 0:
        ok, failure = False, "no site test ran"
    built = report.build(ok=ok, started_at=started_at, provenance=origin, services_mode=services_mode,
                         info=stand.load_run_info(state_dir), tests=results, teardown=teardown, failure=failure)
    return ok, report.write(state_dir, built)
