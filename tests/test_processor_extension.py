"""docs/processors.md's promise to a site owner: a processor of their own is new files only, and a
later `copier update` of the template merges around it with no conflict and keeps it deployed.

The template's history here is a temporary one: an earlier commit that differs from this checkout
in the files an update is most likely to touch beside the owner's (the processors package, the
registry, the shipped processor, the tasks page), and this checkout as the later commit.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness import KIT_ROOT, owner_code, processes
from harness.render import site_answers

from .test_template_update import documented_commands, shell

# Files of the template the earlier commit has differently (a line more, at their end).
TOUCHED = [
    "template/{{slug}}/processors/__init__.py",
    "template/{{slug}}/processors/text_normalize.py",
    "template/{{slug}}/tasks/registry.py",
    "template/{{slug}}/web/templates/tasks.html",
]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def template_history(root: Path) -> tuple[Path, str]:
    """A git repository of this checkout's kit (uncommitted changes included) with an earlier commit."""
    kit = root / "kit"
    shutil.copytree(KIT_ROOT, kit, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".state",
                                                                 "artifacts", ".pytest_cache", ".ruff_cache"))
    later = {path: (kit / path).read_text(encoding="utf-8") for path in TOUCHED}
    for path in TOUCHED:
        comment = "{# an earlier template #}" if path.endswith(".html") else "# an earlier template"
        (kit / path).write_text(later[path] + f"\n{comment}\n", encoding="utf-8")
    _git(kit, "init", "-q", "-b", "main")
    _git(kit, "add", "-A")
    _git(kit, "commit", "-qm", "earlier")
    earlier = _git(kit, "rev-parse", "HEAD")
    for path, text in later.items():
        (kit / path).write_text(text, encoding="utf-8")
    _git(kit, "commit", "-qam", "later")
    _git(kit, "checkout", "-q", earlier)
    return kit, earlier


@pytest.mark.slow
def test_an_owners_processor_is_new_files_only_and_survives_copier_update(tmp_path: Path) -> None:
    kit, earlier = template_history(tmp_path)
    answers = site_answers(0, secrets.token_hex(3), processes.free_port())
    slug = answers["slug"]
    site = tmp_path / "my-site"
    (tmp_path / "answers.yml").write_text(yaml.safe_dump(answers))
    copy, *_ = documented_commands(KIT_ROOT / "README.md", "## Making a site", "copier copy")
    shell(f"{copy} --defaults --data-file {tmp_path / 'answers.yml'}", kit)
    _git(site, "init", "-q")
    _git(site, "add", "-A")
    _git(site, "commit", "-qm", "rendered")

    # The owner follows docs/processors.md: new files, nothing that copier rendered is modified.
    written = owner_code.add_documented_processor(site, slug)
    assert sorted(_git(site, "status", "--porcelain", "--untracked-files=all").splitlines()) == sorted(
        f"?? {path}" for path in written)
    mine = {path: (site / path).read_text(encoding="utf-8") for path in written}

    # The template moves on; the site README's update lines, as written.
    _git(kit, "checkout", "-q", "main")
    lines = documented_commands(KIT_ROOT / "template" / "README.md.jinja", "## Update it from the template", "git add")
    for line in lines:
        if "pip install" in line:
            break
        shell(line, site)
    assert yaml.safe_load((site / ".copier-answers.yml").read_text())["_commit"] != earlier
    changed = _git(site, "status", "--porcelain", "--untracked-files=all")
    rejected = [path.name for path in site.rglob("*.rej")]
    assert rejected == [], rejected
    for path in TOUCHED:  # the template's change arrived
        rendered = site / path.removeprefix("template/").replace("{{slug}}", slug)
        assert "an earlier template" not in rendered.read_text(encoding="utf-8"), changed
    for path, text in mine.items():
        assert (site / path).read_text(encoding="utf-8") == text
        assert "<<<<<<<" not in text

    # Still deployed beside the shipped one, and its own documented test passes.
    python = processes.install_site(site, tmp_path / "venv", tmp_path / "install.log", extras="test")
    env = {**os.environ, "PYTHONPATH": ""}
    found = subprocess.run(
        [python, "-c", f"from {slug}.tasks.registry import REGISTRY; "
                        "print(' '.join(p.key for p in REGISTRY.current()))"],
        cwd=site, capture_output=True, text=True, env=env, check=False)
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.split() == ["text-normalize@1", "word-count@1"]
    tested = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_word_count.py"],
                            cwd=site, capture_output=True, text=True, env=env, check=False)
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert "3 passed" in tested.stdout.splitlines()[-1], tested.stdout[-500:]
