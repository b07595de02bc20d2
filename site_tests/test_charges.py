"""Credits on a site rendered with a price: operator grant, hold, capture, refund, refusal."""

from __future__ import annotations

import secrets

from harness.state import SiteRecord

from . import db, faults
from .client import SiteClient, error_code, policy
from .operator import run_cli
from .test_tasks import body
from .waiting import wait_task


def test_priced_tasks_hold_capture_and_refund(priced_site: SiteRecord) -> None:
    site = priced_site
    price = policy(site)["charges"]["prices"]["text-normalize@1"]
    email = f"payer-{secrets.token_hex(4)}@example.com"
    with SiteClient(site) as user:
        account = user.register(email, funded=False)
        assert user.get("/api/credits").json() == {"balance": 0, "entries": []}
        file = user.upload(b"paid \r\nfor")
        refused = user.post("/api/tasks", json=body(file["id"]))
        assert refused.status_code == 402 and error_code(refused) == "INSUFFICIENT_CREDITS"

        granted = run_cli(site, "grant-credits", email, str(2 * price), "--reason", "site_tests top-up")
        assert granted.returncode == 0, granted.stderr

        paid = user.post("/api/tasks", json=body(file["id"], trim=True)).json()
        assert paid["price"] == price and paid["chargeStatus"] == "held"
        done = wait_task(user, paid["id"], {"succeeded", "failed"})
        assert done["status"] == "succeeded" and done["chargeStatus"] == "captured"
        assert user.get(f"/api/files/{done['result']['fileId']}/content").content == b"paid\nfor"

        with faults.refuse_claims(site, account["id"]):
            waiting = user.post("/api/tasks", json=body(file["id"])).json()
            assert user.get("/api/credits").json()["balance"] == 0
            canceled = user.post(f"/api/tasks/{waiting['id']}/cancel").json()
            assert canceled["status"] == "canceled" and canceled["chargeStatus"] == "refunded"

        credits = user.get("/api/credits").json()
        assert credits["balance"] == price  # granted twice the price, one capture
        kinds = [entry["kind"] for entry in credits["entries"]]
        assert kinds == ["refund", "hold", "capture", "hold", "grant"]
    totals = dict(db.fetch(site, "SELECT kind, sum(amount) FROM credit_ledger WHERE account_id = $1 GROUP BY kind",
                           account["id"]))
    assert totals["grant"] - totals["hold"] + totals["refund"] == price
