"""Scale-out: several web processes on one port and several workers — every task runs exactly once."""

from __future__ import annotations

import hashlib
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from harness.proxy import tls_verify
from harness.state import SiteRecord, SitesFile

from . import db
from .client import SiteClient, policy
from .waiting import wait_for

TASKS = 200


def test_two_hundred_tasks_across_web_processes_run_exactly_once(site: SiteRecord, run: SitesFile) -> None:
    if run.processes.web < 2 or run.processes.worker < 2:
        pytest.skip("scale-out needs `--web-processes 2 --workers 2` or more")
    per_account = policy(site)["tasks"]["max_active"]  # so no submit meets the active limit
    accounts = []
    for n in range(-(-TASKS // per_account)):
        with SiteClient(site) as client:
            client.register()
            data = f"account {n}  \r\nline two\t".encode()
            accounts.append((client.session_token, client.upload(data)["id"], data))
    jobs = [accounts[i // per_account] for i in range(TASKS)]

    def submit(job: tuple[str, str, bytes]) -> tuple[str, bytes]:
        token, file_id, data = job
        # A new connection for every request, so the kernel spreads them over the web processes.
        with httpx.Client(base_url=site.base_url, headers={"Origin": site.origin}, verify=tls_verify(site),
                          cookies={site.cookie_name: token}, timeout=30) as fresh:
            response = fresh.post("/api/tasks", json={
                "requestKey": str(uuid.uuid4()), "processor": "text-normalize", "fileId": file_id,
                "params": {"trimTrailingWhitespace": True},
            })
        assert response.status_code == 201, response.text
        return response.json()["id"], data

    with ThreadPoolExecutor(max_workers=8) as pool:
        submitted = list(pool.map(submit, jobs))
    ids = [task_id for task_id, _ in submitted]

    def all_done() -> bool:
        return db.fetchval(site, "SELECT count(*) FROM task WHERE id = ANY($1::uuid[]) AND status = 'succeeded'",
                           ids) == TASKS

    wait_for(all_done, timeout=300, what=f"{TASKS} tasks to succeed", interval=0.5)
    attempts = db.fetch(site, "SELECT task_id, count(*) AS n FROM task_attempt WHERE task_id = ANY($1::uuid[]) "
                              "GROUP BY task_id", ids)
    assert len(attempts) == TASKS and all(row["n"] == 1 for row in attempts)
    results = db.fetch(site, "SELECT a.task_id, count(f.id) AS n FROM task_attempt a JOIN file f "
                             "ON f.id = a.result_file_id WHERE a.task_id = ANY($1::uuid[]) AND f.kind = 'result' "
                             "GROUP BY a.task_id", ids)
    assert len(results) == TASKS and all(row["n"] == 1 for row in results)
    by_task = {row["id"]: row for row in db.fetch(
        site, "SELECT t.id, f.object_key, f.sha256, t.owner_id FROM task t JOIN file f ON f.id = t.result_file_id "
              "WHERE t.id = ANY($1::uuid[])", ids)}
    tokens = {file_id: token for token, file_id, _ in accounts}
    for (task_id, data), (token, file_id, _) in zip(submitted, jobs, strict=True):
        expected = data.replace(b"\r\n", b"\n").replace(b"  \n", b"\n").removesuffix(b"\t")
        assert bytes(by_task[uuid.UUID(task_id)]["sha256"]) == hashlib.sha256(expected).digest()
        assert tokens[file_id] == token
    # Every download byte-exact, through the HTTP API as the owner sees it.
    for (task_id, data), (token, _, _) in zip(submitted, jobs, strict=True):
        with httpx.Client(base_url=site.base_url, cookies={site.cookie_name: token}, timeout=30,
                          verify=tls_verify(site)) as owner:
            result = owner.get(f"/api/tasks/{task_id}").json()["result"]
            expected = data.replace(b"\r\n", b"\n").replace(b"  \n", b"\n").removesuffix(b"\t")
            assert owner.get(f"/api/files/{result['fileId']}/content").content == expected
    # Both web processes took part.
    logs = [Path(site.logs[f"web-{i}"]).read_text() for i in range(run.processes.web)]
    assert all("POST /api/tasks" in log for log in logs), "a web process served no submit"
