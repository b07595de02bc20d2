"""Accounts and sessions on every live site."""

from __future__ import annotations

from harness.state import SiteRecord

from .client import PASSWORD, SiteClient, error_code


def me_is(client: SiteClient, account: dict) -> None:
    """``/api/me`` is the account registered, and says (besides) that it is no operator and that no
    mailed link was followed yet."""
    me = client.get("/api/me").json()
    assert {key: me[key] for key in account} == account and me["operator"] is False
    assert me["emailVerified"] is False


def test_register_login_me_logout(client: SiteClient, site: SiteRecord) -> None:
    account = client.register(verified=False)
    me_is(client, account)

    cookie = next(c for c in client.cookies.jar if c.name == site.cookie_name)
    assert cookie.has_nonstandard_attr("HttpOnly")
    assert cookie.path == "/"

    assert client.post("/api/auth/logout").status_code == 204
    me = client.get("/api/me")
    assert me.status_code == 401 and error_code(me) == "UNAUTHENTICATED"

    login = client.post("/api/auth/login", json={"email": account["email"], "password": PASSWORD})
    assert login.status_code == 200 and login.json() == account
    me_is(client, account)


def test_wrong_password_is_refused(client: SiteClient) -> None:
    account = client.register()
    client.cookies.clear()
    response = client.post("/api/auth/login", json={"email": account["email"], "password": "not the password"})
    assert response.status_code == 401 and error_code(response) == "UNAUTHENTICATED"
    assert client.get("/api/me").status_code == 401


def test_revoked_session_cannot_be_replayed(user: SiteClient, site: SiteRecord) -> None:
    token = user.session_token
    assert token
    assert user.post("/api/auth/logout").status_code == 204
    with SiteClient(site) as replay:
        replay.cookies.set(site.cookie_name, token)
        assert replay.get("/api/me").status_code == 401
