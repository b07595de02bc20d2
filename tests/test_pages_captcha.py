"""The captcha widget end to end in real Chromium: a rendered site with Turnstile on, its pages, and
a Turnstile-compatible verifier on loopback. Only Cloudflare's widget script is stood in for (this
machine cannot reach it); the page's own code, the CSP and the server-side verification are real."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import pytest
from playwright.sync_api import Route, expect, sync_playwright

from harness import template_module
from site_tests.browser import PHONE, launch, require_chromium

from .dev_site import dev_site

SITE_KEY = "1x00000000000000000000AA"
PASSWORD = "captcha test password"

# Like the real widget: a challenge the visitor completes, then a hidden field with the token.
FAKE_WIDGET = """
window.turnstile = {
  reset(container) { container.querySelector("[name='cf-turnstile-response']").value = ""; },
};
for (const container of document.querySelectorAll(".cf-turnstile")) {
  const field = document.createElement("input");
  field.type = "hidden";
  field.name = "cf-turnstile-response";
  const human = document.createElement("button");
  human.type = "button";
  human.textContent = "I am human";
  human.addEventListener("click", () => { field.value = "ok:" + container.dataset.action; });
  container.append(field, human);
}
"""


@pytest.mark.slow
def test_the_widgets_token_is_verified_by_the_server(installed_site: tuple[Path, str], tmp_path: Path) -> None:
    require_chromium()
    site_dir, python = installed_site
    policy = (site_dir / "site.toml").read_text()
    captcha_on = re.sub(r"(?ms)^\[captcha\].*", f'[captcha]\nprovider = "turnstile"\nsite_key = "{SITE_KEY}"\n'
                        'actions = ["task_submit", "task_retry"]\n', policy)
    config = tmp_path / "site.toml"
    config.write_text(captcha_on)
    turnstile = template_module("tests/turnstile.py", "sitekit_turnstile")
    with turnstile.Verifier(hostname="127.0.0.1") as verifier, dev_site(
        site_dir, python, "zeta9", tmp_path / "state",
        env={"SITE_CONFIG": str(config), "TURNSTILE_SECRET_KEY": turnstile.SECRET, "CAPTCHA_VERIFY_URL": verifier.url},
    ) as dev, sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport=PHONE)
        problems: list[str] = []

        def widget(route: Route) -> None:
            route.fulfill(status=200, content_type="text/javascript", body=FAKE_WIDGET)

        context.route(re.compile(r"^https://challenges\.cloudflare\.com/turnstile/v0/api\.js"), widget)
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
        origin = {"Origin": dev.url}
        email = f"captcha-{secrets.token_hex(4)}@example.com"
        assert context.request.post(f"{dev.url}/api/auth/register", headers=origin,
                                    data={"email": email, "password": PASSWORD}).status == 201
        assert context.request.post(f"{dev.url}/api/files?name=in.txt", data=b"text  \n",
                                    headers={**origin, "Content-Type": "text/plain"}).status == 201

        page.goto(f"{dev.url}/tasks")
        page.locator("#start-file").select_option(label="in.txt")
        page.locator("#start-button").click()
        expect(page.locator("#start-message")).to_have_text("Complete the captcha check first.")
        assert verifier.requests == []

        page.get_by_role("button", name="I am human").click()
        page.locator("#start-button").click()
        page.wait_for_url(re.compile(r"/tasks/[0-9a-f-]{36}$"))
        expect(page.locator("#status")).to_have_text("Succeeded")
        assert [form["response"] for form in verifier.requests] == [["ok:task_submit"]]
        assert problems == []
        browser.close()
