"""A site's mailbox as a mail client reads it: the JSON lines its own SMTP sink writes
(``services.start_smtp_sink``), never through site code. The site tests read it, and on a site that
asks new accounts to prove their address (``[auth] verify_email``) every harness client that registers
follows the link mailed on registration, as the account's owner would."""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import re
import time
from email.message import EmailMessage
from pathlib import Path
from typing import Literal

from .state import SiteRecord

URL = re.compile(r"https?://[^\s<>\"']+")

Kind = Literal["reset", "verify", "change", "notice"]
# What each mail's link opens (the template's mail/links.py); a mail without a link only tells.
LINKS: dict[Kind, str] = {"reset": "/reset#token=", "verify": "/verify#token=", "change": "/verify#change="}
POLL = 0.1


class MailMissing(AssertionError):
    """The site did not mail what was waited for in time."""


def messages(site: SiteRecord) -> list[EmailMessage]:
    """Every message the site's sink took, oldest first."""
    assert site.mailbox, f"{site.slug} has no SMTP sink"
    try:
        text = Path(site.mailbox).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [email.message_from_string(json.loads(line)["data"], policy=email.policy.default)
            for line in text.split("\n")[:-1] if line]


def text_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()


def html_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("html",)).get_content()


def urls(message: EmailMessage) -> list[str]:
    return URL.findall(text_of(message)) + URL.findall(html_of(message).replace("&amp;", "&"))


def link_of(message: EmailMessage) -> str:
    [link] = URL.findall(text_of(message))
    return link


def kind_of(message: EmailMessage) -> Kind:
    found = URL.findall(text_of(message))
    for kind, path in LINKS.items():
        if len(found) == 1 and path in found[0]:
            return kind
    return "notice"


def token_of(message: EmailMessage, key: str = "token") -> str:
    fragment = link_of(message).split("#", 1)[1]
    name, _, value = fragment.partition("=")
    assert name == key, link_of(message)
    return value


def to(site: SiteRecord, recipient: str, kind: Kind | None = None) -> list[EmailMessage]:
    """The mails to ``recipient`` (of ``kind``, if given), oldest first."""
    return [m for m in messages(site) if m["To"] == recipient and (kind is None or kind_of(m) == kind)]


def _nth(site: SiteRecord, recipient: str, count: int, kind: Kind | None) -> EmailMessage | None:
    found = to(site, recipient, kind)
    return found[count - 1] if len(found) >= count else None


def _missing(site: SiteRecord, recipient: str, count: int, kind: Kind | None, timeout: float) -> MailMissing:
    return MailMissing(f"timed out after {timeout:.0f} s waiting for {kind or 'mail'} {count} to {recipient} "
                       f"on {site.slug}")


def wait_mail(site: SiteRecord, recipient: str, count: int = 1, kind: Kind | None = None,
              timeout: float = 60.0) -> EmailMessage:
    """The ``count``-th mail (of ``kind``) to ``recipient``: the site's worker sends it after the
    request's commit, so it is polled for."""
    deadline = time.monotonic() + timeout
    while (found := _nth(site, recipient, count, kind)) is None:
        if time.monotonic() > deadline:
            raise _missing(site, recipient, count, kind, timeout)
        time.sleep(POLL)
    return found


async def await_mail(site: SiteRecord, recipient: str, count: int = 1, kind: Kind | None = None,
                     timeout: float = 60.0) -> EmailMessage:
    """``wait_mail`` for asyncio clients."""
    deadline = time.monotonic() + timeout
    while (found := _nth(site, recipient, count, kind)) is None:
        if time.monotonic() > deadline:
            raise _missing(site, recipient, count, kind, timeout)
        await asyncio.sleep(POLL)
    return found


def asks_verified(site: SiteRecord) -> bool:
    """Whether a new account must follow its mailed link before it may upload or start tasks."""
    return bool(site.policy().get("auth", {}).get("verify_email"))  # a version before [auth]: never


def registration_mails(site: SiteRecord) -> int:
    """How many verification mails registering sends on ``site`` (one where it asks for proof)."""
    return 1 if asks_verified(site) else 0


def verification_token(site: SiteRecord, address: str) -> str:
    """The token of the link mailed to ``address`` on registration."""
    return token_of(wait_mail(site, address, kind="verify"))


async def await_verification_token(site: SiteRecord, address: str) -> str:
    """``verification_token`` for asyncio clients."""
    return token_of(await await_mail(site, address, kind="verify"))
