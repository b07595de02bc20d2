"""Real Chromium (Debian's /usr/bin/chromium) driven by playwright, for the page scenarios.

No browser is ever downloaded: playwright starts the system binary. Without it the
page scenarios skip — unless SITEKIT_REQUIRE_TOOLS is set (the kit's test command
and CI set it), when a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Playwright, expect

from harness import KIT_ROOT
from harness.mailbox import asks_verified, link_of, verification_token, wait_mail
from harness.state import SiteRecord

from .client import PASSWORD, SiteClient

CHROMIUM = Path(os.environ.get("SITEKIT_CHROMIUM", "/usr/bin/chromium"))
# Chromium's own calls home are refused on a closed network; these keep it quiet.
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-gpu", "--no-first-run"]
PHONE = {"width": 390, "height": 844}
WIDTHS = (320, 390)
ARTIFACTS = Path(os.environ.get("SITEKIT_ARTIFACTS", KIT_ROOT / "artifacts"))
CSP_VIOLATION = re.compile(r"Content Security Policy|Refused to (load|execute|apply)", re.IGNORECASE)


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is not installed (apt-get install chromium)"
    if os.environ.get("SITEKIT_REQUIRE_TOOLS"):
        pytest.fail(message)
    pytest.skip(message)


def launch(playwright: Playwright, pinned_spki: str | None = None) -> Browser:
    """Chromium; ``pinned_spki`` is the run's server key behind the proxy (verify --proxy)."""
    args = list(ARGS)
    if pinned_spki is not None:
        # Chromium accepts the run's one server key and no other untrusted certificate:
        # pinning it is a flag, where trusting the CA would take an NSS store.
        args.append(f"--ignore-certificate-errors-spki-list={pinned_spki}")
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)


class Console:
    """What a page said that a user never should see happen: CSP refusals and script errors."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def message(self, message: ConsoleMessage) -> None:
        if CSP_VIOLATION.search(message.text) or (message.type == "error" and "Failed to load resource" not in
                                                  message.text):
            self.problems.append(f"{message.type}: {message.text}")

    def page_error(self, error: Exception) -> None:
        self.problems.append(f"uncaught: {error}")


class SitePage:
    """One browser tab on one site, with what its console reported."""

    def __init__(self, site: SiteRecord, context: BrowserContext) -> None:
        self.account: dict | None = None
        self.site = site
        self.context = context
        self.console = Console()
        self.page = context.new_page()
        self.page.on("console", self.console.message)
        self.page.on("pageerror", self.console.page_error)

    def url(self, path: str) -> str:
        return f"{self.site.base_url}{path}"

    def goto(self, path: str) -> Page:
        self.page.goto(self.url(path))
        return self.page

    def api(self, method: str, path: str, **kwargs):
        """The JSON API with the browser's own cookies (and the site's Origin, as its pages send)."""
        return self.context.request.fetch(self.url(path), method=method,
                                          headers={"Origin": self.site.origin, **kwargs.pop("headers", {})},
                                          **kwargs)

    def register(self, email: str, *, verified: bool = True) -> dict:
        """A fresh account, signed in in this tab's browser; where the site asks for a proven address it
        follows the link mailed on registration (unless ``verified`` is False)."""
        response = self.api("POST", "/api/auth/register", data={"email": email, "password": PASSWORD})
        assert response.status == 201, response.text()
        if verified and asks_verified(self.site):
            token = verification_token(self.site, email)
            confirmed = self.api("POST", "/api/auth/verify/confirm", data={"token": token})
            assert confirmed.status == 204, confirmed.text()
        return response.json()

    def follow_verification(self, email: str) -> None:
        """Open the link mailed to ``email`` on registration in this tab (on a site that asks for a
        proven address)."""
        link = link_of(wait_mail(self.site, email, kind="verify"))
        self.page.goto(link.replace(self.site.origin, self.site.base_url, 1))
        expect(self.page.locator("#verify-message")).to_have_text("Your email address is confirmed.")

    def upload(self, data: bytes, name: str, content_type: str = "text/plain") -> dict:
        response = self.api("POST", f"/api/files?name={name}", data=data, headers={"Content-Type": content_type})
        assert response.status == 201, response.text()
        return response.json()

    def switch_tab(self, state: str) -> None:
        """As if the visitor switched to another tab ("hidden") or back ("visible")."""
        self.page.evaluate("""state => {
            Object.defineProperty(document, "visibilityState", { value: state, configurable: true });
            document.dispatchEvent(new Event("visibilitychange"));
        }""", state)

    def session_token(self) -> str:
        return next(c["value"] for c in self.context.cookies(self.site.base_url) if c["name"] == self.site.cookie_name)

    @contextmanager
    def other_device(self) -> Iterator[SiteClient]:
        """The same account on another device: an HTTP client holding this tab's session."""
        with SiteClient(self.site) as client:
            client.cookies.set(self.site.cookie_name, self.session_token())
            yield client

    def screenshot(self, name: str) -> Path:
        path = ARTIFACTS / "screenshots" / self.site.slug / f"{name}-{self.page.viewport_size['width']}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def overflow(self) -> tuple[int, int]:
        """(scrollWidth, innerWidth): the page scrolls sideways when the first is larger."""
        width, inner = self.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        return width, inner

    def broken_words(self) -> list[str]:
        """The words of table cells laid out on more than one line ("Starte|d", "STORAGE_F|ULL")."""
        return self.page.evaluate("""() => {
            const broken = [];
            for (const cell of document.querySelectorAll("table td, table th")) {
                const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    for (const word of node.data.matchAll(/\\S+/g)) {
                        const range = document.createRange();
                        range.setStart(node, word.index);
                        range.setEnd(node, word.index + word[0].length);
                        if (range.getClientRects().length > 1) broken.push(word[0]);
                    }
                }
            }
            return broken;
        }""")

    def check_layouts(self, pages: dict[str, tuple[str, str]], width: int) -> None:
        """Each page ``name: (path, a selector visible once it has loaded)`` at ``width`` px: no
        sideways scroll; a screenshot of each at 390 px."""
        self.page.set_viewport_size({"width": width, "height": 800})
        for name, (path, loaded) in pages.items():
            self.goto(path)
            expect(self.page.locator(loaded)).to_be_visible()
            scroll, inner = self.overflow()
            assert scroll <= inner, f"{path} at {width} px: scrollWidth {scroll} > innerWidth {inner}"
            assert self.broken_words() == [], f"{path} at {width} px: words broken inside a table cell"
            if width == 390:
                self.screenshot(name)


@contextmanager
def site_page(browser: Browser, site: SiteRecord, **options) -> Iterator[SitePage]:
    context = browser.new_context(viewport=PHONE, accept_downloads=True, **options)
    context.set_default_timeout(20_000)
    try:
        yield SitePage(site, context)
    finally:
        context.close()
