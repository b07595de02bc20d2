"""What each mailed link does, in the transactions that write the token and its mail together.

Every flow writes its token and its outbox row in one transaction (so a mail exists exactly when its
token does), and the caller asks the worker to send it once that committed (``mail.messages.notify``).
"""

from __future__ import annotations

from uuid import UUID, uuid4

import asyncpg

from ..auth import accounts, tokens
from ..auth.passwords import hash_password
from ..auth.sessions import Account, SignedIn
from ..auth.throttle import count_link_mail, count_reset
from ..db.pool import transaction
from ..errors import TokenInvalid, Unauthenticated
from ..mail import outbox
from ..settings import Settings


def mask(email: str) -> str:
    """An address as the old address's mail names the new one: enough to recognise, not to harvest."""
    local, _, domain = email.partition("@")
    return f"{local[:1]}…@{domain}"


async def request_reset(pool: asyncpg.Pool, settings: Settings, email: str, address: str | None) -> UUID:
    """A reset link for ``email`` (normalised) if an account has it; the id the worker is asked to send.

    Known and unknown addresses take the same path: the same throttles (keyed by the address either
    way), the same statements (which write nothing without an account), the same message to the
    worker — for an unknown address a fresh id that names no row, which the worker's claim finds
    nothing for, as for a mail already sent — and the same answer."""
    # One transaction, the counts in it: both paths then commit writes (a commit that wrote nothing
    # needs no flush of the log, and would answer measurably faster for an unknown address). A refused
    # request rolls back the counts of the limits before it: what one limit refuses counts toward none.
    async with transaction(pool) as conn:
        await count_reset(conn, settings, email, address)
        account_id = await accounts.id_for_email(conn, email)
        seed = await tokens.issue(conn, settings, account_id, "reset", email)
        mail_id = await outbox.enqueue(conn, account_id, email, "reset", seed,
                                       {"ttlMinutes": settings.policy.auth.reset_ttl_minutes})
    return mail_id or uuid4()


async def confirm_reset(pool: asyncpg.Pool, settings: Settings, token: str, password: str) -> None:
    """Set the password the link allows and end every session of the account. The token is checked before
    the (slow) hash, and used only in the transaction that sets the password: two uses cannot both win."""
    async with pool.acquire() as conn:
        await tokens.check(conn, settings, "reset", token)
    new_hash = await hash_password(password)  # no connection held
    async with transaction(pool) as conn:
        used = await tokens.redeem(conn, settings, "reset", token)
        if not await accounts.lock(conn, used.account_id) or not await accounts.reset_password(
                conn, used.account_id, new_hash):
            raise TokenInvalid()
        # Following the link proved the address too, while it is still the account's.
        await accounts.mark_verified(conn, used.account_id, used.email)


async def verification_mail(conn: asyncpg.Connection, settings: Settings, account: Account) -> UUID | None:
    """A verification link to the account's address, in the caller's transaction."""
    seed = await tokens.issue(conn, settings, account.id, "verify", account.email)
    return await outbox.enqueue(conn, account.id, account.email, "verify", seed)


async def resend_verification(pool: asyncpg.Pool, settings: Settings, account: SignedIn) -> UUID | None:
    """A fresh link for a signed-in account whose address is not proven yet, as its session's read found
    it in this request (None: nothing to send)."""
    if account.email_verified:
        return None
    async with pool.acquire() as conn:
        await count_link_mail(conn, settings, account.id)
    async with transaction(pool) as conn:
        if not await accounts.lock(conn, account.id):
            return None
        return await verification_mail(conn, settings, account)


async def confirm_verification(pool: asyncpg.Pool, settings: Settings, token: str) -> None:
    async with transaction(pool) as conn:
        used = await tokens.redeem(conn, settings, "verify", token)
        if not await accounts.mark_verified(conn, used.account_id, used.email):
            raise TokenInvalid()  # the account left that address (or is gone) since


async def request_email_change(pool: asyncpg.Pool, settings: Settings, account: Account, new_email: str,
                               checked_hash: str) -> UUID | None:
    """A confirmation link to ``new_email`` (normalised; the password already checked). Nothing changes
    until it is followed. The answer is the same whether another account has the address: its owner
    learns it from the link, nobody else does."""
    async with pool.acquire() as conn:
        await count_link_mail(conn, settings, account.id)
    async with transaction(pool) as conn:
        if not await accounts.lock(conn, account.id) or not await accounts.password_unchanged(
                conn, account.id, checked_hash):
            raise Unauthenticated("The password is incorrect.")  # changed while it was checked
        if new_email == account.email:
            return None
        seed = await tokens.issue(conn, settings, account.id, "email", new_email)
        return await outbox.enqueue(conn, account.id, new_email, "email_change", seed)


async def confirm_email_change(pool: asyncpg.Pool, settings: Settings, token: str) -> UUID | None:
    """Move the account to the address the link proves, and tell the old address (its outbox row's id)."""
    async with transaction(pool) as conn:
        used = await tokens.redeem(conn, settings, "email", token)
        if not await accounts.lock(conn, used.account_id):
            raise TokenInvalid()
        old = await accounts.change_email(conn, used.account_id, used.email)  # EmailTaken: rolled back, unused
        if old is None:
            raise TokenInvalid()
        if old == used.email:
            return None
        return await outbox.enqueue(conn, used.account_id, old, "email_changed", None, {"newEmail": mask(used.email)})
