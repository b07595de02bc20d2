"""Session tokens: random, handed to the browser once, stored only as a keyed hash."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from uuid import UUID

import asyncpg
import msgspec

from ..db.batches import delete_in_batches
from ..db.queries import Queries
from ..settings import Settings

Q = Queries.load(__package__)

MAX_TOKEN_LENGTH = 128


class Account(msgspec.Struct, frozen=True):
    """An account: who registered, signed in or is acted for."""

    id: UUID
    email: str


class SignedIn(Account, frozen=True):
    """The signed-in account, as every handler receives it: with its standing as the session's own
    read found it, in this request (a revoked operator or a newly proven address counts at once)."""

    operator: bool
    email_verified: bool


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(secret_key: str, token: str) -> bytes:
    # Keyed with the site's SECRET_KEY: a token minted by another site, even one
    # sharing the database server, can never hash to a row here.
    return hmac.new(secret_key.encode(), token.encode(), hashlib.sha256).digest()


def session_seconds(settings: Settings) -> int:
    return settings.policy.auth.session_days * 86400


async def start_session(conn: asyncpg.Connection, settings: Settings, account_id: UUID) -> str:
    """A brand-new token (never one the client proposed: no session fixation)."""
    token = new_token()
    await conn.execute(Q.insert_session, token_hash(settings.require_secret_key(), token), account_id,
                       session_seconds(settings))
    return token


async def account_for_token(conn: asyncpg.Connection, settings: Settings, token: str) -> SignedIn | None:
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    row = await conn.fetchrow(Q.account_for_session, token_hash(settings.require_secret_key(), token),
                              settings.policy.auth.idle_hours * 3600)
    return SignedIn(id=row["id"], email=row["email"], operator=row["operator"],
                    email_verified=row["email_verified"]) if row else None


async def end_session(conn: asyncpg.Connection, settings: Settings, token: str) -> None:
    if token and len(token) <= MAX_TOKEN_LENGTH:
        await conn.execute(Q.revoke_session, token_hash(settings.require_secret_key(), token))


async def end_all_sessions(conn: asyncpg.Connection, account_id: UUID) -> None:
    await conn.execute(Q.revoke_all_sessions, account_id)


async def purge_ended(pool: asyncpg.Pool, batch: int, limit: int) -> int:
    """Maintenance: sessions a day past their absolute expiry, ``batch`` a statement, ``limit`` a pass."""
    return await delete_in_batches(pool, Q.purge_ended_sessions, batch=batch, limit=limit)
