"""The pages in real Chromium against every live site: sign in, files, tasks, polling, offline,
a lost submit response, and layouts at 320 and 390 px. Screenshots at 390 px go to artifacts/."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from harness.mailbox import asks_verified
from harness.state import SiteRecord

from . import db, faults
from .browser import WIDTHS, SitePage, site_page
from .client import PASSWORD, SiteClient, grant_credits, policy
from .operator import maintain
from .test_tasks import body as submit_body
from .waiting import wait_for

# The pages poll every 3 s (detail) and 5 s (list): a state shows within a few polls.
expect.set_options(timeout=20_000)

PAGE_SIZE = 20  # the API's page of files and tasks
SOURCE = b"first line  \r\nsecond\t\r\nthird"
NORMALIZED = b"first line\nsecond\nthird"


@pytest.fixture
def tab(browser: Browser, site: SiteRecord) -> Iterator[SitePage]:
    with site_page(browser, site) as opened:
        yield opened
        assert opened.console.problems == [], opened.console.problems


@pytest.fixture
def signed_in(tab: SitePage) -> SitePage:
    tab.account = tab.register(f"{tab.site.slug}-{secrets.token_hex(5)}@example.com")
    grant_credits(tab.site, tab.account["id"])
    return tab


def start_task(tab: SitePage, file_name: str, trim: bool = False) -> None:
    page = tab.goto("/tasks")
    page.locator("#start-file").select_option(label=file_name)
    page.locator("#start-param-trimTrailingWhitespace").set_checked(trim)
    page.locator("#start-button").click()


def task_id_of(page: Page) -> str:
    page.wait_for_url(re.compile(r"/tasks/[0-9a-f-]{36}$"))
    return page.url.rsplit("/", 1)[1]


def downloaded(page: Page, link: str) -> bytes:
    with page.expect_download() as info:
        page.locator(link).click()
    return open(info.value.path(), "rb").read()


def test_sign_in_never_leaves_the_site(tab: SitePage) -> None:
    """``next=/<TAB>/evil.example``: browsers drop the tab and would go to //evil.example."""
    page = tab.goto("/login?next=%2F%09%2Fevil.example%2F")
    page.fill("input[name=email]", f"{tab.site.slug}-{secrets.token_hex(5)}@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(tab.url("/files"))


def test_sign_in_upload_run_preview_and_download(tab: SitePage) -> None:
    page = tab.page
    email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    tab.goto("/tasks")
    expect(page).to_have_url(re.compile(r"/login\?next=/tasks$"))
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(tab.url("/tasks"))
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(tab.url("/login"))
    assert tab.goto("/files").url.endswith("/login?next=/files")
    # Signing in by keyboard alone.
    page.locator("input[name=email]").focus()
    page.keyboard.type(email)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page).to_have_url(tab.url("/files"))
    grant_credits(tab.site, tab.api("GET", "/api/me").json()["id"])

    page.locator("#upload-file").set_input_files(files=[{"name": "notes.txt", "mimeType": "text/plain",
                                                          "buffer": SOURCE}])
    if asks_verified(tab.site):  # an address not proven yet: the page says what to do, the link does it
        page.get_by_role("button", name="Upload").click()
        expect(page.locator("#upload-message")).to_contain_text("Confirm your email address first")
        tab.follow_verification(email)
        page = tab.goto("/files")
        page.locator("#upload-file").set_input_files(files=[{"name": "notes.txt", "mimeType": "text/plain",
                                                              "buffer": SOURCE}])
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-message")).to_have_text(f"Stored notes.txt ({len(SOURCE)} B).")
    item = page.locator("#file-list li", has_text="notes.txt")
    item.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-text")).to_have_text(SOURCE.decode().replace("\r\n", "\n"))
    expect(page.locator("#preview-truncated")).to_be_hidden()
    page.get_by_role("button", name="Close").click()
    assert downloaded(page, "#file-list li >> text=Download") == SOURCE

    # Start by keyboard: choose the file, tick the option, press Enter on Start.
    page.get_by_role("link", name="Tasks").click()
    expect(page.locator("#start-file option", has_text="notes.txt")).to_have_count(1)
    page.locator("#start-file").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    expect(page.locator("#start-param-trimTrailingWhitespace")).to_be_checked()
    page.locator("#start-button").focus()
    page.keyboard.press("Enter")
    task_id = task_id_of(page)

    # The status comes from the server's polling; the result appears only after success.
    expect(page.locator("#status")).to_have_text("Succeeded")
    expect(page.locator("#result-digest")).to_have_text(hashlib.sha256(NORMALIZED).hexdigest())
    expect(page.locator("#attempts")).to_contain_text("1 of ")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#result-text")).to_have_text(NORMALIZED.decode())
    assert downloaded(page, "#result-download") == NORMALIZED
    tab.screenshot("task")

    # Straight to the detail page, as after a refresh or from a bookmark.
    page.reload()
    expect(page.locator("#status")).to_have_text("Succeeded")
    fresh = page.context.new_page()
    fresh.goto(tab.url(f"/tasks/{task_id}"))
    expect(fresh.locator("#result-digest")).to_have_text(hashlib.sha256(NORMALIZED).hexdigest())
    fresh.close()
    tab.goto("/tasks")
    expect(page.locator(f"#task-list li[data-task-id='{task_id}'] .status")).to_have_text("Succeeded")
    tab.screenshot("tasks")
    tab.goto("/files")
    expect(page.locator("#file-list li", has_text="notes.normalized.txt")).to_have_count(1)
    tab.screenshot("files")


