"""Fixtures for the kit's own tests: rendering sites from this checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import KIT_ROOT
from harness.processes import install_site
from harness.render import render_site

TEMPLATE_PACKAGE = KIT_ROOT / "template" / "{{slug}}"

# The files whose tests take minutes, longest first (a full harness run, the fleet's runs, the site's
# own suite, ...). With `--maxschedchunk=1` (pyproject) a worker is sent one test at a time and keeps
# two queued, so the order is the schedule: the longest start first, and the many quick ones fill in.
LONGEST_FIRST = ["test_harness_run.py", "test_fleet_run.py", "test_site_suite.py", "test_template_update.py",
                 "test_chaos_run.py", "test_processor_extension.py", "test_dev.py", "test_harness_scale.py",
                 "test_pages_captcha.py"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    ranked = sorted(items, key=rank)  # stable: each file's own order kept
    slow = [item for item in ranked if rank(item) < len(LONGEST_FIRST)]
    quick = [item for item in ranked if rank(item) == len(LONGEST_FIRST)]
    # The first worker queues one quick test behind the longest, so the second longest starts at once
    # on the other worker instead of waiting behind it.
    items[:] = slow[:1] + quick[:1] + slow[1:] + quick[1:]


def render(tmp_path: Path, **answers) -> Path:
    """Render the working tree (committed or not) with ``answers`` into a fresh folder."""
    destination = tmp_path / answers.get("slug", "site")
    render_site({"slug": "kitsite", **answers}, destination, vcs_ref=None)
    return destination


@pytest.fixture(scope="session")
def installed_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One rendered site installed with its test extra into its own virtualenv: (site_dir, python)."""
    root = tmp_path_factory.mktemp("installed")
    site_dir = render(root, slug="zeta9", site_name="Zeta Nine")
    python = install_site(site_dir, root / "venv", root / "install.log", extras="test")
    return site_dir, python
