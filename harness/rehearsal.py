"""``verify --update``: an upgrade rehearsal on the run's copy of each site.

The old site runs first (its own code, freshly migrated), and gets an account, a file and a finished
task; then it stops, ``copier update`` brings the copy to this checkout (answers kept, conflicts kept
as ``*.rej`` and reported), the site is reinstalled and migrated on the same database, and the run
goes on. After the scenarios, ``check`` reads the old data back through the new code: the same
account signs in, the task kept its result, both files download byte-exact, the history lists it.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path

import httpx
import msgspec
import yaml
from copier._main import Worker  # run_update() cannot name the template to update to; its Worker can

from . import KIT_ROOT, processes, state
from .bench.accounts import register_funded, upload_text
from .fleet import resolve_commit
from .fleet_plan import Planned, raise_throttles
from .render import provenance

PASSWORD = "rehearsal password 1"
SOURCE = b"made by the old version  \r\nof this site\n"
# copier changes the process's working directory while it updates: one update at a time
COPIER = threading.Lock()


class RehearsalError(RuntimeError):
    """The old site could not be run, given its data or updated; the message names the site and step."""


class OldData(msgspec.Struct):
    """What the old version left behind, to be found again after the update."""

    email: str
    account_id: str
    file_id: str
    file_sha256: str
    task_id: str
    result: dict


class Outcome(msgspec.Struct):
    """One site's rehearsal, for the report."""

    from_commit: str
    to_commit: str = ""
    conflicts: list[str] = msgspec.field(default_factory=list)  # *.rej files copier left
    migrations: list[str] = msgspec.field(default_factory=list)  # applied by the new version's migrate
    old_data: OldData | None = None
    problems: list[str] = msgspec.field(default_factory=list)  # old data not found intact after the run
    checked: bool = False

    @property
    def ok(self) -> bool:
        return self.checked and not self.conflicts and not self.problems


def path(state_dir: Path, slug: str) -> Path:
    return state.site_folder(state_dir, slug) / "rehearsal.json"


def save(state_dir: Path, slug: str, outcome: Outcome) -> None:
    path(state_dir, slug).write_bytes(msgspec.json.format(msgspec.json.encode(outcome), indent=2))


def load(state_dir: Path, slug: str) -> Outcome | None:
    found = path(state_dir, slug)
    return msgspec.json.decode(found.read_bytes(), type=Outcome) if found.exists() else None


