"""The account page in real Chromium against every live site, at 320 and 390 px: what the account
holds (storage used of the quota; credits and their ledger where charges are on), changing the
password, the email form, signing out everywhere, deleting the account, and the operators' Ops link.
Screenshots at 390 px go to artifacts/."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from harness.state import SiteRecord

from . import db
from .browser import WIDTHS, SitePage, site_page
from .client import PASSWORD, STARTING_CREDITS, SiteClient, grant_credits, policy
from .operator import run_cli

expect.set_options(timeout=20_000)

NEW_PASSWORD = "a new site tests password 2"
PAGE_SIZE = 20  # the API's page of ledger entries


@pytest.fixture(params=WIDTHS, ids=[f"{width}px" for width in WIDTHS])
def tab(request: pytest.FixtureRequest, browser: Browser, site: SiteRecord) -> Iterator[SitePage]:
    """A tab signed in as a fresh account, at the width of the parameter."""
    with site_page(browser, site) as opened:
        opened.page.set_viewport_size({"width": request.param, "height": 800})
        opened.account = opened.register(f"{site.slug}-{secrets.token_hex(5)}@example.com")
        grant_credits(site, opened.account["id"])  # a priced site's starting credits
        yield opened
        assert opened.console.problems == [], opened.console.problems


def fits(tab: SitePage, what: str) -> None:
    scroll, inner = tab.overflow()
    assert scroll <= inner, f"{what} at {inner} px: scrollWidth {scroll} > innerWidth {inner}"


def other_device(site: SiteRecord, email: str, password: str = PASSWORD) -> SiteClient:
    client = SiteClient(site)
    response = client.post("/api/auth/login", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    return client


def test_the_page_shows_storage_used_and_credits_where_charges_are_on(tab: SitePage) -> None:
    data = b"twelve bytes"
    tab.upload(data, "notes.txt")
    page = tab.goto("/account")
    quota = policy(tab.site)["files"]["quota_bytes"]
    expect(page.locator("#storage-text")).to_have_text(re.compile(rf"^{len(data)} B of .+ used$"))
    assert page.locator("#storage-meter").evaluate("m => [m.value, m.max]") == [len(data), quota]
    expect(page.locator("#account-email")).to_have_text(tab.account["email"])
    if policy(tab.site)["charges"]["enabled"]:
        expect(page.locator("#balance")).to_have_text(f"{STARTING_CREDITS:,} credits")
        entry = page.locator("#ledger-list li")
        expect(entry).to_have_count(1)
        expect(entry).to_contain_text("Credits added")
        expect(entry).to_contain_text(f"+{STARTING_CREDITS:,}")
        # 21 more grants, the balance raised by as much in the same statement: the books stay balanced
        # (the run's audit checks every account's ledger against its balance afterwards).
        db.execute(tab.site, "WITH added AS (INSERT INTO credit_ledger (account_id, kind, amount, reason) "
                             "SELECT $1, 'grant', n, 'page ' || n FROM generate_series(1, 21) AS n RETURNING amount) "
                             "UPDATE credit_account SET balance = balance + (SELECT sum(amount) FROM added) "
                             "WHERE account_id = $1", tab.account["id"])
        page.reload()
        expect(entry).to_have_count(PAGE_SIZE)
        expect(entry.first).to_contain_text("page 21")  # newest first; same created_at: the later id
        page.get_by_role("button", name="Show more").click()
        expect(entry).to_have_count(22)
        expect(page.get_by_role("button", name="Show more")).to_be_hidden()
        expect(entry.last).to_contain_text("site_tests")
    else:
        expect(page.locator("#balance")).to_have_count(0)
        expect(page.locator("#ledger-list")).to_have_count(0)
    expect(page.get_by_role("link", name="Account")).to_have_attribute("aria-current", "page")
    expect(page.locator("#ops-link")).to_be_hidden()  # not an operator
    fits(tab, "/account")
    if page.viewport_size["width"] == 390:
        tab.screenshot("account")


def test_change_the_password_by_keyboard(tab: SitePage) -> None:
    page = tab.goto("/account")
    elsewhere = other_device(tab.site, tab.account["email"])
    form = page.locator("#password-form")
    # A wrong current password is said in words, and the page stays (the session is still live).
    form.get_by_label("Current password").fill("not the password")
    form.get_by_label("New password").fill(NEW_PASSWORD)
    form.get_by_role("button", name="Change password").click()
    expect(page.locator("#password-message")).to_have_text("The password is incorrect.")
    expect(page).to_have_url(tab.url("/account"))

    form.get_by_label("Current password").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Tab")
    page.keyboard.press("Control+A")
    page.keyboard.type(NEW_PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator("#password-message")).to_have_text(
        "Your password was changed. Every other device was signed out.")
    expect(form.get_by_label("Current password")).to_have_value("")
    fits(tab, "/account after a password change")
    if page.viewport_size["width"] == 390:
        tab.screenshot("account-password-changed")
    assert elsewhere.get("/api/me").status_code == 401  # the other device's session ended
    elsewhere.close()
    assert tab.api("GET", "/api/me").status == 200  # this one got a fresh session
    other_device(tab.site, tab.account["email"], NEW_PASSWORD).close()


def test_the_email_form_says_what_happened(tab: SitePage) -> None:
    """Until the site can change an email address (the route exists), the form says it cannot."""
    page = tab.goto("/account")
    form = page.locator("#email-form")
    new_email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    form.get_by_label("New email").fill(new_email)
    form.get_by_label("Password").fill(PASSWORD)
    form.get_by_role("button", name="Change email").click()
    document = tab.api("GET", "/schema/openapi.json").json()
    if "/api/me/email" in document["paths"]:
        expected = f"We sent a link to {new_email}. Your email changes once you open it."
    else:
        expected = "Changing the email address is not available on this site yet."
    expect(page.locator("#email-message")).to_have_text(expected)
    fits(tab, "/account after the email form")


def test_sign_out_everywhere(tab: SitePage) -> None:
    page = tab.goto("/account")
    elsewhere = other_device(tab.site, tab.account["email"])
    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page).to_have_url(tab.url("/login"))
    assert elsewhere.get("/api/me").status_code == 401
    elsewhere.close()
    assert tab.api("GET", "/api/me").status == 401
    tab.goto("/account")
    expect(page).to_have_url(tab.url("/login?next=/account"))
    assert db.fetchval(tab.site, "SELECT count(*) FROM session WHERE account_id = $1 AND revoked_at IS NULL",
                       tab.account["id"]) == 0


def test_signing_out_everywhere_once_the_session_has_ended_goes_to_the_login_page(tab: SitePage) -> None:
    page = tab.page
    page.goto(tab.url("/account"), wait_until="networkidle")  # its loads done: they would see the 401 first
    assert tab.api("POST", "/api/auth/logout").status == 204  # ended behind the page's back
    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page).to_have_url(tab.url("/login"))


def test_delete_the_account_with_its_password(tab: SitePage) -> None:
    tab.upload(b"gone soon", "gone.txt")
    page = tab.goto("/account")
    form = page.locator("#delete-form")
    form.get_by_label("Password").fill(PASSWORD)
    form.get_by_role("button", name="Delete account").click()
    expect(page.locator("#delete-message")).to_have_text("Tick the box to confirm that everything is deleted.")
    form.get_by_label("I understand that everything is deleted").check()
    form.get_by_label("Password").fill("not the password")
    form.get_by_role("button", name="Delete account").click()
    expect(page.locator("#delete-message")).to_have_text("The password is incorrect.")
    fits(tab, "/account with a refused deletion")
    if page.viewport_size["width"] == 390:
        tab.screenshot("account-delete-refused")
    form.get_by_label("Password").fill(PASSWORD)
    form.get_by_role("button", name="Delete account").click()
    expect(page).to_have_url(tab.url("/login"))
    assert db.fetchval(tab.site, "SELECT count(*) FROM account WHERE id = $1", tab.account["id"]) == 0
    with SiteClient(tab.site) as client:
        again = client.post("/api/auth/login", json={"email": tab.account["email"], "password": PASSWORD})
        assert again.status_code == 401


def test_operators_see_the_ops_link_on_every_page(tab: SitePage) -> None:
    page = tab.goto("/files")
    expect(page.get_by_role("link", name="Account")).to_be_visible()
    expect(page.locator("#ops-link")).to_be_hidden()
    result = run_cli(tab.site, "operator", "grant", tab.account["email"])
    assert result.returncode == 0, result.stdout + result.stderr
    for path in ("/files", "/tasks", "/account"):
        tab.goto(path)
        expect(page.get_by_role("link", name="Ops")).to_be_visible()
        fits(tab, f"{path} with the Ops link")
    page.get_by_role("link", name="Ops").click()
    expect(page).to_have_url(tab.url("/ops"))
    expect(page.get_by_role("link", name="Ops")).to_have_attribute("aria-current", "page")
    if page.viewport_size["width"] == 390:
        tab.screenshot("ops-with-account-nav")
