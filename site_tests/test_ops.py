"""The operator console of every live site: only that site's operators reach it (anyone else, another
site's operator included, gets the 404 of a missing path), it shows every account's task but none of
the SPEC's private columns, its retry and cancel obey the owner's rules and budget and each leaves an
``ops_action`` row; its three pages in real Chromium at 320 and 390 px (screenshots at 390 px)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, expect

from harness.state import SiteRecord

from . import db, faults
from .browser import WIDTHS, SitePage, site_page
from .client import SiteClient, error_code, policy
from .operator import run_cli
from .test_tasks import body
from .waiting import wait_task

# SPEC §8: a task's detail and list never show leases, the input digest, the delivery token, the request
# fingerprint, the dispatch version, queue names or message ids (nor the client's request key).
PRIVATE_COLUMNS = ("lease_version", "lease_expires_at", "delivery_token", "delivery_lease_expires_at",
                   "input_sha256", "request_fingerprint", "request_key", "dispatch_version")


def grant(site: SiteRecord, email: str) -> None:
    result = run_cli(site, "operator", "grant", email)
    assert result.returncode == 0, result.stdout + result.stderr


@contextmanager
def operator(site: SiteRecord) -> Iterator[SiteClient]:
    """A client signed in as a fresh account that the site's command line made an operator."""
    with SiteClient(site) as client:
        grant(site, client.register()["email"])
        yield client


def ops_routes(task_id: str) -> list[tuple[str, str]]:
    return [("GET", "/api/ops/overview"), ("GET", "/api/ops/tasks"), ("GET", f"/api/ops/tasks/{task_id}"),
            ("POST", f"/api/ops/tasks/{task_id}/retry"), ("POST", f"/api/ops/tasks/{task_id}/cancel"),
            ("GET", "/api/ops/actions"), ("POST", "/api/ops/audit"),
            ("GET", "/ops"), ("GET", "/ops/tasks"), ("GET", f"/ops/tasks/{task_id}")]


def log_of(site: SiteRecord, task_id: str) -> list[tuple[str, str]]:
    rows = db.fetch(site, "SELECT action, outcome FROM ops_action WHERE task_id = $1 ORDER BY created_at, id",
                    task_id)
    return [(r["action"], r["outcome"]) for r in rows]


def test_the_console_is_404_for_a_non_operator_and_another_sites_operator(
    pair: tuple[SiteRecord, SiteRecord]
) -> None:
    a, b = pair
    with SiteClient(a) as owner, SiteClient(a) as member, operator(b) as b_operator:
        owner.register()
        member.register()
        task = owner.post("/api/tasks", json=body(owner.upload(b"x")["id"])).json()
        assert b_operator.get("/api/ops/overview").status_code == 200  # an operator on its own site
        # b's operator at a: with b's cookie (which a ignores), and with b's token under a's cookie name.
        replayed = SiteClient(a)
        replayed.cookies.set(a.cookie_name, b_operator.session_token)
        missing = member.get("/no-such-page")
        assert missing.status_code == 404
        for client in (member, replayed):
            for method, path in ops_routes(task["id"]):
                response = client.request(method, path)
                assert response.status_code == 404 and response.json() == missing.json(), (a.slug, method, path)
        for method, path in ops_routes(task["id"]):
            response = b_operator.request(method, f"{a.base_url}{path}", headers={"Origin": a.origin})
            assert response.status_code == 404 and error_code(response) == "NOT_FOUND", (a.slug, method, path)
        replayed.close()
        assert wait_task(owner, task["id"], {"succeeded"})["cancelRequested"] is False
    assert log_of(a, task["id"]) == []


def test_an_operator_sees_another_accounts_task_but_no_private_column(site: SiteRecord) -> None:
    with SiteClient(site) as owner, operator(site) as ops:
        email = owner.register()["email"]
        task = owner.post("/api/tasks", json=body(owner.upload(b"a  \r\nb")["id"], trim=True)).json()
        owners_view = wait_task(owner, task["id"], {"succeeded"})
        detail = ops.get(f"/api/ops/tasks/{task['id']}")
        assert detail.status_code == 200, detail.text
        seen = detail.json()
        assert seen["task"] == {**owners_view, "ownerEmail": email}
        assert [(a["number"], a["outcome"]) for a in seen["attempts"]] == [(1, "succeeded")]
        assert seen["deadLetters"] == []
        listing = ops.get("/api/ops/tasks", params={"email": email})
        assert [t["id"] for t in listing.json()["items"]] == [task["id"]]
        row = db.fetchrow(site, f"SELECT {', '.join(PRIVATE_COLUMNS)} FROM task WHERE id = $1", task["id"])
        secrets_ = {str(row["request_key"]), bytes(row["input_sha256"]).hex(), bytes(row["request_fingerprint"]).hex()}
        for text in (detail.text, listing.text):
            for secret in secrets_:
                assert secret not in text
            for column in PRIVATE_COLUMNS:
                camel = column.split("_")[0] + "".join(part.title() for part in column.split("_")[1:])
                assert column not in text and camel not in text, column


