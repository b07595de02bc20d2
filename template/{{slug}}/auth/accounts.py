"""Registering and authenticating personal accounts."""

from __future__ import annotations

import re
from typing import Annotated

import asyncpg
import msgspec
from msgspec import Meta

from ..errors import EmailTaken, Unauthenticated, ValidationFailed
from .passwords import hash_password, verify_password
from .sessions import Account, Q

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+$")

Password = Annotated[str, Meta(min_length=8, max_length=256)]
Email = Annotated[str, Meta(min_length=3, max_length=254)]


class Credentials(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    email: Email
    password: Password


def normalise_email(raw: str) -> str:
    email = raw.strip().lower()
    if not _EMAIL.match(email):
        raise ValidationFailed("Enter a valid email address.")
    return email


async def register(conn: asyncpg.Connection, credentials: Credentials) -> Account:
    email = normalise_email(credentials.email)
    row = await conn.fetchrow(Q.insert_account, email, await hash_password(credentials.password))
    if row is None:
        raise EmailTaken()
    return Account(id=row["id"], email=row["email"])


async def authenticate(conn: asyncpg.Connection, credentials: Credentials) -> Account:
    try:
        email = normalise_email(credentials.email)
    except ValidationFailed:
        email = ""
    row = await conn.fetchrow(Q.account_for_login, email) if email else None
    # Same work and the same answer whether the email is unknown or the password wrong.
    if not await verify_password(row["password_hash"] if row else None, credentials.password):
        raise Unauthenticated("Email or password is incorrect.")
    return Account(id=row["id"], email=row["email"])
