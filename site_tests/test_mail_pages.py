"""Mailed links in real Chromium on every live site: a password reset started from the sign-in page and
finished from the mailed link, an address verified from its link, and the two pages at 320 and 390 px.
Screenshots at 390 px go to artifacts/."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from harness.mailbox import link_of, registration_mails, wait_mail
from harness.state import SiteRecord

from .browser import WIDTHS, SitePage, site_page
from .client import PASSWORD

expect.set_options(timeout=20_000)

NEW_PASSWORD = "chromium new password 3"


@pytest.fixture
def tab(browser: Browser, site: SiteRecord) -> Iterator[SitePage]:
    with site_page(browser, site) as opened:
        yield opened
        assert opened.console.problems == [], opened.console.problems


def test_reset_a_forgotten_password_from_the_sign_in_page(tab: SitePage) -> None:
    email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    tab.register(email)
    tab.context.clear_cookies()
    page = tab.goto("/login")
    page.get_by_role("link", name="Forgot your password?").click()
    expect(page).to_have_url(tab.url("/reset"))
    page.fill("#reset-request input[name=email]", email)
    page.get_by_role("button", name="Mail me a link").click()
    expect(page.locator("#reset-message")).to_contain_text("on its way")
    if page.viewport_size["width"] == 390:
        tab.screenshot("reset-asked")

    link = link_of(wait_mail(tab.site, email, kind="reset"))
    assert link.startswith(f"{tab.site.origin}/reset#token=")
    page.goto(link.replace(tab.site.origin, tab.site.base_url, 1))
    expect(page.locator("#reset-confirm")).to_be_visible()
    assert "#" not in page.url  # the token left the address bar (and the history) at once
    page.fill("#reset-confirm input[name=password]", NEW_PASSWORD)
    page.get_by_role("button", name="Set the password").click()
    expect(page.locator("#reset-message")).to_have_text("Your password is set. Sign in with it.")
    tab.screenshot("reset-done")

    page = tab.goto("/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", NEW_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(tab.url("/files"))


def test_a_used_reset_link_says_so(tab: SitePage) -> None:
    email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    tab.register(email)
    assert tab.api("POST", "/api/auth/reset", data={"email": email}).status == 202
    link = link_of(wait_mail(tab.site, email, kind="reset")).replace(tab.site.origin, tab.site.base_url, 1)
    for attempt in range(2):
        page = tab.page
        page.goto(link)
        page.fill("#reset-confirm input[name=password]", NEW_PASSWORD)
        page.get_by_role("button", name="Set the password").click()
        message = page.locator("#reset-message")
        if attempt == 0:
            expect(message).to_have_text("Your password is set. Sign in with it.")
        else:
            expect(message).to_contain_text("invalid or has expired")
            expect(message).to_have_class("message error")


def test_verify_an_address_from_its_mailed_link(tab: SitePage) -> None:
    email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    tab.register(email, verified=False)
    page = tab.goto("/verify")
    expect(page.locator("#verify-message")).to_contain_text(email)
    page.get_by_role("button", name="Mail me a new link").click()
    expect(page.locator("#verify-message")).to_contain_text("on its way")
    link = link_of(wait_mail(tab.site, email, registration_mails(tab.site) + 1, "verify"))  # the new one
    assert link.startswith(f"{tab.site.origin}/verify#token=")
    page.goto(link.replace(tab.site.origin, tab.site.base_url, 1))
    expect(page.locator("#verify-message")).to_have_text("Your email address is confirmed.")
    assert "#" not in page.url
    tab.screenshot("verified")
    assert tab.api("GET", "/api/me").json()["emailVerified"] is True
    page = tab.goto("/verify")
    expect(page.locator("#verify-message")).to_contain_text("is confirmed")
    expect(page.get_by_role("button", name="Mail me a new link")).to_have_count(0)


def test_confirm_a_new_address_from_its_mailed_link(tab: SitePage) -> None:
    email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    new_email = f"{tab.site.slug}-{secrets.token_hex(5)}@example.com"
    tab.register(email)
    asked = tab.api("POST", "/api/me/email", data={"newEmail": new_email, "password": PASSWORD})
    assert asked.status == 202, asked.text()
    link = link_of(wait_mail(tab.site, new_email, kind="change"))
    page = tab.page
    page.goto(link.replace(tab.site.origin, tab.site.base_url, 1))
    expect(page.locator("#verify-message")).to_have_text("Your account now uses this email address.")
    assert tab.api("GET", "/api/me").json()["email"] == new_email


def test_mail_pages_fit_320_and_390_pixels(tab: SitePage) -> None:
    tab.register(f"{tab.site.slug}-{secrets.token_hex(5)}@example.com", verified=False)
    for width in WIDTHS:
        tab.check_layouts({"verify": ("/verify", "#verify-resend button:enabled")}, width)
    tab.context.clear_cookies()
    for width in WIDTHS:
        tab.check_layouts({"reset": ("/reset", "#reset-request button:enabled"),
                           "reset-link": ("/reset#token=" + "A" * 43, "#reset-confirm button:enabled"),
                           "verify-signed-out": ("/verify", "#verify-message")}, width)
