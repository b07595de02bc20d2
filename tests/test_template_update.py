"""`copier update` of a site rendered from an older commit of this template: answers kept, new
migrations applied by `migrate`, existing data and results intact, new code running."""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import yaml

from harness import KIT_ROOT, processes, services
from harness.render import site_answers
from harness.services import embedded

PASSWORD = "update test password"
LATER_MIGRATION = "template/{{slug}}/migrations/0007_task_charges.sql"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def older_template_commit() -> str:
    """The template as it was just before the charges migration (0007) was added."""
    added = _git(KIT_ROOT, "log", "--format=%H", "--diff-filter=A", "-1", "--", LATER_MIGRATION)
    if not added:
        pytest.fail("this checkout has no git history of the template (clone it with history)")
    return _git(KIT_ROOT, "rev-parse", f"{added}^")


class RunningSite:
    """The site's web and worker processes, started from its virtualenv and stopped by pid."""

    def __init__(self, site: Path, python: str, slug: str, env: dict[str, str], port: int, logs: Path) -> None:
        self.site, self.python, self.slug, self.env, self.port, self.logs = site, python, slug, env, port, logs
        self.pids: list[int] = []

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return processes.run_site_command(self.python, self.slug, list(args), self.env, str(self.site))

    def start(self) -> None:
        web_log, worker_log = self.logs / "web.log", self.logs / "worker.log"
        offset = worker_log.stat().st_size if worker_log.exists() else 0
        self.pids.append(processes.start_site_process(self.python, self.slug, ["serve", "--port", str(self.port)],
                                                      self.env, str(self.site), web_log))
        processes.wait_ready(f"http://127.0.0.1:{self.port}/readyz", self.pids[-1], web_log)
        self.pids.append(processes.start_site_process(self.python, self.slug, ["worker"], self.env, str(self.site),
                                                      worker_log))
        processes.wait_logged(worker_log, offset, "worker consuming", self.pids[-1])

    def stop(self) -> None:
        for pid in self.pids:
            processes.stop_site_process(pid, self.python)
        self.pids.clear()


