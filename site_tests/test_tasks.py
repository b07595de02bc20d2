"""Tasks over real HTTP on every live site, with its real worker, broker and storage."""

from __future__ import annotations

import hashlib
import uuid
from concurrent.futures import ThreadPoolExecutor

from harness.state import SiteRecord

from . import db, faults
from .client import SiteClient, error_code, policy
from .operator import maintain
from .waiting import wait_for, wait_task


def body(file_id: str, trim: bool = False, key: str | None = None) -> dict:
    return {"requestKey": key or str(uuid.uuid4()), "processor": "text-normalize", "fileId": file_id,
            "params": {"trimTrailingWhitespace": trim}}


def test_submit_runs_to_success_and_the_result_downloads_exactly(user: SiteClient) -> None:
    source = b"first line  \r\nsecond\t\rthird"
    file = user.upload(source)
    response = user.post("/api/tasks", json=body(file["id"], trim=True))
    assert response.status_code == 201, response.text
    task = wait_task(user, response.json()["id"], {"succeeded", "failed"})
    assert task["status"] == "succeeded", task
    expected = b"first line\nsecond\nthird"
    assert task["result"]["size"] == len(expected)
    assert task["result"]["sha256"] == hashlib.sha256(expected).hexdigest()
    assert task["attempts"] == {"used": 1, "max": policy(user.site)["tasks"]["max_attempts"]}
    download = user.get(f"/api/files/{task['result']['fileId']}/content")
    assert download.content == expected
    assert download.headers["x-content-type-options"] == "nosniff"
    assert download.headers["cache-control"] == "private, no-store"
    assert "attachment" in download.headers["content-disposition"]


def test_blank_input_gives_a_zero_byte_result_that_downloads(user: SiteClient) -> None:
    file = user.upload(b"  \t  ")
    task = wait_task(user, user.post("/api/tasks", json=body(file["id"], trim=True)).json()["id"],
                     {"succeeded", "failed"})
    assert task["status"] == "succeeded" and task["result"]["size"] == 0
    download = user.get(f"/api/files/{task['result']['fileId']}/content")
    assert download.status_code == 200 and download.content == b""


def test_idempotent_resubmit_and_conflict(user: SiteClient, site: SiteRecord) -> None:
    file = user.upload(b"once")
    request = body(file["id"])
    first = user.post("/api/tasks", json=request)
    assert first.status_code == 201
    wait_task(user, first.json()["id"], {"succeeded"})
    again = user.post("/api/tasks", json=request)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert again.json()["status"] == "succeeded"
    conflict = user.post("/api/tasks", json={**request, "params": {"trimTrailingWhitespace": True}})
    assert conflict.status_code == 409 and error_code(conflict) == "REQUEST_CONFLICT"
    assert db.fetchval(site, "SELECT count(*) FROM task WHERE owner_id = $1", user.account["id"]) == 1
    assert db.fetchval(site, "SELECT attempt_count FROM task WHERE id = $1", first.json()["id"]) == 1


def test_active_limit_under_concurrent_submits(user: SiteClient, site: SiteRecord) -> None:
    limit = policy(site)["tasks"]["max_active"]
    file = user.upload(b"x")
    with faults.refuse_claims(site, user.account["id"]):  # keep every accepted task active
        with ThreadPoolExecutor(max_workers=12) as pool:
            responses = list(pool.map(lambda _: user.post("/api/tasks", json=body(file["id"])), range(24)))
        codes = [r.status_code for r in responses]
        assert codes.count(201) == limit, codes
        assert {error_code(r) for r in responses if r.status_code != 201} == {"ACTIVE_LIMIT"}
        active = db.fetchval(site, "SELECT count(*) FROM task WHERE owner_id = $1 AND task_is_active(status)",
                             user.account["id"])
        assert active == limit
        for r in responses:
            if r.status_code == 201:
                user.post(f"/api/tasks/{r.json()['id']}/cancel")


