"""Looking into a site's mailbox: the JSON lines its own SMTP sink writes (harness/services.start_smtp_sink),
read as a mail client would read the messages — never through site code."""

from __future__ import annotations

import email
import email.policy
import json
import re
from email.message import EmailMessage
from pathlib import Path

from harness.state import SiteRecord

from .waiting import wait_for

URL = re.compile(r"https?://[^\s<>\"']+")


def messages(site: SiteRecord) -> list[EmailMessage]:
    """Every message the site's sink took, oldest first."""
    assert site.mailbox, f"{site.slug} has no SMTP sink"
    try:
        text = Path(site.mailbox).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [email.message_from_string(json.loads(line)["data"], policy=email.policy.default)
            for line in text.split("\n")[:-1] if line]


def to(site: SiteRecord, recipient: str) -> list[EmailMessage]:
    return [m for m in messages(site) if m["To"] == recipient]


def wait_mail(site: SiteRecord, recipient: str, count: int = 1, timeout: float = 60.0) -> EmailMessage:
    """The ``count``-th mail to ``recipient`` (the site's worker sends it after the request's commit)."""
    found = wait_for(lambda: len(to(site, recipient)) >= count and to(site, recipient), timeout,
                     f"mail {count} to {recipient} on {site.slug}")
    return found[count - 1]


def text_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()


def html_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("html",)).get_content()


def urls(message: EmailMessage) -> list[str]:
    return URL.findall(text_of(message)) + URL.findall(html_of(message).replace("&amp;", "&"))


def link_of(message: EmailMessage) -> str:
    [link] = URL.findall(text_of(message))
    return link


def token_of(message: EmailMessage, key: str = "token") -> str:
    fragment = link_of(message).split("#", 1)[1]
    name, _, value = fragment.partition("=")
    assert name == key, link_of(message)
    return value
