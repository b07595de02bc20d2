"""Login and registration throttling per client and per account (fixed 15-minute windows).

Every attempt counts before the password is checked, so guessing costs the
same whether it succeeds or not, and an unknown email is throttled exactly
like a known one (its key is a keyed hash; the email itself is not stored).
An account's tight limit is per client it is tried from: a stranger who
guesses at someone's email exhausts only their own pair, and the owner, from
their own address, still signs in; a far higher ceiling over all clients
stops a guesser with many addresses. The limits are taken narrowest first and
an attempt one refuses counts toward none after it: a stranger refused at
their own limits never feeds the account's ceiling that would lock the owner
out. A client is its address, or its /64 for IPv6 (``ratelimits.client_key``).
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


async def count_attempt(conn: asyncpg.Connection, settings: Settings, email: str, address: str | None) -> None:
    """Count this attempt for the account from this client, for the client, then for the account
    from everywhere; RateLimited (with the wait until the window ends) by the first that is spent."""
    policy = settings.policy.auth
    account = account_key(settings, email)
    client = ratelimits.client_key(address)
    # No client to tell the owner from a stranger: the tight limit applies to the account.
    limits = [(f"{account}:address:{client or '-'}", policy.login_attempts_per_account)]
    if client:
        limits.append((f"address:{client}", policy.login_attempts_per_address))
    limits.append((account, policy.login_attempts_per_account_total))
    for key, limit in limits:
        if wait := await ratelimits.take(conn, key, WINDOW_SECONDS, limit):
            raise RateLimited("Too many sign-in attempts. Please wait and try again.", wait)


async def count_registration(conn: asyncpg.Connection, settings: Settings, address: str | None) -> None:
    """Count a registration from this client; RateLimited past the policy's limit."""
    client = ratelimits.client_key(address)
    if client and (wait := await ratelimits.take(conn, f"register:{client}", WINDOW_SECONDS,
                                                 settings.policy.auth.registrations_per_address)):
        raise RateLimited("Too many new accounts from this address. Please wait and try again.", wait)


def _email_key(settings: Settings, purpose: str, email: str) -> str:
    digest = hmac.new(settings.require_secret_key().encode(), f"{purpose}:".encode() + email.encode(), hashlib.sha256)
    return f"{purpose}:" + digest.hexdigest()


async def count_reset(conn: asyncpg.Connection, settings: Settings, email: str, address: str | None) -> None:
    """Count a reset mail asked for ``email`` (known or not: its key is a keyed hash either way, so a
    refusal tells nothing about the account), then for the client; RateLimited by the first spent."""
    policy = settings.policy.auth
    limits = [(_email_key(settings, "reset", email), policy.reset_mails_per_email)]
    if client := ratelimits.client_key(address):
        limits.append((f"resetclient:{client}", policy.reset_mails_per_address))
    for key, limit in limits:
        if wait := await ratelimits.take(conn, key, WINDOW_SECONDS, limit):
            raise RateLimited("Too many reset requests. Please wait and try again.", wait)


async def count_link_mail(conn: asyncpg.Connection, settings: Settings, account_id: object) -> None:
    """Count a verification or email-change mail of the account; RateLimited past the policy's limit."""
    if wait := await ratelimits.take(conn, f"account:{account_id}:links", WINDOW_SECONDS,
                                     settings.policy.auth.link_mails_per_account):
        raise RateLimited("Too many mails asked for. Please wait and try again.", wait)


async def count_link_use(conn: asyncpg.Connection, settings: Settings, address: str | None) -> None:
    """Count a mailed link followed (reset, verification, email change) from the client, within its
    sign-in limit: a token cannot be guessed, but each try costs the site a lookup (a reset: a hash)."""
    if (client := ratelimits.client_key(address)) and (
            wait := await ratelimits.take(conn, f"linkclient:{client}", WINDOW_SECONDS,
                                          settings.policy.auth.login_attempts_per_address)):
        raise RateLimited("Too many links followed. Please wait and try again.", wait)
