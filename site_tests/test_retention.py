"""History retention on a live site: a finished task older than ``[tasks] history_days`` is pruned by
``maintain`` with its attempts, while its ledger entries and the owner's balance stay (the audit
the harness runs after the scenarios then checks the books are whole)."""

from __future__ import annotations

import secrets

from harness.state import SiteRecord

from . import db
from .client import SiteClient, policy
from .operator import maintain, run_cli
from .test_tasks import body
from .waiting import wait_task


def test_old_history_is_pruned_and_the_ledger_kept(priced_site: SiteRecord) -> None:
    site = priced_site
    days = policy(site)["tasks"]["history_days"]
    price = policy(site)["charges"]["prices"]["text-normalize@1"]
    email = f"history-{secrets.token_hex(4)}@example.com"
    with SiteClient(site) as user:
        user.register(email, funded=False)
        granted = run_cli(site, "grant-credits", email, str(3 * price), "--reason", "site_tests retention")
        assert granted.returncode == 0, granted.stderr
        file = user.upload(b"old\r\nnews")
        old = wait_task(user, user.post("/api/tasks", json=body(file["id"])).json()["id"], {"succeeded", "failed"})
        recent = wait_task(user, user.post("/api/tasks", json=body(file["id"])).json()["id"], {"succeeded", "failed"})
        assert old["status"] == recent["status"] == "succeeded"
        # The owner deleted the old result; then time passed (moved from outside the site).
        assert user.delete(f"/api/files/{old['result']['fileId']}").status_code == 204
        db.execute(site, "UPDATE task SET finished_at = finished_at - make_interval(days => $2) WHERE id = $1",
                   old["id"], days + 1)
        ledger = db.fetch(site, "SELECT id, kind, amount FROM credit_ledger WHERE task_id = $1 ORDER BY id",
                          old["id"])
        assert [r["kind"] for r in ledger] == ["hold", "capture"]
        balance = user.get("/api/credits").json()["balance"]

        assert maintain(site)["prune task history"] >= 1

        assert user.get(f"/api/tasks/{old['id']}").status_code == 404
        assert db.fetchval(site, "SELECT count(*) FROM task_attempt WHERE task_id = $1", old["id"]) == 0
        assert db.fetch(site, "SELECT id, kind, amount FROM credit_ledger WHERE task_id = $1 ORDER BY id",
                        old["id"]) == ledger
        assert user.get("/api/credits").json()["balance"] == balance == 3 * price - 2 * price
        assert user.get(f"/api/tasks/{recent['id']}").json()["status"] == "succeeded"
        listed = [t["id"] for t in user.get("/api/tasks").json()["items"]]
        assert listed == [recent["id"]]
