"""``/dev/mail``: the mail a ``dev`` site sent, as its SMTP sink took it. Registered only when ``dev``
gave the web process its sink's mailbox (DEV_MAILBOX): anywhere else the path does not exist."""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage
from pathlib import Path

import msgspec
from litestar import get
from litestar.response import Template

from ..mail.sink import read_mailbox
from .dependencies import SiteSettings
from .pages import page

_LINK = re.compile(r"https?://[^\s<>\"]+")


class SunkMail(msgspec.Struct, frozen=True):
    subject: str
    to: str
    date: str
    text: str
    links: list[str]


def _sunk(raw: str) -> SunkMail:
    message = email.message_from_string(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    part = message.get_body(preferencelist=("plain",))
    text = part.get_content() if part is not None else ""
    return SunkMail(subject=str(message["Subject"] or ""), to=str(message["To"] or ""),
                    date=str(message["Date"] or ""), text=text, links=_LINK.findall(text))


@get("/dev/mail", include_in_schema=False)
async def dev_mail_page(settings: SiteSettings) -> Template:
    mails = [_sunk(record["data"]) for record in reversed(read_mailbox(Path(settings.env.dev_mailbox or "")))]
    return page("dev_mail.html", settings, title="Mail (dev)", mails=mails)
