"""Fixtures for the kit's own tests: rendering sites from this checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import KIT_ROOT
from harness.processes import install_site
from harness.render import render_site

TEMPLATE_PACKAGE = KIT_ROOT / "template" / "{{slug}}"


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
