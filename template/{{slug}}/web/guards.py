"""Route guards of the JSON API: who is calling, and whether they may send one more request.

Guards run before the handler's dependencies and body are resolved, in the order the
route's layers list them (controller, then handler). Each does one thing; the feature
guards (files enabled, storage configured, execution available) live with their routes.
"""

from __future__ import annotations

import logging
import re

from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler
from litestar.types import Guard, Scope

from ..errors import EmailUnverified, NotFound, RateLimited, Unauthenticated, ValidationFailed
from ..ratelimits.requests import count_request
from .dependencies import runtime_of, session_account

log = logging.getLogger(__name__)


async def signed_in(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """A live session of this site, or 401. Its account is what the ``account`` dependency gives."""
    account = await session_account(connection)
    if account is None:
        raise Unauthenticated()
    connection.state.account = account


# A handler whose ``opt`` sets this counts its requests itself, inside its own transaction
# (the task submit: one commit for the count and the task), and says so with requests_counted
# once that committed; a request that fails before is counted by count_uncounted_request.
COUNTS_ITS_OWN_REQUESTS = "counts_its_own_requests"


async def _count(connection: ASGIConnection) -> None:
    runtime = runtime_of(connection)
    policy = runtime.settings.policy.tasks
    reading = connection.scope["method"] in ("GET", "HEAD")
    await count_request(runtime.pool, connection.state.account.id, "read" if reading else "write",
                        policy.reads_per_minute if reading else policy.writes_per_minute)


async def rate_limited(connection: ASGIConnection, handler: BaseRouteHandler) -> None:
    """Count the request against the signed-in account's per-minute quota (reads (GET/HEAD) and
    writes apart); 429 once it is spent. Listed after ``signed_in``."""
    if not handler.opt.get(COUNTS_ITS_OWN_REQUESTS):
        await _count(connection)


def requests_counted(connection: ASGIConnection) -> None:
    """A handler that counts its own requests: this one's count is committed."""
    connection.state.requests_counted = True


async def count_uncounted_request(error: Exception, scope: Scope) -> None:
    """The app's after_exception hook: a signed-in request to a handler that counts its own
    requests, which failed before its count committed — a body that does not parse, a feature
    guard, a refusal or database trouble that rolled the count back — is counted here, on its
    own. Refused requests count too, so refusals cannot be used to probe for free."""
    handler = scope.get("route_handler")
    if handler is None or not handler.opt.get(COUNTS_ITS_OWN_REQUESTS):
        return
    connection = ASGIConnection(scope)
    if connection.state.get("account") is None or connection.state.get("requests_counted"):
        return
    try:
        await _count(connection)
    except RateLimited:
        pass  # counted (refused hits count too)
    except Exception as trouble:  # the error's own answer must still go out
        log.warning("%s: request not counted (%s)", type(error).__name__, type(trouble).__name__)


async def email_verified(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """With ``[auth] verify_email``, an account whose address is not proven yet may not upload or start
    work (403 EMAIL_UNVERIFIED); read with the session on each such request, so a confirmation counts at
    once. Listed after ``signed_in``."""
    if runtime_of(connection).settings.policy.auth.verify_email and not connection.state.account.email_verified:
        raise EmailUnverified()


async def operator_only(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """A live session of an account that is an operator right now (read with the session on every
    request, so a revoke takes effect at once); anyone else — signed out, signed in, another site's
    operator — gets the same 404 as a path that does not exist. Its account is what ``account`` gives."""
    account = await session_account(connection)
    if account is None or not account.operator:
        raise NotFound()
    connection.state.account = account


# RFC 3339's date-time, the "date-time" format of JSON Schema and so of the document.
RFC3339 = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                     r"([Zz]|[+-][0-9]{2}:[0-9]{2})$")


def rfc3339_query(*names: str) -> Guard:
    """Query parameters the document gives as date-times take only those: Litestar's lax decoding
    would also read a number as a Unix time, or a time without its offset as local."""

    async def date_times_only(connection: ASGIConnection, _: BaseRouteHandler) -> None:
        for name in names:
            for value in connection.query_params.getall(name, []):
                if not RFC3339.match(value):
                    raise ValidationFailed(f"{name}: not a date-time with its offset (e.g. 2026-01-31T09:00:00Z)")

    return date_times_only


# Every signed-in API route: authenticate, then count.
ACCOUNT_GUARDS = [signed_in, rate_limited]
# Every operator console route: an operator or a 404, then count.
OPERATOR_GUARDS = [operator_only, rate_limited]
