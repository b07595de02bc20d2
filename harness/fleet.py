"""The fleet: sites a user already runs (folders made by ``copier copy``) or answers files, loaded,
held to copier's validators and checked against each other before anything starts.

Every refusal is a ``FleetError`` of one line naming the folder or file (and, for a collision, both);
the CLI prints it and exits 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
import yaml
from copier import run_copy

from . import KIT_ROOT

ANSWERS_FILE = ".copier-answers.yml"

# The answers that name something on a shared server or machine: two sites of one fleet must not
# share any of them. Each rule: (what the message calls it, the value of a site's answers).
QUEUES = ("task_queue", "dead_queue")  # one pool: a site's dead-letter queue is no other site's task queue


class FleetError(ValueError):
    """A site folder or answers file the fleet cannot use, or two sites that collide; one line."""


class Member(msgspec.Struct):
    """One site of the fleet: where it came from and its full answers (defaults filled in by copier)."""

    label: str  # the folder or file as the user named it
    kind: str  # "site" (a generated folder) or "answers" (a file rendered from this checkout)
    path: str
    answers: dict
    template: str | None = None  # _src_path of the answers file
    commit: str | None = None  # _commit: the template version the site was rendered from


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _git(repo: Path | str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def resolve_commit(repo: Path | str, commit: str) -> str | None:
    """The full hash of ``commit`` (copier writes ``git describe`` output: a hash, or tag-N-g<hash>)."""
    candidates = [commit]
    if "-g" in commit:
        candidates.append(commit.rsplit("-g", 1)[1].removesuffix("-dirty"))
    for candidate in candidates:
        if found := _git(repo, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"):
            return found
    return None


def _is_sitekit(repo: Path | str, commit: str) -> bool:
    """The copier.yml at ``commit`` asks this kit's naming questions."""
    text = _git(repo, "show", f"{commit}:copier.yml")
    try:
        questions = yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return False
    return isinstance(questions, dict) and set(IDENTITY) <= set(questions)


def template_known(src_path: str | None, commit: str | None) -> bool:
    """This checkout's history holds ``commit``, or ``src_path`` is this checkout (a render of its
    uncommitted changes gets a commit of its own) or another sitekit checkout that holds it."""
    if not commit:
        return False
    if resolve_commit(KIT_ROOT, commit):
        return True
    if src_path and Path(src_path).resolve() == KIT_ROOT:  # rendered with uncommitted changes of this checkout
        return True
    if src_path and Path(src_path).is_dir() and (full := resolve_commit(src_path, commit)):
        return _is_sitekit(src_path, full)
    return False


