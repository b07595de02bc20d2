"""Mail on every live site, through its own SMTP sink: password reset, address verification and email
change end to end (the worker sends after the commit), and their isolation — a link of site A means
nothing on site B, one of account X nothing for account Y, and a site's mails name only its origin.
Through the client helpers these run behind the TLS proxy in the production lane as well."""

from __future__ import annotations

import secrets

from harness import mailbox
from harness.mailbox import asks_verified, link_of, messages, registration_mails, text_of, token_of, urls, wait_mail
from harness.state import SiteRecord

from .client import PASSWORD, SiteClient, error_code

NEW_PASSWORD = "site tests new password 2"


def _email(site: SiteRecord) -> str:
    return f"{site.slug}-{secrets.token_hex(5)}@example.com"


def _reset_token(client: SiteClient, email: str, count: int = 1) -> str:
    asked = client.post("/api/auth/reset", json={"email": email})
    assert asked.status_code == 202 and asked.json() == {"status": "accepted"}, asked.text
    return token_of(wait_mail(client.site, email, count, "reset"))


def test_a_password_reset_by_mail_ends_every_session(site: SiteRecord) -> None:
    with SiteClient(site) as owner, SiteClient(site) as helper:
        account = owner.register()
        mail_token = _reset_token(helper, account["email"])
        mail = wait_mail(site, account["email"], kind="reset")
        assert link_of(mail).startswith(f"{site.origin}/reset#token=")
        assert site.name in mail["Subject"] and mail["From"].addresses[0].display_name == site.name
        done = helper.post("/api/auth/reset/confirm", json={"token": mail_token, "password": NEW_PASSWORD})
        assert done.status_code == 204, done.text
        assert owner.get("/api/me").status_code == 401  # the owner's session ended
        assert helper.post("/api/auth/login", json={"email": account["email"], "password": PASSWORD}
                           ).status_code == 401
        assert helper.post("/api/auth/login", json={"email": account["email"], "password": NEW_PASSWORD}
                           ).status_code == 200
        again = helper.post("/api/auth/reset/confirm", json={"token": mail_token, "password": PASSWORD})
        assert again.status_code == 404 and error_code(again) == "TOKEN_INVALID"


def test_a_reset_for_an_unknown_address_answers_alike_and_sends_nothing(site: SiteRecord) -> None:
    unknown = _email(site)
    with SiteClient(site) as client:
        account = client.register()
        known_answer = client.post("/api/auth/reset", json={"email": account["email"]})
        unknown_answer = client.post("/api/auth/reset", json={"email": unknown})
    assert (known_answer.status_code, known_answer.content) == (unknown_answer.status_code, unknown_answer.content)
    wait_mail(site, account["email"], kind="reset")  # the known one's went; by then the unknown's would have too
    assert [m for m in messages(site) if m["To"] == unknown] == []


def test_verification_and_email_change_links(site: SiteRecord) -> None:
    with SiteClient(site) as client:
        account = client.register(verified=False)
        assert client.get("/api/me").json()["emailVerified"] is False
        assert client.post("/api/auth/verify/resend").status_code == 202
        verify = wait_mail(site, account["email"], registration_mails(site) + 1, "verify")  # the resent one
        assert link_of(verify).startswith(f"{site.origin}/verify#token=")
        assert client.post("/api/auth/verify/confirm", json={"token": token_of(verify)}).status_code == 204
        assert client.get("/api/me").json()["emailVerified"] is True

        new_email = _email(site)
        asked = client.post("/api/me/email", json={"newEmail": new_email, "password": PASSWORD})
        assert asked.status_code == 202, asked.text
        change = wait_mail(site, new_email)
        assert link_of(change).startswith(f"{site.origin}/verify#change=")
        assert client.get("/api/me").json()["email"] == account["email"]  # not before it is confirmed
        assert client.post("/api/auth/email/confirm", json={"token": token_of(change, "change")}).status_code == 204
        assert client.get("/api/me").json()["email"] == new_email
        told = wait_mail(site, account["email"], kind="notice")  # the old address is told
        assert new_email not in text_of(told) and new_email.split("@")[1] in text_of(told)


