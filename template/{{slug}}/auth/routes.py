"""HTTP routes for accounts: register, login, logout, me."""

from __future__ import annotations

from uuid import UUID

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from ..db.pool import transaction
from ..settings import Settings
from ..web.dependencies import CurrentAccount, DbPool, SiteSettings
from .accounts import Credentials, authenticate, register
from .sessions import SESSION_SECONDS, Account, end_session, start_session


class AccountOut(msgspec.Struct, frozen=True):
    id: UUID
    email: str


def _with_session(settings: Settings, account: Account, token: str, status: int) -> Response[AccountOut]:
    response = Response(AccountOut(id=account.id, email=account.email), status_code=status)
    response.set_cookie(
        settings.session_cookie,
        token,
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
    )
    return response


class AuthController(Controller):
    path = "/api/auth"
    tags = ["auth"]

    @post("/register", status_code=HTTP_201_CREATED)
    async def register(self, data: JSONBody[Credentials], pool: DbPool, settings: SiteSettings) -> Response[AccountOut]:
        """Create a personal account and sign it in."""
        async with transaction(pool) as conn:
            account = await register(conn, data)
            token = await start_session(conn, settings.require_secret_key(), account.id)
        return _with_session(settings, account, token, HTTP_201_CREATED)

    @post("/login", status_code=HTTP_200_OK)
    async def login(self, data: JSONBody[Credentials], pool: DbPool, settings: SiteSettings) -> Response[AccountOut]:
        """Sign in with email and password; a fresh session token every time."""
        async with transaction(pool) as conn:
            account = await authenticate(conn, data)
            token = await start_session(conn, settings.require_secret_key(), account.id)
        return _with_session(settings, account, token, HTTP_200_OK)

    @post("/logout", status_code=HTTP_204_NO_CONTENT)
    async def logout(self, request: Request, pool: DbPool, settings: SiteSettings) -> Response[None]:
        """Revoke the current session server-side and clear the cookie."""
        token = request.cookies.get(settings.session_cookie)
        if token and len(token) <= 128:
            async with transaction(pool) as conn:
                await end_session(conn, settings.require_secret_key(), token)
        response = Response(None, status_code=HTTP_204_NO_CONTENT)
        response.delete_cookie(settings.session_cookie, path="/")
        return response


@get("/api/me", tags=["auth"])
async def me(account: CurrentAccount) -> AccountOut:
    """The signed-in account."""
    return AccountOut(id=account.id, email=account.email)