def _read_answers(path: Path, label: str) -> dict:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise FleetError(f"{label}: not a valid answers file (YAML error{where}: "
                         f"{_one_line(getattr(error, 'problem', None) or error)})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FleetError(f"{label}: cannot read the answers file ({_one_line(error)})") from None
    if not isinstance(loaded, dict):
        raise FleetError(f"{label}: not a valid answers file (expected a mapping of question: answer)")
    return loaded


@cache
def _questions() -> tuple[str, ...]:
    questions = yaml.safe_load((KIT_ROOT / "copier.yml").read_text(encoding="utf-8"))
    return tuple(name for name in questions if not name.startswith("_"))


@cache
def _validating_template() -> Path:
    """This checkout's questions over an empty template: copier validates without writing a file."""
    root = Path(tempfile.mkdtemp(prefix="sitekit-questions-"))
    (root / "template").mkdir()
    shutil.copy(KIT_ROOT / "copier.yml", root / "copier.yml")
    return root


def validated(answers: dict, label: str) -> dict:
    """``answers`` as copier's validators see them (this checkout's copier.yml), defaults filled in;
    refused with copier's own message."""
    given = {name: value for name, value in answers.items() if name in _questions()}
    template = _validating_template()
    try:
        worker = run_copy(str(template), str(template / "out"), data=given, defaults=True, pretend=True,
                          quiet=True, unsafe=True)
    except Exception as error:  # copier raises ValueError and its own errors; the message is the user's answer
        raise FleetError(f"{label}: {_one_line(error)}") from None
    return {name: worker.answers.combined[name] for name in _questions() if name in worker.answers.combined}


def load_site(folder: str) -> Member:
    """A folder made by ``copier copy`` of this kit (at any commit of its history)."""
    path = Path(folder)
    if not path.is_dir():
        raise FleetError(f"{folder}: no such folder")
    answers_path = path / ANSWERS_FILE
    if not answers_path.is_file():
        raise FleetError(f"{folder}: not a generated site (no {ANSWERS_FILE})")
    raw = _read_answers(answers_path, f"{folder}/{ANSWERS_FILE}")
    src, commit = raw.get("_src_path"), raw.get("_commit")
    if not template_known(src, commit and str(commit)):
        raise FleetError(f"{folder}: rendered from an unknown template ({src or 'no _src_path'} @ "
                         f"{commit or 'no _commit'}); this kit's history does not hold it")
    refuse_link_loops(path, folder)
    answers = validated(raw, folder)
    if edited := site_toml_names(path, folder):  # the site's own names, held to the same rules again
        answers = validated({**answers, **edited}, f"{folder}/site.toml")
    return Member(label=folder, kind="site", path=str(path.resolve()), answers=answers,
                  template=str(src), commit=str(commit))


def refuse_link_loops(folder: Path, label: str) -> None:
    """The run copies what a link points at (harness/fleet_plan.py): a link to a folder that holds the
    link would make that copy endless, so it is refused here, before anything starts."""
    for parent, names, files in os.walk(folder):  # links to folders are listed, not entered
        for name in [*names, *files]:
            link = Path(parent) / name
            if link.is_symlink() and link.is_dir() and link.parent.resolve().is_relative_to(link.resolve()):
                raise FleetError(f"{label}: the link {link.relative_to(folder)} points at a folder that holds it "
                                 "(the run copies what links point at)")


def site_toml_names(folder: Path, label: str) -> dict:
    """The names the site really uses: its ``site.toml`` ``[site]`` table, which the site reads at
    start-up and its owner may have edited since ``copier copy``. Not yet validated: they become paths,
    database and bucket names, so ``load_site`` holds them to copier's rules before they are used."""
    path = folder / "site.toml"
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("site", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise FleetError(f"{label}/site.toml: not valid TOML ({_one_line(error)})") from None
    return {name: table[name] for name in IDENTITY if name in table}


def load_answers(file: str) -> Member:
    """An answers file to render from this checkout. A ``_src_path``/``_commit`` in it must be this kit's."""
    path = Path(file)
    if not path.is_file():
        raise FleetError(f"{file}: no such answers file")
    raw = _read_answers(path, file)
    src, commit = raw.get("_src_path"), raw.get("_commit")
    if (src or commit) and not template_known(src, commit and str(commit)):
        raise FleetError(f"{file}: answers of an unknown template ({src or 'no _src_path'} @ "
                         f"{commit or 'no _commit'}); this kit's history does not hold it")
    return Member(label=file, kind="answers", path=str(path.resolve()), answers=validated(raw, file),
                  template=str(src) if src else None, commit=str(commit) if commit else None)


def answers_files(paths: Iterable[str]) -> list[str]:
    """Files as given; a folder stands for the ``*.yml``/``*.yaml`` files in it (sorted)."""
    found: list[str] = []
    for given in paths:
        folder = Path(given)
        if folder.is_dir():
            files = sorted(str(p) for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
            if not files:
                raise FleetError(f"{given}: a folder without answers files (*.yml)")
            found += files
        else:
            found.append(given)
    return found


def load(sites: Iterable[str] = (), answers: Iterable[str] = ()) -> list[Member]:
    return [*(load_site(folder) for folder in sites), *(load_answers(file) for file in answers_files(answers))]


def load_paths(paths: Iterable[str]) -> list[Member]:
    """``fleet check``'s arguments: site folders, answers files, or folders of answers files."""
    members: list[Member] = []
    for given in paths:
        path = Path(given)
        if path.is_dir() and not (path / ANSWERS_FILE).exists() and any(
                p.suffix in (".yml", ".yaml") for p in path.iterdir()):
            members += load(answers=[given])
        elif path.is_dir():
            members.append(load_site(given))
        else:
            members += load(answers=[given])
    return members


# --- collisions ----------------------------------------------------------------------------


def _origin(value: str) -> str:
    parts = urlsplit(value.lower())
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{parts.hostname}:{port}"


IDENTITY = ("slug", "port", "origin", "database_name", "auth_namespace", "task_queue", "dead_queue",
            "broker_namespace", "bucket", "object_prefix")

# (what the message calls it, the shared values of a site's answers)
RULES: list[tuple[str, object]] = [
    ("slug (package and state folder)", lambda a: [a["slug"]]),
    ("database name", lambda a: [a["database_name"]]),
    ("auth namespace (cookie <namespace>_session)", lambda a: [a["auth_namespace"]]),
    ("queue", lambda a: [a[q] for q in QUEUES]),
    ("broker namespace", lambda a: [a["broker_namespace"]]),
    ("bucket + object prefix", lambda a: [f"{a['bucket']}/{a['object_prefix']}"]),
    ("port", lambda a: [str(a["port"])]),
    ("origin", lambda a: [_origin(a["origin"])]),
]


# verify stands every site up with a bucket of its own (created and dropped by the run, and listed by
# site_tests to prove objects stay in their site's bucket): there two prefixes of one bucket collide too.
RUN_RULES = [*RULES, ("bucket (a run gives each site its own)", lambda a: [a["bucket"]])]


def collisions(members: list[Member], rules: list | None = None) -> list[str]:
    """One line per shared value, naming both sites (the first that holds it and the other)."""
    found: list[str] = []
    for what, values_of in rules or RULES:
        holder: dict[str, Member] = {}
        for member in members:
            for value in dict.fromkeys(values_of(member.answers)):
                if (first := holder.setdefault(value, member)) is not member:
                    found.append(f"{first.label} and {member.label} share the {what} {value!r}")
    return found


def check(members: list[Member], run: bool = False) -> None:
    """Refuse a fleet whose sites collide: a FleetError holding one line per collision. ``run``: for
    ``verify``, which also needs a bucket per site."""
    if found := collisions(members, RUN_RULES if run else RULES):
        raise FleetError("\n".join(found))
