"""Standing a fleet up: each site's own port (or, when it is busy and ``--free-ports`` says so,
another), and its folder in the run — a copy of the user's site or a render of its answers.

The user's folder is never run or written: the harness runs a copy, in which every link is a copy of
its target (the run's edits stay in the run). In that copy the per-client
throttles are raised as in every harness run (site_tests send far more than one person does) and
the site is served on ``http://127.0.0.1:<port>`` (APP_ORIGIN); the report lists both.
"""

from __future__ import annotations

import errno
import logging
import re
import shutil
import socket
from pathlib import Path

import msgspec

from .fleet import FleetError, Member
from .processes import free_port
from .render import render_site

log = logging.getLogger(__name__)

# What every harness run answers for the throttles (harness/render.py site_answers), as site.toml keys.
THROTTLES = {
    "writes_per_minute": 2000,
    "reads_per_minute": 20000,
    "login_attempts_per_address": 10000,
    "registrations_per_address": 10000,
}

# Left behind by a site's own use (its virtualenv, `dev` data, caches): not part of the site.
NOT_COPIED = shutil.ignore_patterns(".venv", "venv", ".state", "__pycache__", "*.pyc", "*.egg-info",
                                    ".pytest_cache")


class Planned(msgspec.Struct):
    """One fleet site to stand up."""

    label: str  # the folder or answers file as the user named it
    kind: str  # "site": copy ``source``; "answers": render ``answers`` from this checkout
    source: str
    answers: dict  # as the user gave them (defaults filled in)
    template: str | None
    commit: str | None
    port: int  # where it listens in this run: its own port unless that was busy (--free-ports)
    overrides: dict = msgspec.field(default_factory=dict)  # what the run changed in its copy, and why
    update: bool = False  # --update: rehearse copier update to this checkout first (harness/rehearsal.py)

    @property
    def slug(self) -> str:
        return self.answers["slug"]


def port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            return error.errno == errno.EADDRINUSE or error.errno == errno.EACCES
    return False


def plan(members: list[Member], free_ports: bool, update: bool = False) -> list[Planned]:
    """Each site on its own port; a busy one is refused (one line) unless ``free_ports``."""
    planned: list[Planned] = []
    for member in members:
        port = int(member.answers["port"])
        overrides: dict = {}
        if port_busy(port):
            if not free_ports:
                raise FleetError(f"{member.label}: port {port} is busy on this machine "
                                 f"(free it, or pass --free-ports to run the site on another)")
            port = free_port()
            overrides["port"] = f"{member.answers['port']} was busy: {port}"
            log.warning("%s: port %s is busy on this machine; running on %s", member.label,
                        member.answers["port"], port)
        planned.append(Planned(label=member.label, kind=member.kind, source=member.path, answers=member.answers,
                               template=member.template, commit=member.commit, port=port, overrides=overrides,
                               update=update))
    return planned


def served_origin(site: Planned) -> str:
    return f"http://127.0.0.1:{site.port}"


def place(site: Planned, site_dir: Path) -> None:
    """The run's own copy of the site in ``site_dir``, ready to install."""
    if site.kind == "site":
        copy_site(site, site_dir)
    else:
        render_site(site.answers, site_dir)
    if not site.update:  # an update rehearsal raises them after `copier update`, not as an edit it must merge
        raise_throttles(site, site_dir / "site.toml")
    if served_origin(site) != site.answers["origin"]:
        site.overrides["origin"] = f"{site.answers['origin']} served as {served_origin(site)} (APP_ORIGIN)"


def copy_site(site: Planned, site_dir: Path) -> None:
    """The user's folder, links replaced by copies of what they point at: the run edits its copy
    (site.toml above all), and a link kept would carry that edit into the user's own files — a
    site.toml linked to a production config, say. A link to nothing is left out: nothing to copy."""
    try:
        shutil.copytree(site.source, site_dir, ignore=NOT_COPIED, symlinks=False, ignore_dangling_symlinks=True)
    except shutil.Error as error:  # one (source, destination, reason) per file that could not be copied
        source, _, why = error.args[0][0]
        raise FleetError(f"{site.label}: cannot copy {source} into the run ({why})") from None


def raise_throttles(site: Planned, site_toml: Path) -> None:
    text = site_toml.read_text(encoding="utf-8")
    for key, value in THROTTLES.items():
        pattern = re.compile(rf"^({key}\s*=\s*)(\d+)", re.MULTILINE)
        found = pattern.search(text)
        if found and int(found.group(2)) < value:
            site.overrides[key] = f"{found.group(2)} raised to {value}"
            text = pattern.sub(rf"\g<1>{value}", text, count=1)
    site_toml.write_text(text, encoding="utf-8")
