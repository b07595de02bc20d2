"""The kit's code and a rendered site's code pass ruff with the kit's configuration."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import KIT_ROOT

from .conftest import render


def ruff(*paths: Path, first_party: Path = KIT_ROOT) -> subprocess.CompletedProcess:
    binary = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if binary is None:
        pytest.fail("ruff is not installed (it is in the kit's dev extra; `python3 kit.py test` installs it)")
    return subprocess.run(
        [binary, "check", "--no-cache", "--config", str(KIT_ROOT / "pyproject.toml"),
         "--config", f"src = ['{first_party}']", *map(str, paths)],
        capture_output=True, text=True, check=False,
    )


def test_kit_code_is_clean() -> None:
    result = ruff(KIT_ROOT / "harness", KIT_ROOT / "site_tests", KIT_ROOT / "tests", KIT_ROOT / "kit.py")
    assert result.returncode == 0, result.stdout[-4000:]


def test_rendered_site_code_is_clean(tmp_path: Path) -> None:
    site = render(tmp_path, slug="linted")
    result = ruff(site / "linted", site / "tests", first_party=site)
    assert result.returncode == 0, result.stdout[-4000:]