def wait_finished(client: httpx.Client, task_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while (task := client.get(f"/api/tasks/{task_id}").json())["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, f"task still {task['status']}"
        time.sleep(0.1)
    return task


def documented_commands(readme: Path, heading: str, containing: str) -> list[str]:
    """The shell lines of the first code block under ``heading`` in ``readme`` from the first line that
    contains ``containing`` on, as a user would copy them (comments dropped)."""
    text = readme.read_text()
    section = text[text.index(heading):]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    lines = [line for line in lines if line]
    first = next(i for i, line in enumerate(lines) if containing in line)
    return lines[first:]


def shell(line: str, cwd: Path) -> None:
    """One documented line, run by bash in ``cwd`` with this kit's copier as ``.venv/bin/copier``."""
    line = line.replace(".venv/bin/copier", str(Path(sys.executable).parent / "copier"))
    done = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


@pytest.mark.slow
def test_a_site_from_an_older_commit_updates_in_place(tmp_path: Path) -> None:
    old = older_template_commit()
    run = services.provision(tmp_path / "services")
    port = processes.free_port()
    answers = site_answers(0, secrets.token_hex(3), port)
    # The kit as a user cloned it back then; the site made by README's command, answered by a data file.
    kit = tmp_path / "kit"
    _git(tmp_path, "clone", "-q", "--no-checkout", str(KIT_ROOT), str(kit))
    _git(kit, "checkout", "-q", "-B", "main", old)
    site_dir = tmp_path / "my-site"
    (tmp_path / "answers.yml").write_text(yaml.safe_dump(answers))
    copy, *commit = documented_commands(KIT_ROOT / "README.md", "## Making a site", "copier copy")
    assert copy.endswith(" ../my-site"), copy
    running: RunningSite | None = None
    try:
        shell(f"{copy} --defaults --data-file {tmp_path / 'answers.yml'}", kit)
        for line in commit:
            if "git" not in line:
                break
            shell(line.replace("cd ../my-site && ", ""), site_dir)
        assert _git(site_dir, "status", "--porcelain") == ""
        assert not (site_dir / answers["slug"] / "migrations" / "0007_task_charges.sql").exists()

        database_url = services.create_site_resources(run, answers["database_name"], answers["bucket"])
        python = processes.install_site(site_dir, tmp_path / "venv", tmp_path / "install.log")
        env = processes.process_env({
            "DATABASE_URL": database_url, "BROKER_URL": run.broker.url, "S3_ENDPOINT_URL": run.s3.url,
            "S3_ACCESS_KEY_ID": run.s3.access_key_id, "S3_SECRET_ACCESS_KEY": run.s3.secret_access_key,
            "SECRET_KEY": secrets.token_urlsafe(40), "APP_ORIGIN": answers["origin"],
        })
        running = RunningSite(site_dir, python, answers["slug"], env, port, tmp_path / "logs")
        assert running.cli("migrate").returncode == 0

        # Data made by the old code: an account, a file and a finished task with its result.
        running.start()
        source = b"kept  \r\nacross the update"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Origin": answers["origin"]},
                          timeout=30) as client:
            account = client.post("/api/auth/register",
                                  json={"email": "keeper@example.com", "password": PASSWORD}).json()
            file = client.post("/api/files", params={"name": "in.txt"}, content=source,
                               headers={"Content-Type": "text/plain"}).json()
            before = client.post("/api/tasks", json={"requestKey": str(uuid.uuid4()), "processor": "text-normalize",
                                                     "fileId": file["id"],
                                                     "params": {"trimTrailingWhitespace": True}}).json()
            before = wait_finished(client, before["id"])
            assert before["status"] == "succeeded"
            old_result = client.get(f"/api/files/{before['result']['fileId']}/content").content
        running.stop()

        # The update: answers kept, new files in, nothing of the site's own lost.
        # The kit pulled to today's commit (this checkout's HEAD), then the site README's update lines.
        old_answers = yaml.safe_load((site_dir / ".copier-answers.yml").read_text())
        (site_dir / "OWNER.md").write_text("the owner's own file\n")  # work of the owner's, committed by the lines
        _git(kit, "fetch", "-q", str(KIT_ROOT), "HEAD")
        _git(kit, "checkout", "-q", "-B", "main", "FETCH_HEAD")
        for line in documented_commands(KIT_ROOT / "template" / "README.md.jinja", "## Update it from the template",
                                        "git add"):
            if "pip install" in line:
                break
            shell(line, site_dir)
        new_answers = yaml.safe_load((site_dir / ".copier-answers.yml").read_text())
        assert {k: v for k, v in new_answers.items() if k in old_answers and not k.startswith("_")} == {
            k: v for k, v in old_answers.items() if not k.startswith("_")
        }
        assert new_answers["_commit"] != old_answers["_commit"]
        assert (site_dir / "OWNER.md").read_text() == "the owner's own file\n"
        assert "<<<<<<<" not in (site_dir / "site.toml").read_text()
        assert (site_dir / answers["slug"] / "migrations" / "0007_task_charges.sql").exists()

        processes.install_site(site_dir, tmp_path / "venv", tmp_path / "install.log")
        migrated = running.cli("migrate")
        assert migrated.returncode == 0, migrated.stderr
        assert "0007_task_charges.sql" in migrated.stdout

        running.start()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Origin": answers["origin"]},
                          timeout=30) as client:
            login = client.post("/api/auth/login", json={"email": "keeper@example.com", "password": PASSWORD})
            assert login.status_code == 200 and login.json()["id"] == account["id"]
            after_update = client.get(f"/api/tasks/{before['id']}").json()
            assert after_update["status"] == "succeeded" and after_update["chargeStatus"] == "free"
            # what the old version said of the result is said alike (newer versions may say more)
            assert {key: after_update["result"][key] for key in before["result"]} == before["result"]
            download = client.get(f"/api/files/{before['result']['fileId']}/content").content
            assert download == old_result == b"kept\nacross the update"
            assert hashlib.sha256(download).hexdigest() == before["result"]["sha256"]
            new = client.post("/api/tasks", json={"requestKey": str(uuid.uuid4()), "processor": "text-normalize",
                                                  "fileId": file["id"], "params": {"trimTrailingWhitespace": False}})
            assert new.status_code == 201, new.text
            assert wait_finished(client, new.json()["id"])["status"] == "succeeded"
            assert client.get("/api/credits").status_code == 200  # a feature the old site did not have
    finally:
        if running is not None:
            running.stop()
        services.stop_services(run)
        embedded().remove_state(Path(run.postgres.data_dir))
