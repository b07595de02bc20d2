"""Route guards of the JSON API: who is calling, and whether they may send one more request.

Guards run before the handler's dependencies and body are resolved, in the order the
route's layers list them (controller, then handler). Each does one thing; the feature
guards (files enabled, storage configured, execution available) live with their routes.
"""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler

from ..auth import accounts
from ..errors import NotFound, Unauthenticated
from ..ratelimits.requests import count_request
from .dependencies import runtime_of, session_account


async def signed_in(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """A live session of this site, or 401. Its account is what the ``account`` dependency gives."""
    account = await session_account(connection)
    if account is None:
        raise Unauthenticated()
    connection.state.account = account


# A handler whose ``opt`` sets this counts its requests itself, inside its own transaction
# (the task submit: one commit for the count and the task).
COUNTS_ITS_OWN_REQUESTS = "counts_its_own_requests"


async def rate_limited(connection: ASGIConnection, handler: BaseRouteHandler) -> None:
    """Count the request against the signed-in account's per-minute quota (reads (GET/HEAD) and
    writes apart); 429 once it is spent. Listed after ``signed_in``."""
    if handler.opt.get(COUNTS_ITS_OWN_REQUESTS):
        return
    runtime = runtime_of(connection)
    policy = runtime.settings.policy.tasks
    reading = connection.scope["method"] in ("GET", "HEAD")
    await count_request(runtime.pool, connection.state.account.id, "read" if reading else "write",
                        policy.reads_per_minute if reading else policy.writes_per_minute)


async def operator_only(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """A live session of an account that is an operator right now (checked in SQL on every request,
    so a revoke takes effect at once); anyone else — signed out, signed in, another site's operator —
    gets the same 404 as a path that does not exist. Its account is what ``account`` gives."""
    account = await session_account(connection)
    if account is None or not await accounts.is_operator(runtime_of(connection).pool, account.id):
        raise NotFound()
    connection.state.account = account


# Every signed-in API route: authenticate, then count.
ACCOUNT_GUARDS = [signed_in, rate_limited]
# Every operator console route: an operator or a 404, then count.
OPERATOR_GUARDS = [operator_only, rate_limited]
