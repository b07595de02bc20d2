"""The production lane (``verify --proxy``): every site behind nginx over https, trusting it alone.

What the proxy changes for a site: its session cookie (``__Host-``, Secure) and HSTS; the client
address it throttles by, which must be the real client's seen through the proxy; and an
``X-Forwarded-For`` from anyone but the proxy, which must not be believed. The client address is
observed where the site keeps it: the keys of its ``rate_limit_window`` rows (``register:<address>``),
read with SQL, and the answers of its per-address throttles.

Clients pick their loopback source address (httpx's ``local_address``), one set per scenario, so
parallel scenarios never share a throttle bucket. Outside the proxy lane these scenarios skip; in
it the harness fails the run unless every one of them passed.
"""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser

from harness.mailbox import asks_verified, verification_token
from harness.proxy import RECEIVE_MARGIN, tls_verify
from harness.state import SiteRecord, SitesFile

from . import db
from .browser import site_page
from .client import PASSWORD, error_code, policy
from .conftest import RUN

pytestmark = pytest.mark.skipif(RUN.proxy is None, reason="the production lane only (verify --proxy)")

FORGED = "203.0.113.7"  # TEST-NET-3: an address no client of the run has


def client_from(site: SiteRecord, address: str, *, direct: bool = False,
                forwarded_for: str | None = None) -> httpx.Client:
    """A client connecting from loopback ``address``: through the proxy, or ``direct`` to the site's
    own port, as an attacker on the site's network would (sending the site's Origin either way)."""
    headers = {"Origin": site.origin}
    if forwarded_for:
        headers["X-Forwarded-For"] = forwarded_for
    if direct:
        return httpx.Client(base_url=site.upstream_url, headers=headers, timeout=30,
                            transport=httpx.HTTPTransport(local_address=address))
    return httpx.Client(base_url=site.base_url, headers=headers, timeout=30,
                        transport=httpx.HTTPTransport(verify=tls_verify(site), local_address=address))


def registrations_from(site: SiteRecord, address: str) -> int:
    """How many registrations the site counted for ``address`` (its throttle's own rows)."""
    return db.fetchval(site, "SELECT coalesce(sum(count), 0) FROM rate_limit_window WHERE key = $1",
                       f"register:{address}")


def register(client: httpx.Client, site: SiteRecord) -> str:
    """A fresh account signed in on ``client``, its mailed link followed where the site asks for one."""
    email = f"{site.slug}-{secrets.token_hex(5)}@example.com"
    response = client.post("/api/auth/register", json={"email": email, "password": PASSWORD})
    assert response.status_code == 201, response.text
    if asks_verified(site):
        token = verification_token(site, email)
        assert client.post("/api/auth/verify/confirm", json={"token": token}).status_code == 204
    return email


def login(client: httpx.Client, email: str, password: str = "not the password") -> int:
    return client.post("/api/auth/login", json={"email": email, "password": password}).status_code


def in_one_window(site: SiteRecord, scenario: Callable[[], None]) -> None:
    """Run ``scenario`` (which counts attempts) within one of the throttle's 15-minute windows; if
    the window turned while it ran the counts were split, so it runs once more, on fresh accounts."""
    window = "SELECT date_bin('15 minutes', now(), TIMESTAMPTZ '2000-01-01')"
    for _ in range(2):
        started = db.fetchval(site, window)
        try:
            scenario()
            return
        except AssertionError:
            if db.fetchval(site, window) == started:
                raise


def test_the_session_cookie_is_host_prefixed_and_secure(site: SiteRecord) -> None:
    namespace = policy(site)["site"]["auth_namespace"]
    assert site.base_url.startswith("https://") and site.cookie_name == f"__Host-{namespace}_session"
    with client_from(site, "127.0.2.1") as client:
        response = client.post("/api/auth/register", json={
            "email": f"{site.slug}-{secrets.token_hex(5)}@example.com", "password": PASSWORD})
        assert response.status_code == 201, response.text
        cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(f"{site.cookie_name}="))
        pairs = (part.partition("=") for part in cookie.split(";")[1:])
        attributes = {name.strip().lower(): value for name, _, value in pairs}
        assert {"secure", "httponly"} <= set(attributes) and "domain" not in attributes, cookie
        assert attributes["path"] == "/" and attributes["samesite"].lower() == "lax", cookie
        assert response.headers["strict-transport-security"].startswith("max-age=")
        assert client.get("/api/me").status_code == 200  # the cookie comes back over https


