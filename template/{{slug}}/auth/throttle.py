"""Login throttling per account and per client address (fixed 15-minute windows).

Every attempt counts before the password is checked, so guessing costs the
same whether it succeeds or not, and an unknown email is throttled exactly
like a known one (its key is a keyed hash; the email itself is not stored).
"""

from __future__ import annotations

import hashlib
import hmac

import asyncpg

from ..errors import RateLimited
from ..settings import Settings
from .sessions import Q


def account_key(settings: Settings, email: str) -> str:
    digest = hmac.new(settings.require_secret_key().encode(), b"login:" + email.encode(), hashlib.sha256)
    return "account:" + digest.hexdigest()


async def count_attempt(conn: asyncpg.Connection, settings: Settings, email: str, address: str | None) -> None:
    """Count this attempt; RateLimited if the account or the address is over its limit."""
    policy = settings.policy.auth
    over = await conn.fetchval(Q.throttle_hit, account_key(settings, email)) > policy.login_attempts_per_account
    if address:
        over |= await conn.fetchval(Q.throttle_hit, f"address:{address[:90]}") > policy.login_attempts_per_address
    if over:
        raise RateLimited("Too many sign-in attempts. Please wait and try again.")
