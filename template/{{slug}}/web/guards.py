"""Route guards of the JSON API: who is calling, and whether they may send one more request.

Guards run before the handler's dependencies and body are resolved, in the order the
route's layers list them (controller, then handler). Each does one thing; the feature
guards (files enabled, storage configured, execution available) live with their routes.
"""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler

from ..errors import Unauthenticated
from ..ratelimits.requests import count_request
from .dependencies import runtime_of, session_account


async def signed_in(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """A live session of this site, or 401. Its account is what the ``account`` dependency gives."""
    runtime = runtime_of(connection)
    if runtime.settings.session_cookie not in connection.cookies:
        raise Unauthenticated()
    async with runtime.pool.acquire() as conn:
        account = await session_account(conn, connection, runtime.settings)
    if account is None:
        raise Unauthenticated()
    connection.state.account = account


async def rate_limited(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Count the request against the signed-in account's per-minute quota (reads (GET/HEAD) and
    writes apart); 429 once it is spent. Listed after ``signed_in``."""
    runtime = runtime_of(connection)
    policy = runtime.settings.policy.tasks
    reading = connection.scope["method"] in ("GET", "HEAD")
    await count_request(runtime.pool, connection.state.account.id, "read" if reading else "write",
                        policy.reads_per_minute if reading else policy.writes_per_minute)


# Every signed-in API route: authenticate, then count.
ACCOUNT_GUARDS = [signed_in, rate_limited]
