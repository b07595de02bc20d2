"""Litestar dependencies: the runtime's parts and the signed-in account."""

from __future__ import annotations

import asyncpg
from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from ..auth.sessions import Account, account_for_token
from ..errors import Unauthenticated
from ..ratelimits.requests import count_request
from ..runtime import Runtime
from ..settings import Settings

# Handler parameters are injected by name; these aliases mark them as dependencies.
DbPool = NamedDependency[asyncpg.Pool]
SiteSettings = NamedDependency[Settings]
SiteRuntime = NamedDependency[Runtime]
CurrentAccount = NamedDependency[Account]


def client_address(request: Request) -> str | None:
    """The client's address for throttles, captcha and logs. Behind a proxy listed in
    ``[web] trusted_proxies`` the web server (uvicorn's proxy headers) has already put the
    X-Forwarded-For client here; from any other peer it is the peer itself."""
    return request.client.host if request.client else None


def provide_runtime(state: State) -> Runtime:
    return state.runtime


def provide_settings(state: State) -> Settings:
    return state.runtime.settings


def provide_pool(state: State) -> asyncpg.Pool:
    return state.runtime.pool


async def session_account(conn: asyncpg.Connection, request: Request, settings: Settings) -> Account | None:
    """The live session's account, from the cookie named for this site only: a browser holding
    cookies of several sites on one host always resolves to this site's own session."""
    return await account_for_token(conn, settings, request.cookies.get(settings.session_cookie, ""))


async def provide_account(request: Request, pool: DbPool, settings: SiteSettings) -> Account:
    """The signed-in account, counted against its rate limit (reads (GET/HEAD) and writes apart)."""
    if settings.session_cookie not in request.cookies:
        raise Unauthenticated()
    policy = settings.policy.tasks
    reading = request.method in ("GET", "HEAD")
    async with pool.acquire() as conn:
        account = await session_account(conn, request, settings)
        if account is None:
            raise Unauthenticated()
        await count_request(conn, account.id, "read" if reading else "write",
                            policy.reads_per_minute if reading else policy.writes_per_minute)
    return account


DEPENDENCIES = {
    "runtime": Provide(provide_runtime, sync_to_thread=False),
    "settings": Provide(provide_settings, sync_to_thread=False),
    "pool": Provide(provide_pool, sync_to_thread=False),
    "account": Provide(provide_account),
}