def test_console_retry_keeps_the_budget_and_cancel_keeps_the_state_rules(site: SiteRecord) -> None:
    rules = policy(site)
    budget = rules["tasks"]["max_attempts"]
    with SiteClient(site) as owner, operator(site) as ops:
        account = owner.register()
        # Waiting (claims refused from outside): canceled now. Finished: unchanged. Each logged.
        file = owner.upload(b"cancel me")
        with faults.refuse_claims(site, account["id"]):
            waiting = owner.post("/api/tasks", json=body(file["id"])).json()
            canceled = ops.post(f"/api/ops/tasks/{waiting['id']}/cancel")
            assert canceled.status_code == 200 and canceled.json()["task"]["status"] == "canceled"
        assert ops.post(f"/api/ops/tasks/{waiting['id']}/cancel").json()["task"]["status"] == "canceled"
        refused = ops.post(f"/api/ops/tasks/{waiting['id']}/retry")
        assert refused.status_code == 409 and error_code(refused) == "NOT_RETRYABLE"
        assert log_of(site, waiting["id"]) == [("cancel", "canceled"), ("cancel", "unchanged")]

        # STORAGE_FULL (no room for the result) may be retried while budget remains; never beyond it.
        source = b"no room for the result of this task"
        roomless = owner.upload(source, "roomless.txt")
        quota, largest = rules["files"]["quota_bytes"], rules["files"]["max_file_bytes"]
        fill = quota - db.fetchval(site, "SELECT used_bytes FROM storage_usage WHERE account_id = $1",
                                   account["id"]) - len(source) // 2
        sizes = [largest] * (fill // largest) + ([fill % largest] if fill % largest else [])
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda n: owner.upload(b"f" * sizes[n], f"filler-{n}.bin", "application/octet-stream"),
                          range(len(sizes))))
        task = owner.post("/api/tasks", json=body(roomless["id"])).json()
        for used in range(1, budget + 1):
            failed = wait_task(owner, task["id"], {"failed"})
            assert failed["errorCode"] == "STORAGE_FULL" and failed["attempts"] == {"used": used, "max": budget}
            if used < budget:
                retried = ops.post(f"/api/ops/tasks/{task['id']}/retry")
                assert retried.status_code == 200, retried.text
                # The budget is not reset: the answer shows the attempts used so far, or one more when
                # a worker claimed the task before the console read it back.
                assert retried.json()["task"]["attempts"]["used"] in (used, used + 1)
                wait_task(owner, task["id"], {"running", "failed"})
        spent = ops.post(f"/api/ops/tasks/{task['id']}/retry")
        assert spent.status_code == 409 and error_code(spent) == "NOT_RETRYABLE"
        assert owner.get(f"/api/tasks/{task['id']}").json()["attempts"] == {"used": budget, "max": budget}
        assert log_of(site, task["id"]) == [("retry", "pending")] * (budget - 1)
        log = ops.get("/api/ops/actions", params={"taskId": task["id"]}).json()["items"]
        assert [entry["action"] for entry in log] == ["retry"] * (budget - 1)


# --- the pages in Chromium -------------------------------------------------------------------------


@pytest.fixture
def ops_tab(browser: Browser, site: SiteRecord) -> Iterator[SitePage]:
    with site_page(browser, site) as opened:
        opened.account = opened.register(f"{site.slug}-ops-{secrets.token_hex(5)}@example.com")
        grant(site, opened.account["email"])
        yield opened
        assert opened.console.problems == [], opened.console.problems


def test_the_console_pages_at_320_and_390_pixels(ops_tab: SitePage) -> None:
    page, site = ops_tab.page, ops_tab.site
    with SiteClient(site) as owner:
        account = owner.register()
        file = owner.upload(b"x" * 40, "anunbrokenfilenamethatnobrowsercanwrap" * 3 + ".txt")
        done = owner.post("/api/tasks", json=body(file["id"])).json()
        wait_task(owner, done["id"], {"succeeded"})
        with faults.refuse_claims(site, account["id"]):
            waiting = owner.post("/api/tasks", json=body(file["id"])).json()
            pages = {
                "ops-overview": ("/ops", "svg.chart"),
                "ops-tasks": (f"/ops/tasks?email={account['email']}", f"a[href='/ops/tasks/{waiting['id']}']"),
                "ops-task": (f"/ops/tasks/{waiting['id']}", "[data-ops-action=cancel]:not([disabled])"),
                "ops-task-done": (f"/ops/tasks/{done['id']}", "table.grid td[data-label=Outcome]"),
            }
            for width in WIDTHS:
                ops_tab.check_layouts(pages, width)

            # Cancel, confirmed in the browser's dialog: the page reloads with the new state and the log row.
            ops_tab.goto(f"/ops/tasks/{waiting['id']}")
            page.once("dialog", lambda dialog: dialog.accept())
            page.locator("[data-ops-action=cancel]").click()
            expect(page.locator("h1 .status")).to_have_text("canceled")
            expect(page.locator("[data-ops-action=cancel]")).to_be_hidden()
            expect(page.locator("li.item .meta").filter(has_text=ops_tab.account["email"])).to_have_count(1)
        assert log_of(site, waiting["id"]) == [("cancel", "canceled")]

        # The audit, run from the overview page.
        ops_tab.goto("/ops")
        page.locator("#run-audit").click()
        expect(page.locator("#audit-message")).not_to_have_text("Running the audit…", timeout=60_000)
        expect(page.locator("#audit-message")).not_to_be_empty()
        ops_tab.screenshot("ops-audit")
