"""Running a site's own command line, as its operator (or cron) would."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness import state
from harness.state import SiteRecord


def run_cli(site: SiteRecord, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    state_dir = Path(site.site_dir).parent.parent.parent
    env = state.load_site_env(state_dir, site.slug)
    return subprocess.run([site.venv_python, "-m", site.slug, *args], env=env, cwd=site.site_dir,
                          capture_output=True, text=True, timeout=timeout, check=False)


def maintain(site: SiteRecord) -> dict[str, int]:
    """One maintenance run; its per-step counts."""
    result = run_cli(site, "maintain")
    assert result.returncode == 0, result.stdout + result.stderr
    return {name: int(count) for name, count in (part.rsplit(": ", 1) for part in result.stdout.strip().split(", "))}
