"""Recovery scenarios with real processes and faults injected from outside the site's code."""

from __future__ import annotations

import itertools
import time

import pytest

from harness import control
from harness.state import SiteRecord, SitesFile

from . import broker, db, faults
from .client import SiteClient, error_code, policy
from .operator import maintain, run_cli
from .test_tasks import body
from .waiting import wait_for, wait_task

REDELIVERY_SECONDS = 10


def test_dead_letter_then_manual_retry(user: SiteClient, site: SiteRecord, run: SitesFile) -> None:
    """Claims refused: the first delivery and Dramatiq's three redeliveries 10 s apart, one receipt,
    the task failed / DELIVERY_EXHAUSTED, no more deliveries; the fault removed, an HTTP retry succeeds."""
    source = b"dead \r\nletter\t"
    file = user.upload(source)
    with faults.refuse_claims(site, user.account["id"]) as fault:
        task = user.post("/api/tasks", json=body(file["id"], trim=True)).json()
        seen: list[float] = []

        def delivered_four_times() -> bool:
            hits = fault.hits()
            while len(seen) < hits:
                seen.append(time.monotonic())
            return hits >= 4

        wait_for(delivered_four_times, timeout=90, what="four refused deliveries", interval=0.05)
        gaps = [later - earlier for earlier, later in itertools.pairwise(seen)]
        assert all(REDELIVERY_SECONDS - 1.5 <= gap <= REDELIVERY_SECONDS + 5 for gap in gaps), gaps

        failed = wait_task(user, task["id"], {"failed"}, timeout=60)
        assert failed["errorCode"] == "DELIVERY_EXHAUSTED"
        assert failed["deadLetteredAt"] is not None and failed["retryable"] is True
        assert failed["attempts"]["used"] == 0  # deliveries that never ran spend no budget
        receipts = db.fetch(site, "SELECT queue_name, classification, dispatch_version FROM task_dead_letter "
                                  "WHERE task_id = $1", task["id"])
        assert [(r["queue_name"], r["classification"]) for r in receipts] == [(site.task_queue, "applied")]
        assert db.fetchval(site, "SELECT count(*) FROM task_input_pin WHERE task_id = $1", task["id"]) == 0
        # No queue names, message ids or versions reach the owner.
        assert "queue" not in str(failed).lower() and "dispatch" not in str(failed).lower()

        # Exhausted means exhausted: no message for it is left on the broker, maintenance does not
        # re-send it, and the fault saw no further delivery.
        assert broker.queues_holding(run, task["id"]) == set()
        assert maintain(site)["re-send due tasks"] == 0
        assert fault.hits() == 4
    retried = user.post(f"/api/tasks/{task['id']}/retry")
    assert retried.status_code == 200, retried.text
    done = wait_task(user, task["id"], {"succeeded", "failed"})
    assert done["status"] == "succeeded" and done["attempts"]["used"] == 1
    assert done["deadLetteredAt"] == failed["deadLetteredAt"]  # history is kept
    assert user.get(f"/api/files/{done['result']['fileId']}/content").content == b"dead\nletter"
    inspect = run_cli(site, "tasks", "inspect", task["id"])
    assert inspect.returncode == 0 and "applied" in inspect.stdout and "dead letters (1)" in inspect.stdout