def test_sign_out_clears_the_host_cookie_in_chromium(site: SiteRecord, browser: Browser) -> None:
    """Chromium ignores a clearing Set-Cookie for a ``__Host-`` name that is not Secure: the page's
    own fetches sign up and out, and the browser's cookie store is what is looked at."""
    email = f"{site.slug}-{secrets.token_hex(5)}@example.com"
    post = """async ([path, body]) => (await fetch(path, {method: "POST", body: body && JSON.stringify(body),
                                                        headers: {"Content-Type": "application/json"}})).status"""
    with site_page(browser, site) as tab:
        tab.goto("/login")

        def cookies() -> list[str]:
            return [c["name"] for c in tab.context.cookies(site.base_url)]

        assert tab.page.evaluate(post, ["/api/auth/register", {"email": email, "password": PASSWORD}]) == 201
        assert site.cookie_name in cookies()
        assert tab.page.evaluate(post, ["/api/auth/logout", None]) == 204
        assert site.cookie_name not in cookies()


def test_the_site_sees_the_real_client_through_the_proxy(site: SiteRecord) -> None:
    # The client's own X-Forwarded-For is a lie the proxy drops: it sends the peer it saw.
    with client_from(site, "127.0.2.2", forwarded_for=FORGED) as client:
        register(client, site)
    assert registrations_from(site, "127.0.2.2") == 1
    assert registrations_from(site, FORGED) == 0
    assert registrations_from(site, RUN.proxy.source) == 0  # not the proxy's own address either


def test_a_forged_forwarded_for_sent_straight_to_the_site_is_not_believed(site: SiteRecord) -> None:
    with client_from(site, "127.0.2.3", direct=True, forwarded_for=FORGED) as forger:
        register(forger, site)
    assert registrations_from(site, "127.0.2.3") == 1
    assert registrations_from(site, FORGED) == 0
    per_account = policy(site)["auth"]["login_attempts_per_account"]

    def scenario() -> None:
        with client_from(site, "127.0.2.4") as owner:
            email = register(owner, site)
            # A fresh forged address on every guess: were the header believed, each would be a new client.
            statuses = []
            for guess in range(per_account + 1):
                with client_from(site, "127.0.2.5", direct=True, forwarded_for=f"198.51.100.{guess + 1}") as forger:
                    statuses.append(login(forger, email))
            assert statuses == [401] * per_account + [429], statuses  # one bucket: the peer's own
            assert login(owner, email, PASSWORD) == 200  # the owner, through the proxy, is still heard

    in_one_window(site, scenario)


def test_throttles_count_per_real_client(site: SiteRecord) -> None:
    per_account = policy(site)["auth"]["login_attempts_per_account"]

    def scenario() -> None:
        with (client_from(site, "127.0.2.6") as owner, client_from(site, "127.0.2.7") as stranger,
              client_from(site, "127.0.2.8") as another):
            email = register(owner, site)
            statuses = [login(stranger, email) for _ in range(per_account + 1)]
            assert statuses == [401] * per_account + [429], statuses
            locked = stranger.post("/api/auth/login", json={"email": email, "password": PASSWORD})
            assert locked.status_code == 429 and error_code(locked) == "RATE_LIMITED"
            assert login(another, email) == 401  # another client has a bucket of its own
            assert login(owner, email, PASSWORD) == 200

    in_one_window(site, scenario)


