"""HTTP routes for accounts: register, login, logout, me, password change, signing out everywhere,
account deletion."""

from __future__ import annotations

import logging
from uuid import UUID

import msgspec
from litestar import Controller, Request, Response, delete, get, post
from litestar.background_tasks import BackgroundTask
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from ..db.pool import transaction
from ..errors import EmailTaken, RateLimited, Unauthenticated
from ..files import store as files
from ..files.errors import StorageUnavailable
from ..links.flows import verification_mail
from ..mail.messages import notify
from ..settings import Settings
from ..web.dependencies import CurrentAccount, DbPool, ObjectsIfAny, QueueIfAny, SiteSettings, client_address
from ..web.guards import ACCOUNT_GUARDS
from ..web.openapi import JSON_BODY, MUTATION, SIGNED_IN, answers
from .accounts import (
    AccountDeletion,
    Credentials,
    PasswordChange,
    Registration,
    authenticate,
    change_password,
    check_password,
    delete_account,
    lock,
    login_email,
    normalise_email,
    register,
)
from .passwords import hash_password
from .sessions import Account, end_all_sessions, end_session, session_seconds, start_session
from .throttle import count_attempt, count_registration

log = logging.getLogger(__name__)


class AccountOut(msgspec.Struct, frozen=True):
    id: UUID
    email: str


class Me(msgspec.Struct, rename="camel", frozen=True):
    """The signed-in account as its pages see it: ``operator`` says whether to offer the console
    (the console's own guard checks again on every request); ``emailVerified`` whether the address
    was proven by a mailed link (required first with ``[auth] verify_email``)."""

    id: UUID
    email: str
    operator: bool
    email_verified: bool


def _session_cookie(response: Response, settings: Settings, token: str, max_age: int) -> None:
    # Set and cleared with the same attributes: a browser ignores a clearing header for a
    # `__Host-` name unless it is Secure with Path=/ (Litestar's delete_cookie leaves Secure out).
    response.set_cookie(
        settings.session_cookie,
        token,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
    )


def _with_session(settings: Settings, account: Account, token: str, status: int) -> Response[AccountOut]:
    response = Response(AccountOut(id=account.id, email=account.email), status_code=status)
    _session_cookie(response, settings, token, session_seconds(settings))
    return response


def _signed_out(settings: Settings) -> Response[None]:
    response = Response(None, status_code=HTTP_204_NO_CONTENT)
    _session_cookie(response, settings, "", 0)
    return response


class AuthController(Controller):
    path = "/api/auth"
    tags = ["auth"]

    @post("/register", status_code=HTTP_201_CREATED, responses=answers(*MUTATION, *JSON_BODY, EmailTaken, RateLimited))
    async def register(self, request: Request, data: JSONBody[Registration], pool: DbPool, queue: QueueIfAny,
                       settings: SiteSettings) -> Response[AccountOut]:
        """Create a personal account and sign it in. Throttled per client address. With [auth] verify_email
        its address gets a verification link."""
        email = normalise_email(data.email)
        async with pool.acquire() as conn:
            await count_registration(conn, settings, client_address(request))
        # The slow, memory-hungry hash runs while no database connection is held.
        password_hash = await hash_password(data.password)
        async with transaction(pool) as conn:
            account = await register(conn, email, password_hash)
            token = await start_session(conn, settings, account.id)
            mail_id = await verification_mail(conn, settings, account) if settings.policy.auth.verify_email else None
        response = _with_session(settings, account, token, HTTP_201_CREATED)
        response.background = BackgroundTask(notify, queue, mail_id)
        return response

    @post("/login", status_code=HTTP_200_OK, responses=answers(*MUTATION, *JSON_BODY, Unauthenticated, RateLimited))
    async def login(self, request: Request, data: JSONBody[Credentials], pool: DbPool,
                    settings: SiteSettings) -> Response[AccountOut]:
        """Sign in with email and password; a fresh session token every time. Throttled per account and address."""
        async with pool.acquire() as conn:  # counted in its own transaction: a failed login still counts
            await count_attempt(conn, settings, login_email(data.email), client_address(request))
        account = await authenticate(pool, data)  # the hash is checked with no connection held
        async with transaction(pool) as conn:
            token = await start_session(conn, settings, account.id)
        return _with_session(settings, account, token, HTTP_200_OK)

    @post("/logout", status_code=HTTP_204_NO_CONTENT, responses=answers(*MUTATION))
    async def logout(self, request: Request, pool: DbPool, settings: SiteSettings) -> Response[None]:
        """Revoke the current session server-side and clear the cookie."""
        token = request.cookies.get(settings.session_cookie)
        if token:
            async with transaction(pool) as conn:
                await end_session(conn, settings, token)
        return _signed_out(settings)


class MeController(Controller):
    path = "/api/me"
    tags = ["auth"]
    guards = ACCOUNT_GUARDS

    @get("/", responses=answers(*SIGNED_IN))
    async def me(self, account: CurrentAccount) -> Me:
        """The signed-in account."""
        return Me(id=account.id, email=account.email, operator=account.operator,
                  email_verified=account.email_verified)

    @post("/password", status_code=HTTP_200_OK, responses=answers(*SIGNED_IN, *MUTATION, *JSON_BODY))
    async def change_password(self, request: Request, data: JSONBody[PasswordChange], account: CurrentAccount,
                              pool: DbPool, settings: SiteSettings) -> Response[AccountOut]:
        """Change the password: every session of the account ends; this client gets a new one."""
        async with pool.acquire() as conn:
            await count_attempt(conn, settings, account.email, client_address(request))
        # Both hashes are computed with no connection or lock held (SPEC §4): a queue of them waits
        # for the hashing threads without holding pooled connections every other request needs.
        checked = await check_password(pool, account.id, data.current_password)
        new_hash = await hash_password(data.new_password)
        async with transaction(pool) as conn:
            await change_password(conn, account, checked, new_hash)
            token = await start_session(conn, settings, account.id)
        return _with_session(settings, account, token, HTTP_200_OK)

    @post("/sessions/end", status_code=HTTP_204_NO_CONTENT, responses=answers(*SIGNED_IN, *MUTATION))
    async def end_sessions(self, account: CurrentAccount, pool: DbPool, settings: SiteSettings) -> Response[None]:
        """Sign out everywhere: every session of the account ends, this one too, and its cookie is cleared."""
        async with pool.acquire() as conn:
            await end_all_sessions(conn, account.id)
        return _signed_out(settings)

    @delete("/", status_code=HTTP_204_NO_CONTENT, responses=answers(*SIGNED_IN, *MUTATION, *JSON_BODY))
    async def delete_me(self, request: Request, data: JSONBody[AccountDeletion], account: CurrentAccount,
                        pool: DbPool, objects: ObjectsIfAny, settings: SiteSettings) -> Response[None]:
        """Delete the account and all its data, after confirming the password.

        Rows go at once (active tasks end with them; a running executor finds
        nothing to write back). Objects are removed next; any that storage
        refuses now are orphans that maintenance removes.
        """
        async with pool.acquire() as conn:
            await count_attempt(conn, settings, account.email, client_address(request))
        checked = await check_password(pool, account.id, data.password)  # no connection or lock held
        async with transaction(pool) as conn:
            await lock(conn, account.id)
            keys = await files.object_keys(conn, account.id)
            await delete_account(conn, account, checked)
        if objects is not None:
            for key in keys:
                try:
                    await objects.delete(key)
                except StorageUnavailable:
                    log.info("account deletion: %d object(s) left for orphan cleanup", len(keys))
                    break
        return _signed_out(settings)
