"""Sites on one host share a browser cookie jar, servers and buckets, yet stay apart."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

import httpx

from harness.proxy import tls_verify
from harness.state import SiteRecord

from . import db
from .client import PASSWORD, SiteClient


def test_mixed_cookies_pick_each_sites_own_session(pair: tuple[SiteRecord, SiteRecord]) -> None:
    a, b = pair
    # One client for both sites, as one browser: its cookie jar ignores ports, so on one host
    # each site receives the other's cookie too and must pick its own. Sites on hosts of their
    # own (verify --proxy) never see each other's cookie.
    one_host = urlsplit(a.base_url).hostname == urlsplit(b.base_url).hostname
    with httpx.Client(timeout=30, verify=tls_verify(a)) as browser:
        accounts = {}
        for site in (a, b):
            response = browser.post(
                f"{site.base_url}/api/auth/register",
                json={"email": f"{site.slug}-{secrets.token_hex(5)}@example.com", "password": PASSWORD},
                headers={"Origin": site.origin},
            )
            assert response.status_code == 201, response.text
            accounts[site.slug] = response.json()
        assert {a.cookie_name, b.cookie_name} <= {c.name for c in browser.cookies.jar}
        for site in (a, b):
            request = browser.build_request("GET", f"{site.base_url}/api/me")
            sent = request.headers.get("cookie", "")
            other = b if site is a else a
            assert site.cookie_name in sent and (other.cookie_name in sent) == one_host
            assert browser.send(request).json() == {**accounts[site.slug], "operator": False, "emailVerified": False}


def test_a_sites_token_under_another_sites_cookie_name_is_refused(pair: tuple[SiteRecord, SiteRecord]) -> None:
    a, b = pair
    with SiteClient(a) as on_a, SiteClient(b) as on_b:
        on_a.register()
        token = on_a.session_token
        on_b.cookies.set(b.cookie_name, token)
        response = on_b.get("/api/me")
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "UNAUTHENTICATED"


def test_account_rows_land_only_in_their_own_database(run, site: SiteRecord) -> None:
    with SiteClient(site) as client:
        email = client.register()["email"]
    for other in run.sites:
        count = db.fetchval(other, "SELECT count(*) FROM account WHERE email = $1", email)
        assert count == (1 if other.slug == site.slug else 0), other.slug


def test_each_site_has_its_own_database(run) -> None:
    names = {db.fetchval(s, "SELECT current_database()") for s in run.sites}
    assert len(names) == len(run.sites)
