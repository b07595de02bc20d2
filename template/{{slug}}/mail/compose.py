"""The mails themselves: a text part and an HTML part, the site's name, links to the site's own origin
only, no images or anything else a mail client would fetch from elsewhere."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime
from uuid import UUID

import msgspec

from .links import LinkKind, link


class Letter(msgspec.Struct, frozen=True):
    subject: str
    lines: list[str]  # paragraphs, before the link
    action: str = ""  # the link's words
    url: str = ""
    after: list[str] = msgspec.field(default_factory=list)  # paragraphs after the link


# The kinds whose mail carries a link (the others only tell).
LINK_KINDS: dict[str, LinkKind] = {"reset": "reset", "verify": "verify", "email_change": "email_change"}


def letter(kind: str, site_name: str, origin: str, token: str | None, params: dict) -> Letter:
    if kind in LINK_KINDS:
        if token is None:
            raise ValueError(f"a {kind} mail carries a link: its row has no token seed")
        url = link(origin, LINK_KINDS[kind], token)
    if kind == "reset":
        return Letter(
            subject=f"Reset your password on {site_name}",
            lines=[f"Someone asked to reset the password of your account on {site_name}.",
                   f"To choose a new password, open this link (it works once, for {params.get('ttlMinutes', 30)} "
                   "minutes):"],
            action="Choose a new password", url=url,
            after=["If it was not you, ignore this mail: your password stays as it is."],
        )
    if kind == "verify":
        return Letter(
            subject=f"Confirm your email address for {site_name}",
            lines=[f"Welcome to {site_name}. To confirm that this address is yours, open this link:"],
            action="Confirm my address", url=url,
            after=["If you did not create an account, ignore this mail."],
        )
    if kind == "email_change":
        return Letter(
            subject=f"Confirm your new email address for {site_name}",
            lines=[f"Someone asked to use this address for an account on {site_name}.",
                   "The change takes effect once you open this link:"],
            action="Use this address", url=url,
            after=["If it was not you, ignore this mail: nothing changes."],
        )
    if kind == "email_changed":
        return Letter(
            subject=f"The email address of your {site_name} account was changed",
            lines=[f"The account on {site_name} that used this address now uses {params.get('newEmail', 'another')}.",
                   f"If you did not do this, sign in at {origin} or ask the site's operators for help."],
        )
    raise ValueError(f"unknown mail kind {kind!r}")



def _text(item: Letter, site_name: str) -> str:
    parts = [*item.lines]
    if item.url:
        parts.append(item.url)
    parts += item.after
    parts.append(f"— {site_name}")
    return "\n\n".join(parts) + "\n"


def _html(item: Letter, site_name: str) -> str:
    e = html.escape
    paragraphs = "".join(f"<p>{e(line)}</p>" for line in item.lines)
    button = (f'<p><a href="{e(item.url)}" style="display:inline-block;padding:10px 16px;background:#1f4e8c;'
              f'color:#ffffff;text-decoration:none;border-radius:4px">{e(item.action)}</a></p>'
              f'<p style="font-size:13px;color:#555555">Or copy this address into your browser:<br>{e(item.url)}</p>'
              if item.url else "")
    after = "".join(f"<p>{e(line)}</p>" for line in item.after)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{e(item.subject)}</title></head>'
            f'<body style="font-family:sans-serif;line-height:1.5;color:#222222;max-width:560px">'
            f'<h1 style="font-size:18px">{e(site_name)}</h1>{paragraphs}{button}{after}</body></html>')


def compose(*, mail_id: UUID, kind: str, site_name: str, origin: str, sender: str, recipient: str,
            token: str | None, params: dict) -> EmailMessage:
    """The message of one outbox row. Its Message-ID is the row's: a copy of it, if ever one were sent,
    is the same message to every mail system."""
    item = letter(kind, site_name, origin, token, params)
    message = EmailMessage()
    message["From"] = Address(display_name=site_name, addr_spec=sender)
    message["To"] = recipient
    message["Subject"] = item.subject
    message["Date"] = format_datetime(datetime.now(UTC))
    message["Message-ID"] = f"<{mail_id}@{sender.rpartition('@')[2]}>"
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(_text(item, site_name))
    message.add_alternative(_html(item, site_name), subtype="html")
    return message
