"""Session tokens: random, handed to the browser once, stored only as a keyed hash."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from uuid import UUID

import asyncpg
import msgspec

from ..db.queries import Queries

Q = Queries.load(__package__)

SESSION_SECONDS = 30 * 24 * 3600


class Account(msgspec.Struct, frozen=True):
    """The signed-in account, as every handler receives it."""

    id: UUID
    email: str


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(secret_key: str, token: str) -> bytes:
    # Keyed with the site's SECRET_KEY: a token minted by another site, even one
    # sharing the database server, can never hash to a row here.
    return hmac.new(secret_key.encode(), token.encode(), hashlib.sha256).digest()


async def start_session(conn: asyncpg.Connection, secret_key: str, account_id: UUID) -> str:
    token = new_token()
    await conn.execute(Q.insert_session, token_hash(secret_key, token), account_id, SESSION_SECONDS)
    return token


async def account_for_token(conn: asyncpg.Connection, secret_key: str, token: str) -> Account | None:
    row = await conn.fetchrow(Q.account_for_session, token_hash(secret_key, token))
    return Account(id=row["id"], email=row["email"]) if row else None


async def end_session(conn: asyncpg.Connection, secret_key: str, token: str) -> None:
    await conn.execute(Q.revoke_session, token_hash(secret_key, token))