def test_an_unverified_account_may_not_upload_until_it_follows_its_link(site: SiteRecord) -> None:
    """On a site that asks for proven addresses ([auth] verify_email: the harness's second site); on the
    others registering mails nothing and an upload needs no link."""
    with SiteClient(site) as client:
        account = client.register(verified=False)
        if not asks_verified(site):
            assert client.upload_raw(b"hello").status_code == 201
            _reset_token(client, account["email"])  # mailed after anything registering would have mailed
            assert [mailbox.kind_of(mail) for mail in mailbox.to(site, account["email"])] == ["reset"]
            return
        refused = client.upload_raw(b"hello")
        assert refused.status_code == 403 and error_code(refused) == "EMAIL_UNVERIFIED"
        mail = wait_mail(site, account["email"], kind="verify")  # sent on registration
        assert client.post("/api/auth/verify/confirm", json={"token": token_of(mail)}).status_code == 204
        assert client.upload_raw(b"hello").status_code == 201


def test_a_link_of_one_account_does_nothing_for_another(site: SiteRecord) -> None:
    with SiteClient(site) as x, SiteClient(site) as y:
        account_x, account_y = x.register(verified=False), y.register(verified=False)
        x.post("/api/auth/verify/resend")
        token = token_of(wait_mail(site, account_x["email"], kind="verify"))
        # Y following X's link proves X's address, never Y's
        assert y.post("/api/auth/verify/confirm", json={"token": token}).status_code == 204
        assert y.get("/api/me").json()["emailVerified"] is False
        assert x.get("/api/me").json()["emailVerified"] is True
        # X's reset link sets X's password, never Y's
        reset = _reset_token(y, account_x["email"])
        assert y.post("/api/auth/reset/confirm", json={"token": reset, "password": NEW_PASSWORD}).status_code == 204
        assert y.get("/api/me").json()["email"] == account_y["email"]  # Y still signed in, as Y
        y.cookies.clear()
        assert y.post("/api/auth/login", json={"email": account_y["email"], "password": PASSWORD}).status_code == 200


def test_a_link_of_one_site_means_nothing_on_another(pair: tuple[SiteRecord, SiteRecord]) -> None:
    a, b = pair
    email = _email(a)
    with SiteClient(a) as on_a, SiteClient(b) as on_b:
        on_a.register(email, verified=False)
        on_b.register(email, verified=False)  # the same address, an account on each site
        reset = _reset_token(on_a, email)
        on_a.post("/api/auth/verify/resend")
        verify = token_of(wait_mail(a, email, registration_mails(a) + 1, "verify"))
        new_email = _email(a)
        assert on_a.post("/api/me/email", json={"newEmail": new_email, "password": PASSWORD}).status_code == 202
        change = token_of(wait_mail(a, new_email, kind="change"), "change")
        answers = [
            on_b.post("/api/auth/reset/confirm", json={"token": reset, "password": NEW_PASSWORD}),
            on_b.post("/api/auth/verify/confirm", json={"token": verify}),
            on_b.post("/api/auth/email/confirm", json={"token": change}),
        ]
        assert [(r.status_code, error_code(r)) for r in answers] == [(404, "TOKEN_INVALID")] * 3
        assert on_b.get("/api/me").json() == {**on_b.account, "operator": False, "emailVerified": False}
        on_b.cookies.clear()
        assert on_b.post("/api/auth/login", json={"email": email, "password": PASSWORD}).status_code == 200
        # and on A each still works
        assert on_a.post("/api/auth/verify/confirm", json={"token": verify}).status_code == 204
    assert [m for m in messages(b) if m["To"] == new_email] == []


def test_a_sites_mails_carry_only_its_own_origin(pair: tuple[SiteRecord, SiteRecord]) -> None:
    a, b = pair
    with SiteClient(a) as client:
        account = client.register(verified=False)
        client.post("/api/auth/reset", json={"email": account["email"]})
        client.post("/api/auth/verify/resend")
        wait_mail(a, account["email"], kind="reset")
        wait_mail(a, account["email"], registration_mails(a) + 1, "verify")
    mine = messages(a)
    assert mine
    for message in mine:
        assert message["From"].addresses[0].display_name == a.name
        found = urls(message)
        assert all(url == a.origin or url.startswith(f"{a.origin}/") for url in found), found
        body = text_of(message)
        for other in {b.origin, b.upstream_url, b.base_url}:
            assert f"{other}/" not in body
        assert b.name not in body and b.name not in str(message["Subject"])
