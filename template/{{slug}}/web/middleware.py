"""Request ids, the Origin check on every mutation, and the headers every response carries."""

from __future__ import annotations

import secrets

import msgspec
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp, BeforeMessageSendHookHandler, Message, Receive, Scope, Send

from ..errors import OriginMismatch
from ..settings import Settings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TURNSTILE = "https://challenges.cloudflare.com"


class RequestIdMiddleware(ASGIMiddleware):
    """Gives every request an id that error answers and logs refer to (sent as ``X-Request-Id``)."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        scope.setdefault("state", {})["request_id"] = secrets.token_hex(8)
        await next_app(scope, receive, send)


class OriginCheckMiddleware(ASGIMiddleware):
    """Every POST/PUT/PATCH/DELETE must carry ``Origin`` equal to the site's origin.

    Runs before authentication and body parsing, so a cross-site form post or
    fetch is refused before it can touch anything.
    """

    scopes = (ScopeType.HTTP,)

    def __init__(self, origin: str) -> None:
        self.origin = origin.encode()
        error = OriginMismatch()
        self.refusal = msgspec.json.encode(
            {"error": {"domain": error.domain, "code": error.code, "message": error.message}}
        )

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope["method"] not in SAFE_METHODS:
            origins = [value for key, value in scope["headers"] if key == b"origin"]
            if origins != [self.origin]:
                # Answered here (not raised) so the response passes the same send hooks as any other.
                await send({
                    "type": "http.response.start",
                    "status": OriginMismatch.status,
                    "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store")],
                })
                await send({"type": "http.response.body", "body": self.refusal})
                return
        await next_app(scope, receive, send)


def security_headers(settings: Settings) -> list[tuple[bytes, bytes]]:
    """The pages use only same-origin scripts and styles (plus the Turnstile widget when it is on)."""
    widget = f" {TURNSTILE}" if settings.captcha_enabled else ""
    frame_src = TURNSTILE if settings.captcha_enabled else "'none'"
    headers = {
        "content-security-policy": (
            f"default-src 'self'; script-src 'self'{widget}; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'; frame-src {frame_src}; frame-ancestors 'none'; base-uri 'none'; "
            "form-action 'self'; object-src 'none'"
        ),
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "x-frame-options": "DENY",
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-resource-policy": "same-origin",
        "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
    }
    if settings.secure_cookies:
        headers["strict-transport-security"] = "max-age=31536000; includeSubDomains"
    return [(name.encode(), value.encode()) for name, value in headers.items()]


def _allowed_methods(scope: Scope, cache: dict[str, bytes]) -> bytes | None:
    """The methods of the route this request reached, for the Allow header of an OPTIONS answer.

    Litestar's own OPTIONS handler lists only the methods of the first handler registered at a
    path (a route rebuilt for a second handler keeps the first one's OPTIONS handler), so the
    methods are read here from the app's final routes."""
    if not cache:
        for route in scope["app"].routes:
            if isinstance(route, HTTPRoute):
                cache[route.path_format] = ", ".join(sorted(route.methods)).encode()
    return cache.get(scope.get("path_template", ""))


def response_headers(settings: Settings) -> BeforeMessageSendHookHandler:
    """An app-level send hook: every response — errors and unknown routes included — gets the
    security headers and its request id (a handler's own value of a header wins)."""
    fixed = security_headers(settings)
    allowed: dict[str, bytes] = {}

    async def add_headers(message: Message, scope: Scope) -> None:
        if message["type"] != "http.response.start":
            return
        headers = list(message.get("headers", []))
        present = {name.lower() for name, _ in headers}
        headers += [(name, value) for name, value in fixed if name not in present]
        # Answers and pages carry an account's data: no browser or proxy keeps them (errors and
        # unknown routes included). Only the static scripts and styles may be cached.
        if b"cache-control" not in present and not scope.get("path", "").startswith("/static/"):
            headers.append((b"cache-control", b"no-store"))
        if rid := scope.get("state", {}).get("request_id"):
            headers.append((b"x-request-id", rid.encode()))
        if scope.get("method") == "OPTIONS" and b"allow" in present and (methods := _allowed_methods(scope, allowed)):
            headers = [(name, value) for name, value in headers if name.lower() != b"allow"] + [(b"allow", methods)]
        message["headers"] = headers

    return add_headers
