"""Every mutation must carry the site's own Origin."""

from __future__ import annotations

import httpx
import pytest

from harness.proxy import tls_verify
from harness.state import SiteRecord

from .client import PASSWORD, SiteClient, error_code


@pytest.mark.parametrize("origin", [None, "http://evil.example", "null"])
def test_mutation_without_the_sites_origin_is_refused(user: SiteClient, site: SiteRecord, origin: str | None) -> None:
    headers = {k: v for k, v in user.headers.items() if k.lower() != "origin"}
    if origin:
        headers["Origin"] = origin
    # Each refusal on a connection of its own. The site refuses before reading the body; behind
    # nginx, which streams bodies through (proxy_request_buffering off), an answer that comes back
    # while nginx still counts the body as being read ends the keep-alive connection after the
    # response, and the next request sent on it met a closed connection (seen once in CI).
    headers["Connection"] = "close"
    with httpx.Client(base_url=site.base_url, cookies=user.cookies, headers=headers,
                      verify=tls_verify(site)) as bare:
        for path, body in (
            ("/api/auth/register", {"email": "x@example.com", "password": PASSWORD}),
            ("/api/auth/login", {"email": user.account["email"], "password": PASSWORD}),
            ("/api/auth/logout", None),
        ):
            response = bare.post(path, json=body)
            assert response.status_code == 403, (path, response.text)
            assert error_code(response) == "ORIGIN_MISMATCH"
    # The refused logout did nothing: the session still works.
    assert user.get("/api/me").status_code == 200


def test_another_sites_origin_is_foreign(pair: tuple[SiteRecord, SiteRecord]) -> None:
    site, other = pair
    with SiteClient(site) as client:
        client.register()
        response = client.post("/api/auth/logout", headers={"Origin": other.origin})
        assert response.status_code == 403 and error_code(response) == "ORIGIN_MISMATCH"
        assert client.get("/api/me").status_code == 200
