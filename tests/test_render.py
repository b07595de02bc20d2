"""Rendering the template with default and unusual answers."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from harness import KIT_ROOT

from .conftest import TEMPLATE_PACKAGE, render


def python_sources(package: Path) -> dict[str, bytes]:
    return {str(p.relative_to(package)): p.read_bytes() for p in sorted(package.rglob("*.py"))}


def test_defaults_are_derived_from_the_slug(tmp_path: Path) -> None:
    site = render(tmp_path, slug="orchid")
    policy = tomllib.loads((site / "site.toml").read_text())
    assert policy["site"] == {
        "name": "Example site",
        "slug": "orchid",
        "origin": "http://127.0.0.1:8410",
        "port": 8410,
        "database_name": "orchid",
        "auth_namespace": "orchid",
        "task_queue": "orchid_tasks",
        "dead_queue": "orchid_dead",
        "broker_namespace": "orchid",
        "bucket": "orchid-files",
        "object_prefix": "orchid",
    }
    files = dict(policy["files"])
    assert "text/plain" in files.pop("allowed_types")
    assert files == {"enabled": True, "max_file_bytes": 1048576, "quota_bytes": 20971520, "ttl_hours": 168,
                     "concurrent_uploads": 8, "receive_seconds": 120, "download_seconds": 600}
    assert policy["tasks"] == {
        "enabled": True, "max_active": 5, "max_attempts": 3, "writes_per_minute": 30, "reads_per_minute": 120,
        "history_days": 90,
    }
    assert policy["charges"] == {"enabled": False, "prices": {"text-normalize@1": 0}}
    assert policy["captcha"]["provider"] == "none"
    assert (site / "orchid" / "__main__.py").exists()
    assert (site / "orchid" / "migrations" / "0001_accounts.sql").exists()
    assert not list(site.rglob("*.jinja"))
    answers = yaml.safe_load((site / ".copier-answers.yml").read_text())
    assert answers["slug"] == "orchid" and "_src_path" in answers


def test_unusual_answers(tmp_path: Path) -> None:
    site = render(
        tmp_path,
        slug="a2_b3",
        site_name="Ünïcode & Co — files",
        port=65000,
        origin="https://files.example.co.uk",
        bucket="a2.b3-bucket.example",
        object_prefix="0-prefix_x",
        task_queue="q",
        dead_queue="q_dead",
        tasks_enabled=False,
        charges_enabled=True,
        task_price=7,
        captcha_provider="turnstile",
        captcha_site_key="0x4AAAAAAA-site_key",
        max_file_bytes=10,
        quota_bytes=10,
    )
    policy = tomllib.loads((site / "site.toml").read_text())
    assert policy["site"]["name"] == "Ünïcode & Co — files"
    assert policy["site"]["origin"] == "https://files.example.co.uk"
    assert policy["site"]["bucket"] == "a2.b3-bucket.example"
    assert policy["tasks"]["enabled"] is False
    assert policy["charges"] == {"enabled": True, "prices": {"text-normalize@1": 7}}
    assert policy["captcha"] == {
        "provider": "turnstile", "site_key": "0x4AAAAAAA-site_key", "actions": ["task_submit", "task_retry"],
    }
    assert (site / "a2_b3" / "cli.py").exists()


def test_python_code_is_the_same_for_every_site(tmp_path: Path) -> None:
    """Jinja stays out of Python logic: the package is copied byte for byte."""
    one = render(tmp_path, slug="first")
    two = render(tmp_path, slug="second", site_name="Other", port=9999)
    template = python_sources(TEMPLATE_PACKAGE)
    assert python_sources(one / "first") == template
    assert python_sources(two / "second") == template


def test_rendered_policy_is_accepted_by_the_site(tmp_path: Path) -> None:
    """What copier writes, the site's own msgspec validation accepts (same rules twice)."""
    import importlib.util
    import sys

    site = render(tmp_path, slug="checked", origin="https://checked.example.com", task_price=3)
    spec = importlib.util.spec_from_file_location("checked_settings", site / "checked" / "settings.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    policy = module.load_policy(site / "site.toml")
    assert policy.site.origin == "https://checked.example.com"
    assert policy.charges.prices == {"text-normalize@1": 3}


@pytest.mark.parametrize("slug", ["zeta9", "ab"])
def test_short_and_digit_slugs_render(tmp_path: Path, slug: str) -> None:
    assert (render(tmp_path, slug=slug) / slug / "settings.py").exists()


@pytest.mark.parametrize(("folder", "slug"), [
    ("shop", "shop"), ("My-Shop.2026", "my_shop_2026"), ("9lives", "lives"), ("x", "site_x"),
    ("site", "site_site"), ("a" * 40, "a" * 31),
])
def test_copy_with_defaults_derives_the_slug_from_the_folder(tmp_path: Path, folder: str, slug: str) -> None:
    """`copier copy --defaults` asks nothing: the slug is the destination folder's name made valid."""
    copied = subprocess.run([str(Path(sys.executable).parent / "copier"), "copy", "--trust", "--defaults",
                             "--vcs-ref", "HEAD", str(KIT_ROOT), str(tmp_path / folder)],
                            capture_output=True, text=True, check=False)
    assert copied.returncode == 0, copied.stderr[-2000:]
    answers = yaml.safe_load((tmp_path / folder / ".copier-answers.yml").read_text())
    assert answers["slug"] == slug
    assert answers["database_name"] == slug and (tmp_path / folder / slug / "__main__.py").exists()
