"""Personal accounts: register, authenticate, change the password, delete."""

from __future__ import annotations

import re
from typing import Annotated
from uuid import UUID

import asyncpg
import msgspec
from msgspec import Meta

from ..errors import EmailTaken, Unauthenticated, ValidationFailed
from .passwords import verify_password
from .sessions import Account, Q, end_all_sessions

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+$")

Password = Annotated[str, Meta(min_length=8, max_length=256)]
# A sign-in email is any text PostgreSQL can hold: no NUL (the schema says so; the query never sees one).
TEXT_PATTERN = r"^[^\x00]*$"
Email = Annotated[str, Meta(min_length=3, max_length=254, pattern=TEXT_PATTERN)]
# What registration accepts, as the schema shows it: _EMAIL's shape once the spaces str.strip()
# trims are gone. Spelled out rather than ``\s``, which JSON Schema's regex dialect reads differently
# (U+001C-U+001F); controls and U+0130 (the one character whose lower case is two) are refused.
_SPACES = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_PART = r"[^@.\x00-\x20\x7f-\xa0\u0130\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
NEW_EMAIL_PATTERN = rf"^[{_SPACES}]*(?:{_PART}|\.){{1,64}}@{_PART}+(?:\.{_PART}+)+[{_SPACES}]*$"
NewEmail = Annotated[str, Meta(min_length=3, max_length=254, pattern=NEW_EMAIL_PATTERN)]
WRONG_CREDENTIALS = "Email or password is incorrect."


class Credentials(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    email: Email
    password: Password


class Registration(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    email: NewEmail
    password: Password


class PasswordChange(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    current_password: Annotated[str, Meta(max_length=256)]
    new_password: Password


class AccountDeletion(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    password: Annotated[str, Meta(max_length=256)]


def normalise_email(raw: str) -> str:
    email = raw.strip().lower()
    if not _EMAIL.match(email):
        raise ValidationFailed("Enter a valid email address.")
    return email


def login_email(raw: str) -> str:
    """The email as throttled and looked up; a malformed one simply matches no account."""
    return raw.strip().lower()[:254]


async def lock(conn: asyncpg.Connection, account_id: UUID) -> bool:
    """Lock the account row for the rest of the caller's transaction; False when it is gone (it
    was deleted while the caller waited for it).

    Every writer of an account's quota, credits, tasks, password or existence takes this lock
    first, so they run one at a time per account and always in the same order (account, then
    task, then file rows).
    """
    return await conn.fetchval(Q.lock_account, account_id)


async def find_by_email(conn: asyncpg.Connection, email: str) -> Account | None:
    row = await conn.fetchrow(Q.account_by_email, email)
    return Account(id=row["id"], email=row["email"]) if row else None


async def set_operator(conn: asyncpg.Connection, email: str, operator: bool) -> bool:
    """Grant or revoke the console to the account with this normalised email (the CLI only);
    False when there is no such account."""
    return await conn.fetchval(Q.set_operator, email, operator) is not None


async def register(conn: asyncpg.Connection, email: str, password_hash: str) -> Account:
    """A new account for a normalised ``email`` (hash the password first, outside any transaction)."""
    row = await conn.fetchrow(Q.insert_account, email, password_hash)
    if row is None:
        raise EmailTaken()
    return Account(id=row["id"], email=row["email"])


async def authenticate(pool: asyncpg.Pool, credentials: Credentials) -> Account:
    row = await pool.fetchrow(Q.account_for_login, login_email(credentials.email))
    # Same work and the same answer whether the email is unknown or the password wrong.
    if not await verify_password(row["password_hash"] if row else None, credentials.password):
        raise Unauthenticated(WRONG_CREDENTIALS)
    return Account(id=row["id"], email=row["email"])


async def check_password(pool: asyncpg.Pool, account_id: UUID, password: str) -> str:
    """The account's password hash, once ``password`` matches it. The hash is read and checked with no
    connection held and before any lock: the statement that acts on the check names the hash in its
    WHERE, so a password changed in between refuses it."""
    password_hash = await pool.fetchval(Q.account_password, account_id)
    if not await verify_password(password_hash, password):
        raise Unauthenticated("The password is incorrect.")
    return password_hash


async def change_password(conn: asyncpg.Connection, account: Account, checked_hash: str, new_hash: str) -> None:
    """Replace the checked hash with ``new_hash`` (both computed before, with no connection held), and
    revoke every session of the account (the caller starts a fresh one)."""
    if not await lock(conn, account.id) or await conn.fetchval(Q.replace_password, account.id, checked_hash,
                                                                new_hash) is None:
        raise Unauthenticated("The password is incorrect.")
    await end_all_sessions(conn, account.id)


async def delete_account(conn: asyncpg.Connection, account: Account, checked_hash: str) -> None:
    """Delete the account and, by cascade, all its personal data, unless its password changed since it
    was checked (the caller has locked it, and has taken the keys of its objects to remove once this
    commits)."""
    if await conn.fetchval(Q.delete_account, account.id, checked_hash) is None:
        raise Unauthenticated("The password is incorrect.")


async def id_for_email(conn: asyncpg.Connection, email: str) -> UUID | None:
    """The account a reset is asked for, or None (the caller does the same work either way)."""
    return await conn.fetchval(Q.account_for_reset, email)


async def reset_password(conn: asyncpg.Connection, account_id: UUID, new_hash: str) -> bool:
    """Set the password a reset link allowed (the caller has locked the account) and revoke every
    session; False when the account is gone."""
    if await conn.fetchval(Q.reset_password, account_id, new_hash) is None:
        return False
    await end_all_sessions(conn, account_id)
    return True


async def mark_verified(conn: asyncpg.Connection, account_id: UUID, email: str) -> bool:
    """The account's address is proven, if it is still ``email`` (a link to an address the account has
    since left proves nothing about its current one)."""
    return await conn.fetchval(Q.verify_email, account_id, email) is not None


async def change_email(conn: asyncpg.Connection, account_id: UUID, new_email: str) -> str | None:
    """Move the account to the proven ``new_email``; its old address, or None when the account is gone.
    EmailTaken when another account holds the address by now."""
    try:
        async with conn.transaction():  # a savepoint: the unique index may refuse a concurrent taker
            old = await conn.fetchrow(Q.change_email, account_id, new_email)
    except asyncpg.UniqueViolationError:
        raise EmailTaken() from None
    if old is None:
        if await conn.fetchval(Q.account_by_id_exists, account_id):
            raise EmailTaken()
        return None
    return old["old_email"]


async def password_unchanged(conn: asyncpg.Connection, account_id: UUID, checked_hash: str) -> bool:
    """The password is still the one checked (with no lock held) before the caller locked the account."""
    return await conn.fetchval(Q.password_is, account_id, checked_hash)