def test_cancel_a_waiting_task_and_file_in_use_in_words(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    file = signed_in.upload(b"held by a task", "held.txt")
    with faults.refuse_claims(site, signed_in.account["id"]):
        start_task(signed_in, "held.txt")
        task_id = task_id_of(page)
        expect(page.locator("#status")).to_have_text(re.compile(r"^(Waiting to start|Queued)$"))
        expect(page.locator("#result")).to_be_hidden()
        expect(page.locator("#retry")).to_be_hidden()

        files = page.context.new_page()
        files.goto(signed_in.url("/files"))
        files.on("dialog", lambda dialog: dialog.accept())
        files.locator(f"#file-list li[data-file-id='{file['id']}']").get_by_role("button", name="Delete").click()
        expect(files.locator("#list-message")).to_contain_text("is the input of an active task")
        files.close()

        page.get_by_role("button", name="Cancel task").click()
        expect(page.locator("#status")).to_have_text("Canceled")
        expect(page.locator("#cancel")).to_be_hidden()
        expect(page.locator("#retry")).to_be_hidden()
    assert db.fetchval(site, "SELECT status FROM task WHERE id = $1", task_id) == "canceled"


def test_a_deleted_result_is_shown_as_gone(signed_in: SitePage) -> None:
    """The result file deleted after success: the detail page says so and offers no preview or
    download; the list says so too."""
    page = signed_in.page
    signed_in.upload(b"short-lived\r\n", "brief.txt")
    start_task(signed_in, "brief.txt")
    task_id = task_id_of(page)
    expect(page.locator("#status")).to_have_text("Succeeded")
    expect(page.locator("#result")).to_be_visible()
    expect(page.locator("#result-gone")).to_be_hidden()
    result = signed_in.api("GET", f"/api/tasks/{task_id}").json()["result"]
    assert signed_in.api("DELETE", f"/api/files/{result['fileId']}").status == 204
    page.reload()
    expect(page.locator("#result-gone")).to_be_visible()
    expect(page.locator("#result")).to_be_hidden()
    expect(page.locator("#result-download")).to_be_hidden()
    signed_in.goto("/tasks")
    expect(page.locator(f"#task-list li[data-task-id='{task_id}'] .meta")).to_contain_text(
        "result deleted or expired")


def test_running_task_shows_cancel_requested_until_it_settles(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    signed_in.upload(b"stuck at publish", "stuck.txt")
    with faults.refuse_publish(site, signed_in.account["id"]) as fault:
        start_task(signed_in, "stuck.txt")
        task_id = task_id_of(page)
        wait_for(lambda: fault.hits() >= 1, what="the executor to reach publish")
        expect(page.locator("#status")).to_have_text("Running")
        page.get_by_role("button", name="Cancel task").click()
        expect(page.locator("#status")).to_have_text("Cancel requested")
        expect(page.locator("#cancel-requested")).to_be_visible()
    # The executor lost the task; once its lease is over, maintenance settles the cancel.
    db.execute(site, "UPDATE task SET lease_expires_at = now() - interval '1 s' WHERE id = $1", task_id)
    maintain(site)
    expect(page.locator("#status")).to_have_text("Canceled")
    expect(page.locator("#cancel-requested")).to_be_hidden()


def test_retry_is_offered_only_when_eligible(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    rules = policy(site)
    budget = rules["tasks"]["max_attempts"]

    # Not valid UTF-8: fails for good, no retry offered.
    signed_in.upload(b"caf\xe9 au lait", "latin1.txt")
    start_task(signed_in, "latin1.txt")
    task_id_of(page)
    expect(page.locator("#status")).to_have_text("Failed")
    expect(page.locator("#failure")).to_contain_text("not valid UTF-8")
    expect(page.locator("#retry")).to_be_hidden()

    # No room for the result: STORAGE_FULL may be retried once space is freed.
    source = b"no room for the result of this task"
    signed_in.upload(source, "roomless.txt")
    quota, largest = rules["files"]["quota_bytes"], rules["files"]["max_file_bytes"]
    fill = quota - db.fetchval(site, "SELECT used_bytes FROM storage_usage WHERE account_id = $1",
                               signed_in.account["id"]) - len(source) // 2
    sizes = [largest] * (fill // largest) + ([fill % largest] if fill % largest else [])
    with SiteClient(site) as client, ThreadPoolExecutor(max_workers=4) as pool:
        client.cookies.set(site.cookie_name, signed_in.session_token())
        fillers = list(pool.map(lambda n: client.upload(b"f" * sizes[n], f"filler-{n}.bin",
                                                        "application/octet-stream"), range(len(sizes))))
    start_task(signed_in, "roomless.txt")
    expect(page.locator("#status")).to_have_text("Failed")
    expect(page.locator("#failure")).to_contain_text("not enough storage")
    expect(page.locator("#attempts")).to_have_text(f"1 of {budget} used")
    expect(page.locator("#retry")).to_be_visible()
    expect(page.locator("#retry-budget")).to_have_text(f"This would be attempt 2 of {budget}.")
    tab_shot = signed_in.screenshot("task-retry")
    assert tab_shot.exists()

    assert signed_in.api("DELETE", f"/api/files/{fillers[0]['id']}").status == 204
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#status")).to_have_text("Succeeded")
    expect(page.locator("#attempts")).to_have_text(f"2 of {budget} used")
    expect(page.locator("#retry")).to_be_hidden()


def test_a_file_just_over_the_limit_is_refused_in_sizes_that_differ(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    largest = policy(site)["files"]["max_file_bytes"]
    signed_in.goto("/files")
    page.locator("#upload-file").set_input_files(
        {"name": "big.bin", "mimeType": "application/octet-stream", "buffer": b"x" * (largest + 1)})
    page.locator("#upload-button").click()
    # one byte over: both sizes in bytes, since "1.0 MiB" against "1.0 MiB" reads as no difference
    expect(page.locator("#upload-message")).to_have_text(
        f"This file is {largest + 1:,} bytes; the largest this site takes is {largest:,} bytes.")


def test_a_lost_submit_response_is_resent_with_the_same_key(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    signed_in.upload(b"sent once", "once.txt")
    signed_in.goto("/tasks")
    expect(page.locator("#start-file option", has_text="once.txt")).to_have_count(1)
    keys: list[str] = []

    def lose_the_answer(route: Route) -> None:
        if route.request.method != "POST":
            route.fallback()  # the list reloads as usual
            return
        keys.append(route.request.post_data_json["requestKey"])
        route.fetch()  # the server gets it and creates the task...
        route.abort("connectionreset")  # ...but its answer never reaches the page

    def count() -> int:
        return db.fetchval(site, "SELECT count(*) FROM task WHERE owner_id = $1", signed_in.account["id"])

    page.route("**/api/tasks", lose_the_answer)
    start_task(signed_in, "once.txt")
    expect(page.locator("#start-message")).to_contain_text("may or may not have started")
    expect(page.locator("#task-list li", has_text="once.txt")).to_have_count(1)  # the list shows what happened
    assert count() == 1
    page.unroute("**/api/tasks")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data_json["requestKey"])
            if request.method == "POST" and request.url.endswith("/api/tasks") else None)
    page.locator("#start-button").click()
    task_id = task_id_of(page)
    assert sent == keys and count() == 1
    assert db.fetchval(site, "SELECT request_key::text FROM task WHERE id = $1", task_id) == keys[0]

    # Lost again; then the option changes: that is a new request with a new key.
    page.route("**/api/tasks", lose_the_answer)
    start_task(signed_in, "once.txt")
    expect(page.locator("#start-message")).to_contain_text("may or may not have started")
    page.unroute("**/api/tasks")
    page.locator("#start-param-trimTrailingWhitespace").check()
    page.locator("#start-button").click()
    task_id_of(page)
    assert len(set(keys)) == 2 and sent[-1] not in keys and count() == 3


def test_offline_disables_actions_and_reconnecting_rechecks(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    signed_in.upload(b"waiting while offline", "offline.txt")
    with faults.refuse_claims(site, signed_in.account["id"]):
        start_task(signed_in, "offline.txt")
        task_id = task_id_of(page)
        cancel = page.get_by_role("button", name="Cancel task")
        expect(cancel).to_be_enabled()

        page.context.set_offline(True)
        expect(page.locator("#connection")).to_contain_text("You are offline")
        expect(cancel).to_be_disabled()
        expect(page.get_by_role("button", name="Sign out")).to_be_disabled()
        # Meanwhile the task changes on the server, from another device of the same account.
        with signed_in.other_device() as other_device:
            assert other_device.post(f"/api/tasks/{task_id}/cancel").json()["status"] == "canceled"
        expect(page.locator("#status")).not_to_have_text("Canceled")  # offline: nothing is fetched
        page.context.set_offline(False)
        expect(page.locator("#connection")).to_be_hidden()
        expect(page.locator("#status")).to_have_text("Canceled")
        expect(page.get_by_role("button", name="Sign out")).to_be_enabled()

    # A failed query pauses polling and says so; "Try again" resumes it.
    signed_in.goto("/tasks")
    page.route("**/api/tasks", lambda route: route.fulfill(status=503, content_type="application/json",
                                                           body='{"error": {"domain": "request", "code": '
                                                                '"UNAVAILABLE", "message": "x"}}'))
    page.reload()
    expect(page.locator("#list-poll")).to_contain_text("Updates are paused")
    page.unroute("**/api/tasks")
    page.locator("#list-poll").get_by_role("button", name="Try again").click()
    expect(page.locator("#list-poll")).to_be_empty()
    expect(page.locator(f"#task-list li[data-task-id='{task_id}'] .status")).to_have_text("Canceled")


def test_coming_back_to_the_tab_rechecks(signed_in: SitePage) -> None:
    page = signed_in.page
    file = signed_in.upload(b"two devices", "devices.txt")
    first = signed_in.api("POST", "/api/tasks", data=submit_body(file["id"])).json()
    signed_in.goto("/tasks")
    expect(page.locator(f"#task-list li[data-task-id='{first['id']}'] .status")).to_have_text("Succeeded")
    # Nothing on the list is active, so it no longer polls; a task started elsewhere shows only on a re-check.
    signed_in.switch_tab("hidden")
    with signed_in.other_device() as other_device:
        second = other_device.post("/api/tasks", json=submit_body(file["id"], trim=True)).json()
    signed_in.switch_tab("visible")
    expect(page.locator(f"#task-list li[data-task-id='{second['id']}']")).to_have_count(1)


def test_coming_back_while_the_page_still_checks_checks_again(signed_in: SitePage) -> None:
    # The page's first check loads the list and the files side by side. Coming back to the tab while
    # the files are still on their way must not settle for that check: its list was loaded before
    # the change (a CI run missed a task started from another device this way).
    page = signed_in.page
    file = signed_in.upload(b"still checking", "checking.txt")
    held: list[Route] = []  # the first request only: the ones after it go through
    page.route("**/api/processors", lambda route: route.continue_() if len(held) else held.append(route))
    signed_in.goto("/tasks")
    expect(page.locator("#list-message")).to_have_text("No tasks yet.")  # nothing active: no polling
    wait_for(lambda: page.evaluate("0") == 0 and len(held) == 1, what="the page to ask for its processors")
    signed_in.switch_tab("hidden")
    with signed_in.other_device() as other_device:
        started = other_device.post("/api/tasks", json=submit_body(file["id"])).json()
    signed_in.switch_tab("visible")
    held[0].continue_()
    expect(page.locator(f"#task-list li[data-task-id='{started['id']}']")).to_have_count(1)


def test_a_reload_asked_for_while_an_older_one_is_answered_loads_again(signed_in: SitePage) -> None:
    # The list's poll was answered before a task was started elsewhere; its answer arrives after the
    # visitor came back to the tab. That answer shows nothing active, so polling stops: the re-check
    # asked for meanwhile must load the list once more, not take that older answer for its own.
    page, site = signed_in.page, signed_in.site
    file = signed_in.upload(b"answered before", "before.txt")
    held: list[Route] = []  # the first request only: the ones after it go through
    with faults.refuse_claims(site, signed_in.account["id"]):
        first = signed_in.api("POST", "/api/tasks", data=submit_body(file["id"])).json()
        signed_in.goto("/tasks")
        expect(page.locator(f"#task-list li[data-task-id='{first['id']}']")).to_have_count(1)  # active: polled
        page.route("**/api/tasks", lambda route: route.continue_() if len(held) else held.append(route))
        assert signed_in.api("POST", f"/api/tasks/{first['id']}/cancel").json()["status"] == "canceled"
    wait_for(lambda: page.evaluate("0") == 0 and len(held) == 1, what="the list's next poll")
    answered = held[0].fetch()  # the task is canceled: nothing active on this answer
    signed_in.switch_tab("hidden")
    with signed_in.other_device() as other_device:
        started = other_device.post("/api/tasks", json=submit_body(file["id"], trim=True)).json()
    signed_in.switch_tab("visible")
    held[0].fulfill(response=answered)
    expect(page.locator(f"#task-list li[data-task-id='{first['id']}'] .status")).to_have_text("Canceled")
    expect(page.locator(f"#task-list li[data-task-id='{started['id']}']")).to_have_count(1)


def test_buttons_wait_for_their_scripts(signed_in: SitePage) -> None:
    # Scripts held back (a slow network): the page is on screen but nothing is wired yet, so a press
    # would be lost. The buttons stay disabled until their module has attached its handler.
    page = signed_in.page
    held: list[Route] = []
    holding = True

    def hold(route: Route) -> None:
        if holding:
            held.append(route)
        else:
            route.continue_()

    page.route("**/static/*.js", hold)
    page.goto(signed_in.url("/tasks"), wait_until="commit")
    start, sign_out = page.locator("#start-button"), page.get_by_role("button", name="Sign out")
    expect(start).to_be_disabled()
    expect(sign_out).to_be_disabled()


    def asked_for() -> int:
        page.evaluate("0")  # a call into playwright delivers the route events queued meanwhile
        return len(held)

    wait_for(lambda: asked_for() >= 2, what="the page to ask for session.js and tasks.js")
    holding = False
    for route in held:
        route.continue_()
    expect(start).to_be_enabled()
    sign_out.click()
    expect(page).to_have_url(signed_in.url("/login"))


def test_signing_out_goes_to_the_login_page_whatever_else_is_answered_meanwhile(signed_in: SitePage) -> None:
    # The list's poll or the header's /api/me, answered 401 while the page signs out, is that same
    # sign-out: it must not become "sign in again and come back here" (a CI run landed on
    # /login?next=%2Ftasks). The logout's answer is held back after the server has carried it out, so
    # that another request is answered 401 first; `navigate` events record where the page asked to go.
    page = signed_in.goto("/tasks")
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route("**/api/auth/logout", hold)
    page.evaluate("""() => {
        window.wentTo = [];
        navigation.addEventListener("navigate", (event) => window.wentTo.push(event.destination.url));
    }""")
    page.get_by_role("button", name="Sign out").click()
    wait_for(lambda: page.evaluate("0") == 0 and len(held) == 1, what="the page to ask to sign out")
    signed_out = held[0].fetch()
    assert signed_out.status == 204
    answered, went_to = page.evaluate("""async () => {
        const { api } = await import("/static/api.js");
        try {
            await api.get("/api/me");
        } catch (error) {
            return [error.status, window.wentTo];
        }
    }""")
    assert (answered, went_to) == (401, [])
    held[0].fulfill(response=signed_out)
    expect(page).to_have_url(signed_in.url("/login"))


def test_show_more_pages_through_both_lists(signed_in: SitePage) -> None:
    page, site = signed_in.page, signed_in.site
    account_id = signed_in.account["id"]
    source = signed_in.upload(b"one page and one more", "paged.txt")
    max_active = policy(site)["tasks"]["max_active"]

    def active() -> int:
        return db.fetchval(site, "SELECT count(*) FROM task WHERE owner_id = $1 AND task_is_active(status)",
                           account_id)

    # 21 tasks (a page and one more) and with their results 22 files; submits wait for room under the
    # active limit instead of spending the write rate on refusals.
    task_ids = set()
    for _ in range(PAGE_SIZE + 1):
        wait_for(lambda: active() < max_active, what="room under the active limit")
        created = signed_in.api("POST", "/api/tasks", data=submit_body(source["id"]))
        assert created.status == 201, created.text()
        task_ids.add(created.json()["id"])
    wait_for(lambda: active() == 0, what="every task to settle")
    ready = db.fetch(site, "SELECT id::text FROM file WHERE owner_id = $1 AND status = 'ready'", account_id)
    file_ids = {row["id"] for row in ready}
    assert len(file_ids) == PAGE_SIZE + 2  # the input and 21 results

    for path, list_id, more, key, expected in (("/tasks", "task-list", "more-tasks", "taskId", task_ids),
                                               ("/files", "file-list", "more-files", "fileId", file_ids)):
        signed_in.goto(path)
        items = page.locator(f"#{list_id} li")
        expect(items).to_have_count(PAGE_SIZE)
        page.locator(f"#{more}").click()
        expect(items).to_have_count(len(expected))
        expect(page.locator(f"#{more}")).to_be_hidden()
        assert set(items.evaluate_all(f"items => items.map((item) => item.dataset.{key})")) == expected, path


def test_pages_fit_320_and_390_pixels(signed_in: SitePage) -> None:
    page = signed_in.page
    long_name = "anunbrokenfilenamethatnobrowsercanwrap" * 4 + ".txt"
    source = (b"x" * 300 + b"\n") * 300  # over 64 KiB: the preview says it is cut
    file = signed_in.upload(source, long_name)
    start_task(signed_in, long_name)
    task_id = task_id_of(page)
    expect(page.locator("#status")).to_have_text("Succeeded")
    # Each page with what shows it has loaded its data.
    pages = {
        "login": ("/login", "#auth-form"),
        "files": ("/files", f"#file-list li[data-file-id='{file['id']}']"),
        "tasks": ("/tasks", f"#task-list li[data-task-id='{task_id}']"),
        "task": (f"/tasks/{task_id}", "#result:not([hidden])"),
        "not-found": ("/tasks/00000000-0000-4000-8000-000000000000", "h1"),
    }
    for width in WIDTHS:
        signed_in.check_layouts(pages, width)
        signed_in.goto("/files")
        page.locator(f"#file-list li[data-file-id='{file['id']}']").get_by_role("button", name="Preview").click()
        expect(page.locator("#preview-truncated")).to_be_visible()
        scroll, inner = signed_in.overflow()
        assert scroll <= inner, f"preview dialog at {width} px: scrollWidth {scroll} > innerWidth {inner}"
        if width == 390:
            signed_in.screenshot("files-preview")


def test_another_accounts_task_page_is_not_found(signed_in: SitePage, browser: Browser) -> None:
    page, site = signed_in.page, signed_in.site
    signed_in.upload(b"mine", "mine.txt")
    start_task(signed_in, "mine.txt")
    task_id = task_id_of(page)
    with site_page(browser, site) as stranger:
        stranger.register(f"{site.slug}-{secrets.token_hex(5)}@example.com")
        response = stranger.page.goto(stranger.url(f"/tasks/{task_id}"))
        assert response is not None and response.status == 404
        expect(stranger.page.get_by_role("heading", name="Task not found")).to_be_visible()
        missing = stranger.page.goto(stranger.url("/tasks/00000000-0000-4000-8000-000000000000"))
        assert missing is not None and missing.status == 404


def test_one_browser_signed_in_to_two_sites(browser: Browser, pair: tuple[SiteRecord, SiteRecord]) -> None:
    """Cookies ignore ports: one browser holds both sites' cookies, and each page shows its own account."""
    a, b = pair
    context = browser.new_context()
    try:
        emails = {}
        for site in (a, b):
            page = SitePage(site, context)
            emails[site.slug] = f"{site.slug}-{secrets.token_hex(5)}@example.com"
            page.register(emails[site.slug])
        assert {a.cookie_name, b.cookie_name} <= {c["name"] for c in context.cookies()}
        for site in (a, b):
            page = SitePage(site, context)
            page.goto("/files")
            expect(page.page.locator(".who")).to_have_text(emails[site.slug])
            assert page.console.problems == []
    finally:
        context.close()
