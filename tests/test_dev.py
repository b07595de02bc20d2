"""``python -m <site> dev`` on a freshly rendered site: embedded services, a login page, a clean stop."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest

from .dev_site import dev_site


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read().decode()


@pytest.mark.slow
def test_dev_serves_login_and_ready_then_stops_everything(installed_site: tuple[Path, str], tmp_path: Path) -> None:
    site_dir, python = installed_site
    with dev_site(site_dir, python, "zeta9", tmp_path / "state") as dev:
        assert len(dev.children) >= 4  # postgres, valkey, s3, web
        status, body = _get(f"{dev.url}/login")
        assert status == 200 and 'id="auth-form"' in body
        status, body = _get(f"{dev.url}/readyz")
        assert status == 200 and '"status":"ready"' in body
        assert re.search(rf"running at http://127\.0\.0\.1:{dev.port}", dev.log.read_text())
