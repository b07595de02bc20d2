"""The rendered site's own tests pass inside the rendered folder, against real services."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.mark.slow
def test_rendered_sites_own_tests_pass(installed_site: tuple[Path, str]) -> None:
    site_dir, python = installed_site
    result = subprocess.run(
        [python, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"],
        cwd=site_dir,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout
