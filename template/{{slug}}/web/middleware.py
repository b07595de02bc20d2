"""ASGI middleware: request ids, and the Origin check that guards every mutation."""

from __future__ import annotations

import secrets

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import OriginMismatch

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RequestIdMiddleware(ASGIMiddleware):
    """Gives every request an id (``X-Request-Id``) that error answers and logs refer to."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        rid = secrets.token_hex(8)
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        await next_app(scope, receive, send_with_id)


class OriginCheckMiddleware(ASGIMiddleware):
    """Every POST/PUT/PATCH/DELETE must carry ``Origin`` equal to the site's origin.

    Runs before authentication and body parsing, so a cross-site form post or
    fetch is refused before it can touch anything.
    """

    scopes = (ScopeType.HTTP,)

    def __init__(self, origin: str) -> None:
        self.origin = origin.encode()

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope["method"] not in SAFE_METHODS:
            origins = [value for key, value in scope["headers"] if key == b"origin"]
            if origins != [self.origin]:
                raise OriginMismatch()
        await next_app(scope, receive, send)
