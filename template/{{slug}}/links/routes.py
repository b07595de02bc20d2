"""HTTP routes of the mailed links: ask for a reset, follow a reset, verification or email-change link,
ask for a new verification link, ask to change the address.

Every mail is asked for the worker after the answer went out (a background task), so an answer never
waits on the broker: a reset for an unknown address answers exactly like one for a known address.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from litestar import Controller, Request, Response, post
from litestar.background_tasks import BackgroundTask
from litestar.params import JSONBody
from litestar.status_codes import HTTP_202_ACCEPTED, HTTP_204_NO_CONTENT
from msgspec import Meta

from ..auth.accounts import Email, NewEmail, Password, check_password, login_email, normalise_email
from ..auth.throttle import count_attempt, count_link_use
from ..errors import EmailTaken, RateLimited, TokenInvalid, Unauthenticated
from ..mail.messages import notify
from ..web.dependencies import CurrentAccount, DbPool, QueueIfAny, SiteSettings, client_address
from ..web.guards import ACCOUNT_GUARDS
from ..web.openapi import JSON_BODY, MUTATION, SIGNED_IN, answers
from . import flows

# What a link carries: the URL-safe base64 of 32 bytes (longer or other characters are never one).
Token = Annotated[str, Meta(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]


class ResetRequest(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    email: Email


class ResetConfirmation(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    token: Token
    password: Password


class LinkConfirmation(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    token: Token


class EmailChange(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    new_email: NewEmail
    password: Annotated[str, Meta(max_length=256)]


class Accepted(msgspec.Struct, frozen=True):
    """Taken: a mail goes out if there is one to send (the answer never says whether there is)."""

    status: Literal["accepted"] = "accepted"


def _accepted(queue, mail_id) -> Response[Accepted]:
    return Response(Accepted(), status_code=HTTP_202_ACCEPTED, background=BackgroundTask(notify, queue, mail_id))


class LinksController(Controller):
    path = "/api/auth"
    tags = ["auth"]

    @post("/reset", status_code=HTTP_202_ACCEPTED, responses=answers(*MUTATION, *JSON_BODY, RateLimited))
    async def request_reset(self, request: Request, data: JSONBody[ResetRequest], pool: DbPool, queue: QueueIfAny,
                            settings: SiteSettings) -> Response[Accepted]:
        """Mail a password reset link to the address if an account has it. The answer is the same either
        way (202); throttled per address asked for and per client."""
        mail_id = await flows.request_reset(pool, settings, login_email(data.email), client_address(request))
        return _accepted(queue, mail_id)

    @post("/reset/confirm", status_code=HTTP_204_NO_CONTENT,
          responses=answers(*MUTATION, *JSON_BODY, TokenInvalid, RateLimited))
    async def confirm_reset(self, request: Request, data: JSONBody[ResetConfirmation], pool: DbPool,
                            settings: SiteSettings) -> None:
        """Set a new password with a reset link's token (once, before it expires); every session of the
        account ends."""
        async with pool.acquire() as conn:
            await count_link_use(conn, settings, client_address(request))
        await flows.confirm_reset(pool, settings, data.token, data.password)

    @post("/verify/confirm", status_code=HTTP_204_NO_CONTENT,
          responses=answers(*MUTATION, *JSON_BODY, TokenInvalid, RateLimited))
    async def confirm_verification(self, request: Request, data: JSONBody[LinkConfirmation], pool: DbPool,
                                   settings: SiteSettings) -> None:
        """Prove the account's address with its verification link's token."""
        async with pool.acquire() as conn:
            await count_link_use(conn, settings, client_address(request))
        await flows.confirm_verification(pool, settings, data.token)

    @post("/verify/resend", status_code=HTTP_202_ACCEPTED, guards=ACCOUNT_GUARDS,
          responses=answers(*SIGNED_IN, *MUTATION))
    async def resend_verification(self, account: CurrentAccount, pool: DbPool, queue: QueueIfAny,
                                  settings: SiteSettings) -> Response[Accepted]:
        """Mail a new verification link to the signed-in account's address (nothing when it is proven
        already); throttled per account."""
        return _accepted(queue, await flows.resend_verification(pool, settings, account))

    @post("/email/confirm", status_code=HTTP_204_NO_CONTENT,
          responses=answers(*MUTATION, *JSON_BODY, TokenInvalid, EmailTaken, RateLimited))
    async def confirm_email_change(self, request: Request, data: JSONBody[LinkConfirmation], pool: DbPool,
                                   queue: QueueIfAny, settings: SiteSettings) -> Response[None]:
        """Move the account to the new address its link proves; the old address is told."""
        async with pool.acquire() as conn:
            await count_link_use(conn, settings, client_address(request))
        mail_id = await flows.confirm_email_change(pool, settings, data.token)
        return Response(None, status_code=HTTP_204_NO_CONTENT, background=BackgroundTask(notify, queue, mail_id))


class EmailChangeController(Controller):
    path = "/api/me/email"
    tags = ["auth"]
    guards = ACCOUNT_GUARDS

    @post("/", status_code=HTTP_202_ACCEPTED, responses=answers(*SIGNED_IN, *MUTATION, *JSON_BODY, Unauthenticated))
    async def change_email(self, request: Request, data: JSONBody[EmailChange], account: CurrentAccount,
                           pool: DbPool, queue: QueueIfAny, settings: SiteSettings) -> Response[Accepted]:
        """Ask to move the account to ``newEmail`` (the password confirms it is the owner): the new address
        gets a link, and the change takes effect when it is followed."""
        new_email = normalise_email(data.new_email)
        async with pool.acquire() as conn:
            await count_attempt(conn, settings, account.email, client_address(request))
        checked = await check_password(pool, account.id, data.password)  # no connection or lock held
        return _accepted(queue, await flows.request_email_change(pool, settings, account, new_email, checked))
