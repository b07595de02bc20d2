"""The single-use tokens of mailed links: password reset, address verification, email change.

A token is never stored. Its row holds a keyed hash of it (``sessions.token_hash``, keyed with the
site's SECRET_KEY), and the outbox row of the mail that carries it holds a random seed from which
only SECRET_KEY derives the token again (``mail.links.token_from_seed``) — when the mail is composed, after the
commit. So neither table, read alone, gives a working link, and the seed is cleared once the mail is
finished. A token minted by another site never hashes to a row here: its key differs.
"""

from __future__ import annotations

import secrets
from typing import Literal
from uuid import UUID

import asyncpg
import msgspec

from ..errors import TokenInvalid
from ..mail.links import token_from_seed
from ..settings import Settings
from .sessions import MAX_TOKEN_LENGTH, Q, token_hash

Purpose = Literal["reset", "verify", "email"]

# Verification and email-change links work this long (a reset link: [auth] reset_ttl_minutes).
LINK_TTL_SECONDS = 48 * 3600


class Redeemed(msgspec.Struct, frozen=True):
    account_id: UUID
    email: str


def new_seed() -> bytes:
    return secrets.token_bytes(32)


def ttl_seconds(settings: Settings, purpose: Purpose) -> int:
    return settings.policy.auth.reset_ttl_minutes * 60 if purpose == "reset" else LINK_TTL_SECONDS


async def issue(conn: asyncpg.Connection, settings: Settings, account_id: UUID | None, purpose: Purpose,
                email: str) -> bytes:
    """A new token for ``account_id`` (its row written in the caller's transaction); returns the seed the
    outbox keeps. With no account, the same statement runs and writes nothing (a reset asked for an
    unknown address does the same work as for a known one)."""
    seed = new_seed()
    digest = token_hash(settings.require_secret_key(), token_from_seed(settings.require_secret_key(), seed))
    await conn.execute(Q.insert_account_token, digest, account_id, purpose, email, ttl_seconds(settings, purpose))
    return seed


async def check(conn: asyncpg.Connection, settings: Settings, purpose: Purpose, token: str) -> None:
    """TokenInvalid unless the token could be used now (it is not used here: ``redeem`` does that)."""
    if not token or len(token) > MAX_TOKEN_LENGTH or not await conn.fetchval(
            Q.account_token_usable, token_hash(settings.require_secret_key(), token), purpose):
        raise TokenInvalid()


async def redeem(conn: asyncpg.Connection, settings: Settings, purpose: Purpose, token: str) -> Redeemed:
    """Use the token once: TokenInvalid when it is unknown, used, expired or of another purpose. The
    statement's WHERE is the whole precondition, so two concurrent uses cannot both succeed."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise TokenInvalid()
    row = await conn.fetchrow(Q.use_account_token, token_hash(settings.require_secret_key(), token), purpose)
    if row is None:
        raise TokenInvalid()
    return Redeemed(account_id=row["account_id"], email=row["email"])


async def purge_expired(conn: asyncpg.Connection | asyncpg.Pool, batch: int) -> int:
    """Maintenance: delete at most ``batch`` tokens a day past their expiry (used or not)."""
    status = await conn.execute(Q.purge_account_tokens, batch)
    return int(status.split()[-1])
