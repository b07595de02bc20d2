"""A small HTTP client for one live site, used by every scenario."""

from __future__ import annotations

import secrets

import httpx

from harness.mailbox import asks_verified, verification_token
from harness.proxy import tls_verify
from harness.state import SiteRecord

PASSWORD = "site tests password 1"
STARTING_CREDITS = 1000


class SiteClient(httpx.Client):
    """httpx bound to a site's base URL, sending its Origin; ``cookies`` may be shared between sites."""

    def __init__(self, site: SiteRecord, cookies: httpx.Cookies | None = None) -> None:
        super().__init__(
            base_url=site.base_url,
            headers={"Origin": site.origin},
            cookies=cookies,
            timeout=30,
            follow_redirects=False,
            verify=tls_verify(site),  # behind the proxy (verify --proxy): the run's test CA
        )
        self.site = site
        self.account: dict | None = None

    def register(self, email: str | None = None, password: str = PASSWORD, *, verified: bool = True,
                 funded: bool = True) -> dict:
        """A fresh account, signed in. Where the site asks for a proven address it follows the link mailed
        on registration (unless ``verified`` is False); on a site that charges for tasks it starts with
        credits to spend (unless ``funded`` is False)."""
        email = email or f"{self.site.slug}-{secrets.token_hex(5)}@example.com"
        response = self.post("/api/auth/register", json={"email": email, "password": password})
        assert response.status_code == 201, response.text
        self.account = response.json()
        if verified and asks_verified(self.site):
            confirmed = self.post("/api/auth/verify/confirm", json={"token": verification_token(self.site, email)})
            assert confirmed.status_code == 204, confirmed.text
        if funded:
            grant_credits(self.site, self.account["id"])
        return self.account

    def upload_raw(self, data: bytes, name: str = "notes.txt", content_type: str = "text/plain") -> httpx.Response:
        return self.post("/api/files", params={"name": name}, content=data, headers={"Content-Type": content_type})

    def upload(self, data: bytes, name: str = "notes.txt", content_type: str = "text/plain") -> dict:
        response = self.upload_raw(data, name, content_type)
        assert response.status_code == 201, response.text
        return response.json()

    @property
    def session_token(self) -> str | None:
        return next((c.value for c in self.cookies.jar if c.name == self.site.cookie_name), None)


def grant_credits(site: SiteRecord, account_id: str, amount: int = STARTING_CREDITS) -> None:
    """On a site that charges for tasks, give a fresh account credits to spend — as an operator's
    grant would (the grant-credits command itself is exercised in test_charges)."""
    if not policy(site)["charges"]["enabled"]:
        return
    from . import db

    db.execute(
        site,
        "WITH funded AS (INSERT INTO credit_account (account_id, balance) VALUES ($1, $2)) "
        "INSERT INTO credit_ledger (account_id, kind, amount, reason) VALUES ($1, 'grant', $2, 'site_tests')",
        account_id, amount,
    )


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"domain", "code", "message"} <= set(body["error"]), body
    return body["error"]["code"]


def policy(site: SiteRecord) -> dict:
    """The site's rendered site.toml."""
    return site.policy()