def test_cancel_waiting_then_running(user: SiteClient, site: SiteRecord) -> None:
    file = user.upload(b"cancel me")
    with faults.refuse_claims(site, user.account["id"]):
        waiting = user.post("/api/tasks", json=body(file["id"])).json()
        canceled = user.post(f"/api/tasks/{waiting['id']}/cancel").json()
        assert canceled["status"] == "canceled" and canceled["finishedAt"]
    assert db.fetchval(site, "SELECT count(*) FROM task_input_pin WHERE task_id = $1", waiting["id"]) == 0

    with faults.refuse_publish(site, user.account["id"]) as fault:
        running = user.post("/api/tasks", json=body(file["id"])).json()
        wait_task(user, running["id"], {"running"})
        wait_for(lambda: fault.hits() >= 1, what="the executor to reach publish")
        requested = user.post(f"/api/tasks/{running['id']}/cancel").json()
        assert requested["status"] == "running" and requested["cancelRequested"] is True
        assert user.delete(f"/api/files/{file['id']}").status_code == 409  # still pinned while running
    # The executor lost the task; once its lease is over, maintenance settles the requested cancel.
    db.execute(site, "UPDATE task SET lease_expires_at = now() - interval '1 s' WHERE id = $1", running["id"])
    maintain(site)
    done = user.get(f"/api/tasks/{running['id']}").json()
    assert done["status"] == "canceled" and done["result"] is None
    assert user.delete(f"/api/files/{file['id']}").status_code == 204


def test_list_pages_with_equal_timestamps(user: SiteClient, site: SiteRecord) -> None:
    file = user.upload(b"x")
    with faults.refuse_claims(site, user.account["id"]):
        created = []
        for _ in range(policy(site)["tasks"]["max_active"]):
            created.append(user.post("/api/tasks", json=body(file["id"])).json()["id"])
        for task_id in created:
            user.post(f"/api/tasks/{task_id}/cancel")
    # 40 more finished tasks, all with one timestamp: the keyset must neither skip nor repeat.
    db.execute(
        site,
        """
        INSERT INTO task (id, owner_id, request_key, request_fingerprint, processor, processor_version,
                          input_file_id, input_name, input_size, input_sha256, params, max_attempts,
                          status, finished_at, created_at)
        SELECT gen_random_uuid(), $1, gen_random_uuid(), sha256(g::text::bytea), 'text-normalize', 1,
               $2, 'x.txt', 1, sha256('x'), '{"trimTrailingWhitespace": false}', 3,
               'canceled', now(), '2031-01-01T00:00:00Z'
        FROM generate_series(1, 40) g
        """,
        user.account["id"], file["id"],
    )
    db.execute(site, "UPDATE task SET created_at = '2031-01-01T00:00:00Z' WHERE owner_id = $1", user.account["id"])
    seen, cursor = [], None
    while True:
        page = user.get("/api/tasks", params={"cursor": cursor} if cursor else {}).json()
        assert len(page["items"]) <= 20
        seen += [t["id"] for t in page["items"]]
        if (cursor := page["nextCursor"]) is None:
            break
    total = 40 + len(created)
    assert len(seen) == len(set(seen)) == total


def test_another_accounts_task_is_404(site: SiteRecord) -> None:
    with SiteClient(site) as owner, SiteClient(site) as stranger:
        owner.register()
        stranger.register()
        task = owner.post("/api/tasks", json=body(owner.upload(b"x")["id"])).json()
        for method, suffix in (("GET", ""), ("POST", "/cancel"), ("POST", "/retry")):
            response = stranger.request(method, f"/api/tasks/{task['id']}{suffix}")
            assert response.status_code == 404 and error_code(response) == "NOT_FOUND", suffix
        assert wait_task(owner, task["id"], {"succeeded"})["cancelRequested"] is False


def test_another_sites_task_is_404(pair: tuple[SiteRecord, SiteRecord]) -> None:
    a, b = pair
    with SiteClient(a) as on_a, SiteClient(b) as on_b:
        on_a.register()
        on_b.register()
        task = on_a.post("/api/tasks", json=body(on_a.upload(b"x")["id"])).json()
        for method, suffix in (("GET", ""), ("POST", "/cancel"), ("POST", "/retry")):
            assert on_b.request(method, f"/api/tasks/{task['id']}{suffix}").status_code == 404, suffix
        assert wait_task(on_a, task["id"], {"succeeded"})["status"] == "succeeded"
    assert db.fetchval(b, "SELECT count(*) FROM task WHERE id = $1", task["id"]) == 0
