"""Login and registration throttling per client address and per account (fixed 15-minute windows).

Every attempt counts before the password is checked, so guessing costs the
same whether it succeeds or not, and an unknown email is throttled exactly
like a known one (its key is a keyed hash; the email itself is not stored).
An account's tight limit is per address it is tried from: a stranger who
guesses at someone's email exhausts only their own pair, and the owner, from
their own address, still signs in; a far higher ceiling over all addresses
stops a guesser with many addresses.
"""

from __future__ import annotations

import hashlib
import hmac

import asyncpg

from .. import ratelimits
from ..errors import RateLimited
from ..settings import Settings

WINDOW_SECONDS = 15 * 60


def account_key(settings: Settings, email: str) -> str:
    digest = hmac.new(settings.require_secret_key().encode(), b"login:" + email.encode(), hashlib.sha256)
    return "account:" + digest.hexdigest()


async def _over(conn: asyncpg.Connection, key: str, limit: int) -> bool:
    return not await ratelimits.hit(conn, key, WINDOW_SECONDS, limit)


async def count_attempt(conn: asyncpg.Connection, settings: Settings, email: str, address: str | None) -> None:
    """Count this attempt; RateLimited if the account (from this address, or from everywhere) or the
    address is over its limit."""
    policy = settings.policy.auth
    account = account_key(settings, email)
    over = await _over(conn, account, policy.login_attempts_per_account_total)
    if address:
        over |= await _over(conn, f"{account}:address:{address[:90]}", policy.login_attempts_per_account)
        over |= await _over(conn, f"address:{address[:90]}", policy.login_attempts_per_address)
    else:  # no address to tell the owner from a stranger: the tight limit applies to the account
        over |= await _over(conn, f"{account}:address:-", policy.login_attempts_per_account)
    if over:
        raise RateLimited("Too many sign-in attempts. Please wait and try again.")


async def count_registration(conn: asyncpg.Connection, settings: Settings, address: str | None) -> None:
    """Count a registration from ``address``; RateLimited past the policy's limit."""
    if address and await _over(conn, f"register:{address[:90]}", settings.policy.auth.registrations_per_address):
        raise RateLimited("Too many new accounts from this address. Please wait and try again.")