def test_sites_have_hosts_of_their_own_and_two_share_one(run: SitesFile) -> None:
    hosts = [urlsplit(site.base_url) for site in run.sites]
    assert all(site.origin == site.base_url for site in run.sites)
    assert len({(h.hostname, h.port) for h in hosts}) == len(run.sites)  # an origin each
    per_host = {name: [h for h in hosts if h.hostname == name] for name in {h.hostname for h in hosts}}
    shared = [same for same in per_host.values() if len(same) > 1]
    assert len(shared) == 1 and len(shared[0]) == 2  # one pair: one host, two ports
    assert len(per_host) == len(run.sites) - 1  # every other site on a host of its own
    # the sites listen where only the proxy (and the scenarios above, on purpose) reach them
    assert all(urlsplit(site.upstream_url).hostname == "127.0.0.1" for site in run.sites)


# --- bodies stream through the proxy: the site's upload limits apply to the client ---------------


def start_upload(site: SiteRecord, address: str, length: int, first: bytes = b"") -> socket.socket:
    """A raw upload over TLS through the proxy announcing ``length`` bytes whose sender stops after
    ``first``, from loopback ``address`` on a new account of its own."""
    with client_from(site, address) as client:
        register(client, site)
        cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    public = urlsplit(site.base_url)
    raw = socket.create_connection((public.hostname, public.port), timeout=30, source_address=(address, 0))
    conn = tls_verify(site).wrap_socket(raw, server_hostname=public.hostname)
    conn.sendall((f"POST /api/files?name=slow.txt HTTP/1.1\r\nHost: {public.netloc}\r\nOrigin: {site.origin}\r\n"
                  f"Cookie: {cookie}\r\nContent-Type: text/plain\r\nContent-Length: {length}\r\n\r\n").encode()
                 + first)
    return conn


def answer_of(conn: socket.socket, deadline: float) -> tuple[int | None, dict | None]:
    """The status and JSON body that come back by ``deadline`` (time.monotonic()); (None, None) when the
    connection closes or the deadline passes without a whole answer."""
    received = b""
    while True:
        head, _, body = received.partition(b"\r\n\r\n")
        if _:
            fields = dict(line.split(": ", 1) for line in head.decode().lower().split("\r\n")[1:])
            if len(body) >= int(fields.get("content-length", 0)):
                status = int(head.split()[1])
                return status, json.loads(body) if body else None
        left = deadline - time.monotonic()
        if left <= 0:
            return None, None
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except (TimeoutError, OSError):
            return None, None
        if not chunk:
            return None, None
        received += chunk


def test_an_oversized_upload_is_refused_by_the_site_before_its_body_is_sent(site: SiteRecord) -> None:
    """The site refuses from the announced length alone; a proxy that collects the body first would
    keep the client sending (or waiting) and never let the site's check apply."""
    limit = policy(site)["files"]["max_file_bytes"]
    conn = start_upload(site, "127.0.2.9", limit + 1)  # within nginx's limit, one byte over the site's
    try:
        status, body = answer_of(conn, time.monotonic() + 20)
    finally:
        conn.close()
    assert (status, body and body["error"]["code"]) == (413, "FILE_TOO_LARGE"), body


def test_a_stalled_upload_through_the_proxy_is_cut_by_the_site(run: SitesFile) -> None:
    """Every site at once (each waits its receive_seconds): a body that stops arriving is answered by
    the site, 408 UPLOAD_TIMEOUT in its envelope, after its [files] receive_seconds — before the proxy's
    own timer (RECEIVE_MARGIN later) would close the connection without an answer."""
    stalled = []
    for site in run.sites:
        limit = policy(site)["files"]["max_file_bytes"]
        stalled.append((site, time.monotonic(), start_upload(site, "127.0.2.10", limit, b"x" * 10)))
    try:
        for site, started, conn in stalled:
            receive = policy(site)["files"]["receive_seconds"]
            status, body = answer_of(conn, started + receive + RECEIVE_MARGIN / 2)
            waited = time.monotonic() - started
            assert (status, body and body["error"]["code"]) == (408, "UPLOAD_TIMEOUT"), (site.slug, waited, body)
            assert waited >= receive - 1, (site.slug, waited)  # the site's deadline, not an earlier cut
    finally:
        for _, _, conn in stalled:
            conn.close()