def test_lease_loss_spends_the_budget_then_retry_is_refused(user: SiteClient, site: SiteRecord) -> None:
    budget = policy(site)["tasks"]["max_attempts"]
    file = user.upload(b"never published")
    with faults.refuse_publish(site, user.account["id"]) as fault:
        task = user.post("/api/tasks", json=body(file["id"])).json()
        for attempt in range(1, budget + 1):
            wait_for(lambda attempt=attempt: fault.hits() >= attempt, what=f"publish attempt {attempt}")
            row = db.fetchrow(site, "SELECT status, attempt_count FROM task WHERE id = $1", task["id"])
            assert row["status"] == "running" and row["attempt_count"] == attempt
            # The executor lost the task; its lease deadline is brought forward instead of waited for.
            db.execute(site, "UPDATE task SET lease_expires_at = now() - interval '1 s' WHERE id = $1", task["id"])
            assert maintain(site)["recover expired leases"] == 1
    failed = user.get(f"/api/tasks/{task['id']}").json()
    assert failed["status"] == "failed" and failed["errorCode"] == "LEASE_EXPIRED"
    assert failed["attempts"] == {"used": budget, "max": budget} and failed["retryable"] is False
    refused = user.post(f"/api/tasks/{task['id']}/retry")
    assert refused.status_code == 409 and error_code(refused) == "NOT_RETRYABLE"
    outcomes = db.fetch(site, "SELECT outcome FROM task_attempt WHERE task_id = $1 ORDER BY lease_version",
                        task["id"])
    assert [r["outcome"] for r in outcomes] == ["lease_expired"] * budget
    # Unpublished results of those attempts are cleaned; the quota holds only the input.
    db.execute(site, "UPDATE file SET updated_at = now() - interval '1 hour' WHERE kind = 'result' AND owner_id = $1",
               user.account["id"])
    maintain(site)
    assert db.fetchval(site, "SELECT count(*) FROM file WHERE kind = 'result' AND status = 'uploading' "
                             "AND owner_id = $1", user.account["id"]) == 0
    assert db.fetchval(site, "SELECT used_bytes FROM storage_usage WHERE account_id = $1",
                       user.account["id"]) == len(b"never published")


@pytest.mark.disruptive
def test_restart_keeps_results_and_runs_new_tasks(user: SiteClient, site: SiteRecord, state_dir) -> None:
    file = user.upload(b"before\r\nrestart")
    before = wait_task(user, user.post("/api/tasks", json=body(file["id"])).json()["id"], {"succeeded"})
    control.stop(state_dir, site.slug)
    control.start(state_dir, site.slug)
    # Same database, broker and bucket; the session survives too (it lives in the database).
    again = user.get(f"/api/tasks/{before['id']}")
    assert again.status_code == 200, f"after the restart: {again.text}"
    assert again.json()["status"] == "succeeded"
    assert user.get(f"/api/files/{before['result']['fileId']}/content").content == b"before\nrestart"
    after = wait_task(user, user.post("/api/tasks", json=body(file["id"], trim=True)).json()["id"], {"succeeded"})
    assert user.get(f"/api/files/{after['result']['fileId']}/content").content == b"before\nrestart"


@pytest.mark.disruptive
def test_storage_outage_waits_then_retries_automatically(user: SiteClient, site: SiteRecord, state_dir) -> None:
    file = user.upload(b"outage\r\n")
    control.break_storage(state_dir, site.slug)
    try:
        task = user.post("/api/tasks", json=body(file["id"])).json()
        waiting = wait_task(user, task["id"], {"retry_wait", "failed", "succeeded"})
        assert waiting["status"] == "retry_wait" and waiting["errorCode"] is None
        due = db.fetchval(site, "SELECT extract(epoch FROM next_attempt_at - updated_at) FROM task WHERE id = $1",
                          task["id"])
        assert round(due) == 30
    finally:
        control.heal_storage(state_dir, site.slug)
    # At its time, maintenance (cron, here run by the test) re-sends it; the worker succeeds.
    wait_for(lambda: db.fetchval(site, "SELECT next_attempt_at <= now() FROM task WHERE id = $1", task["id"]),
             timeout=45, what="the 30 s retry wait to pass", interval=0.5)
    assert maintain(site)["re-send due tasks"] == 1
    done = wait_task(user, task["id"], {"succeeded", "failed", "retry_wait"})
    assert done["status"] == "succeeded" and done["attempts"]["used"] == 2
    assert user.get(f"/api/files/{done['result']['fileId']}/content").content == b"outage\n"


@pytest.mark.disruptive
def test_messages_land_only_on_the_sites_own_queue(user: SiteClient, site: SiteRecord, run: SitesFile,
                                                   state_dir) -> None:
    file = user.upload(b"queued")
    control.stop(state_dir, site.slug, ("worker",))
    try:
        task = user.post("/api/tasks", json=body(file["id"])).json()
        assert task["status"] == "queued"
        holding = broker.queues_holding(run, task["id"])
        own = f"{site.broker_namespace}:{site.task_queue}" if run.services.broker.kind == "redis" else site.task_queue
        assert holding == {own}
    finally:
        control.start(state_dir, site.slug, ("worker",))
    assert wait_task(user, task["id"], {"succeeded"})["status"] == "succeeded"
