"""Rendering sites from this checkout with copier, and recording where they came from."""

from __future__ import annotations

import subprocess
from importlib.metadata import version
from pathlib import Path

import msgspec
from copier import run_copy

from . import KIT_ROOT

NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett"]

# Policies differ per site on purpose: a site that obeyed another site's policy would show.
MAX_ACTIVE = [5, 4, 6, 3]
# Every second site charges for tasks, so the priced path runs end to end too.
TASK_PRICE = [0, 2, 0, 3]
# The second site asks new accounts to prove their address by a mailed link before they upload, so that
# path runs end to end (and behind the proxy) too; its clients follow the link (harness/mailbox.py).
VERIFY_EMAIL = [False, True, False, False]


class Provenance(msgspec.Struct):
    template: str
    commit: str | None
    dirty: bool | None
    copier_version: str


def site_answers(index: int, run_id: str, port: int, overrides: dict | None = None) -> dict:
    """Distinct answers for site ``index`` of run ``run_id``.

    Names that live on shared servers (database, queues, namespace, bucket)
    carry the run id, so runs on the same external services never collide.
    """
    if index >= len(NAMES):
        raise ValueError(f"at most {len(NAMES)} sites per run")
    slug = NAMES[index]
    answers = {
        "site_name": f"{slug.capitalize()} Files",
        "slug": slug,
        "port": port,
        "origin": f"http://127.0.0.1:{port}",
        "database_name": f"{slug}_{run_id}",
        "auth_namespace": slug,
        "task_queue": f"{slug}_{run_id}_tasks",
        "dead_queue": f"{slug}_{run_id}_dead",
        "broker_namespace": f"{slug}_{run_id}",
        "bucket": f"{slug}-{run_id}-files",
        "object_prefix": f"{slug}-objects",
        "max_active": MAX_ACTIVE[index % len(MAX_ACTIVE)],
        "charges_enabled": TASK_PRICE[index % len(TASK_PRICE)] > 0,
        "task_price": TASK_PRICE[index % len(TASK_PRICE)],
        "verify_email": VERIFY_EMAIL[index % len(VERIFY_EMAIL)],
        # The harness's scenarios submit and poll far more than one person does;
        # the rate-limit scenario reaches the limit by advancing the counter itself.
        "writes_per_minute": 2000,
        "reads_per_minute": 20000,
        # every client of a run is 127.0.0.1, and the fuzzer tries logins (and registrations) too
        "login_attempts_per_address": 10000,
        "registrations_per_address": 10000,
    }
    answers.update(overrides or {})
    return answers


def render_site(answers: dict, destination: Path, template: Path = KIT_ROOT, vcs_ref: str | None = "HEAD") -> Path:
    """Render one site. From a git checkout copier uses HEAD plus any uncommitted changes."""
    run_copy(
        str(template),
        str(destination),
        data=answers,
        defaults=True,
        overwrite=True,
        unsafe=True,
        quiet=True,
        vcs_ref=vcs_ref if (template / ".git").exists() else None,
    )
    return destination


def _git(template: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(template), *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout.strip()


def provenance(template: Path = KIT_ROOT) -> Provenance:
    """What was rendered, honestly: the commit, and whether uncommitted changes went in too."""
    commit = _git(template, "rev-parse", "HEAD")
    status = _git(template, "status", "--porcelain", "--untracked-files=normal")
    return Provenance(
        template=str(template),
        commit=commit,
        dirty=None if status is None else bool(status),
        copier_version=version("copier"),
    )
