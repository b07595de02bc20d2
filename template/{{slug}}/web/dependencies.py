"""Litestar dependencies: the runtime's parts, one each, and the signed-in account."""

from __future__ import annotations

import asyncpg
from litestar import Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from ..auth.sessions import SignedIn, account_for_token
from ..files.objects import ObjectStore
from ..runtime import Runtime
from ..settings import Settings
from ..tasks.messages import TaskQueue

# Handler parameters are injected by name; these aliases mark them as dependencies.
DbPool = NamedDependency[asyncpg.Pool]
SiteSettings = NamedDependency[Settings]
Objects = NamedDependency[ObjectStore]  # declare with the storage_configured guard: never None there
ObjectsIfAny = NamedDependency[ObjectStore | None]
Queue = NamedDependency[TaskQueue]  # declare with a guard that refuses a site without a broker
QueueIfAny = NamedDependency[TaskQueue | None]
CurrentAccount = NamedDependency[SignedIn]


def runtime_of(connection: ASGIConnection) -> Runtime:
    """The process's runtime, for guards (which run before dependencies are resolved)."""
    return connection.app.state.runtime


def client_address(request: ASGIConnection) -> str | None:
    """The client's address for throttles, captcha and logs. Behind a proxy listed in
    ``[web] trusted_proxies`` the web server (uvicorn's proxy headers) has already put the
    X-Forwarded-For client here; from any other peer it is the peer itself."""
    return request.client.host if request.client else None


async def session_account(connection: ASGIConnection) -> SignedIn | None:
    """The live session's account, from the cookie named for this site only: a browser holding
    cookies of several sites on one host always resolves to this site's own session. Without that
    cookie, None and no database call."""
    runtime = runtime_of(connection)
    token = connection.cookies.get(runtime.settings.session_cookie)
    if token is None:
        return None
    async with runtime.pool.acquire() as conn:
        return await account_for_token(conn, runtime.settings, token)


def provide_account(request: Request) -> SignedIn:
    """The account the ``signed_in`` guard found. Declaring it checks nothing and counts nothing:
    the guards do, in the order the route lists them."""
    account = request.state.get("account")
    if account is None:
        raise RuntimeError("a handler takes `account` without the signed_in guard")
    return account


def provide_settings(state: State) -> Settings:
    return state.runtime.settings


def provide_pool(state: State) -> asyncpg.Pool:
    return state.runtime.pool


def provide_objects(state: State) -> ObjectStore | None:
    return state.runtime.objects


def provide_queue(state: State) -> TaskQueue | None:
    return state.runtime.queue


DEPENDENCIES = {
    "settings": Provide(provide_settings, sync_to_thread=False),
    "pool": Provide(provide_pool, sync_to_thread=False),
    "objects": Provide(provide_objects, sync_to_thread=False),
    "queue": Provide(provide_queue, sync_to_thread=False),
    "account": Provide(provide_account, sync_to_thread=False),
}