def _git(site_dir: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(site_dir), "-c", "user.name=sitekit harness",
                           "-c", "user.email=harness@sitekit.invalid", *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RehearsalError(f"{site_dir}: git {args[0]} failed: {done.stderr.strip()[-200:]}")
    return done.stdout.strip()


async def _wait_finished(client: httpx.AsyncClient, task_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while (task := (await client.get(f"/api/tasks/{task_id}")).json())["status"] not in ("succeeded", "failed"):
        if time.monotonic() > deadline:
            raise RehearsalError(f"task {task_id} still {task['status']} after {timeout:.0f}s")
        await asyncio.sleep(0.5)  # the old version's default read limit is low (120 a minute)
    return task


def _client(base_url: str, origin: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"Origin": origin}, timeout=30)


async def make_old_data(site: state.SiteRecord) -> OldData:
    """An account, a file and a finished task, made through the old version's API as its users make
    them (``register_funded``: where it asks new accounts to prove their address, the link it mailed is
    followed; where it charges for tasks, the account is granted credits first)."""
    email = f"rehearsal-{site.slug}@example.com"
    async with httpx.AsyncClient(base_url=site.upstream_url, headers={"Origin": site.origin}, timeout=30) as client:
        account_id = await register_funded(client, site, email, PASSWORD, error=RehearsalError)
        file_id = await upload_text(client, site, "old.txt", SOURCE, error=RehearsalError)
        task = await client.post("/api/tasks", json={"requestKey": str(uuid.uuid4()), "processor": "text-normalize",
                                                     "fileId": file_id, "params": {"trimTrailingWhitespace": True}})
        if task.status_code != 201:
            raise RehearsalError(f"submit answered {task.status_code}: {task.text[:200]}")
        finished = await _wait_finished(client, task.json()["id"])
        if finished["status"] != "succeeded":
            raise RehearsalError(f"the old version's task ended {finished['status']}")
    return OldData(email=email, account_id=account_id, file_id=file_id,
                   file_sha256=hashlib.sha256(SOURCE).hexdigest(), task_id=finished["id"],
                   result=finished["result"])


def run_old(site: state.SiteRecord, env: dict[str, str], logs: Path) -> OldData:
    """The old version's web and worker (plain commands every version has), its data, then both stopped."""
    python, port = site.venv_python, site.upstream_url.rsplit(":", 1)[1]
    pids: list[int] = []
    try:
        web_log, worker_log = logs / "old-web.log", logs / "old-worker.log"
        pids.append(processes.start_site_process(python, site.slug, ["serve", "--port", port], env, site.site_dir,
                                                 web_log))
        processes.wait_ready(f"{site.upstream_url}/readyz", pids[-1], web_log)
        pids.append(processes.start_site_process(python, site.slug, ["worker"], env, site.site_dir, worker_log))
        processes.wait_logged(worker_log, 0, "worker consuming", pids[-1])
        return asyncio.run(make_old_data(site))
    finally:
        for pid in pids:
            processes.stop_site_process(pid, python)


def update(site_dir: Path) -> tuple[str, list[str]]:
    """``copier update`` of the run's copy to this checkout; returns the new ``_commit`` and the conflicts."""
    if not (site_dir / ".git").exists():
        _git(site_dir, "init", "-q")
    _git(site_dir, "add", "-A")
    if _git(site_dir, "status", "--porcelain"):  # the site as found (and the run's throttles): one commit
        _git(site_dir, "commit", "-qm", "the site as the harness found it")
    with COPIER:
        Worker(dst_path=site_dir, src_path=str(KIT_ROOT), vcs_ref="HEAD", defaults=True, overwrite=True,
               unsafe=True, quiet=True, conflict="rej").run_update()
    answers = yaml.safe_load((site_dir / ".copier-answers.yml").read_text(encoding="utf-8"))
    conflicts = sorted(str(p.relative_to(site_dir)) for p in site_dir.rglob("*.rej") if ".git" not in p.parts)
    return to_commit(str(answers.get("_commit"))), conflicts


def to_commit(written: str) -> str:
    """The version updated to, as this checkout names it: copier writes a commit of its own for a
    working tree with uncommitted changes."""
    if resolve_commit(KIT_ROOT, written):
        return written
    head = provenance()
    return f"{(head.commit or '?')[:7]} + uncommitted changes"


def rehearse(state_dir: Path, site: Planned, record: state.SiteRecord, env: dict[str, str]) -> Outcome:
    """The old version run and given data, then updated, reinstalled and migrated (new migrations listed)."""
    slug, python, site_dir = site.slug, record.venv_python, Path(record.site_dir)
    outcome = Outcome(from_commit=site.commit or "?")
    logs = state.site_folder(state_dir, slug) / "logs"
    try:
        outcome.old_data = run_old(record, env, logs)
    except RehearsalError as error:
        raise RehearsalError(f"{slug}: the old version: {error}") from None
    try:
        outcome.to_commit, outcome.conflicts = update(site_dir)
    except RehearsalError as error:
        raise RehearsalError(f"{slug}: {error}") from None
    except Exception as error:  # copier's own errors: the message is what the user would see
        raise RehearsalError(f"{slug}: copier update failed: {' '.join(str(error).split())[:300]}") from None
    raise_throttles(site, site_dir / "site.toml")
    processes.install_site(site_dir, Path(python).parent.parent, logs / "install.log")
    migrated = processes.run_site_command(python, slug, ["migrate"], env, str(site_dir))
    if migrated.returncode != 0:
        raise RehearsalError(f"{slug}: migrate after the update failed: {migrated.stderr.strip()[-300:]}")
    outcome.migrations = re.findall(r"\b\d{4}_\w+\.sql\b", migrated.stdout)  # "applied 2 migration(s): a.sql, b.sql"
    save(state_dir, slug, outcome)
    return outcome


def check(state_dir: Path, record: state.SiteRecord) -> Outcome | None:
    """The old version's data read back through the running new version; problems recorded."""
    outcome = load(state_dir, record.slug)
    if outcome is None or outcome.old_data is None:
        return outcome
    old, problems = outcome.old_data, []
    try:
        with _client(record.base_url, record.origin) as client:
            login = client.post("/api/auth/login", json={"email": old.email, "password": PASSWORD})
            if login.status_code != 200 or login.json().get("id") != old.account_id:
                problems.append(f"the old account no longer signs in ({login.status_code})")
            task = client.get(f"/api/tasks/{old.task_id}").json()
            kept = {key: (task.get("result") or {}).get(key) for key in old.result}  # new fields may be added
            if task.get("status") != "succeeded" or kept != old.result:
                problems.append(f"the finished task changed: {task.get('status')}, result {task.get('result')}")
            source = client.get(f"/api/files/{old.file_id}/content")
            if hashlib.sha256(source.content).hexdigest() != old.file_sha256:
                problems.append(f"the old upload does not download byte-exact ({source.status_code})")
            result = client.get(f"/api/files/{old.result['fileId']}/content")
            if hashlib.sha256(result.content).hexdigest() != old.result.get("sha256"):
                problems.append(f"the old result does not download byte-exact ({result.status_code})")
            listed = client.get("/api/tasks")
            items = listed.json().get("items", []) if listed.status_code == 200 else []
            if old.task_id not in {item.get("id") for item in items}:
                problems.append(f"the task history lost the old task ({listed.status_code})")
    except (httpx.HTTPError, ValueError) as error:
        problems.append(f"reading the old data failed: {type(error).__name__}: {error}")
    outcome.problems, outcome.checked = problems, True
    save(state_dir, record.slug, outcome)
    return outcome
