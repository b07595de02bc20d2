"""Sending one message through ``SMTP_URL`` with aiosmtplib, and telling what a failure means.

The envelope is sent step by step (connect, MAIL, RCPT, DATA) so that a failure is placed exactly:
anything before DATA means the server has not taken the message (it may be tried again), a refusal
with a code means what the code says, and a broken connection or a timeout during DATA means the
message may have been taken — the row is then never sent again (SEND_UNCERTAIN).
"""

from __future__ import annotations

import email.policy
import logging
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

import aiosmtplib

from .errors import SendFailed

log = logging.getLogger(__name__)

# Each SMTP command (and the connection) gives up after this long.
SMTP_TIMEOUT = 20.0


def _server(url: str) -> dict:
    parts = urlsplit(url)
    implicit_tls = parts.scheme == "smtps"
    return {
        "hostname": parts.hostname,
        "port": parts.port or (465 if implicit_tls else 25),
        "username": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password else None,
        "use_tls": implicit_tls,
        # smtp://: STARTTLS when the server offers it (aiosmtplib's default), plain otherwise
        "start_tls": False if implicit_tls else None,
        "timeout": SMTP_TIMEOUT,
    }


def _refused(error: aiosmtplib.SMTPResponseException) -> SendFailed:
    # 4xx: "not now" (tried again later); 5xx and anything else: for good.
    return SendFailed("DEFERRED", True) if 400 <= error.code < 500 else SendFailed("REJECTED", False)


async def send(url: str, sender: str, recipient: str, message: EmailMessage) -> None:
    """Hand ``message`` to the server for ``recipient``; SendFailed with a stable code otherwise."""
    utf8 = not (sender + recipient).isascii()
    client = aiosmtplib.SMTP(**_server(url))
    try:
        try:
            await client.connect()
            if client.is_ehlo_or_helo_needed:
                await client.ehlo()
        except aiosmtplib.SMTPResponseException as error:
            raise (SendFailed("UNREACHABLE", True) if error.code < 500 else _refused(error)) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            raise SendFailed("UNREACHABLE", True) from None
        try:
            if utf8 and not client.supports_extension("smtputf8"):
                raise SendFailed("ADDRESS_UNSUPPORTED", False)
            options = ["SMTPUTF8"] if utf8 else []
            encoding = "utf-8" if utf8 else "ascii"
            await client.mail(sender, options=options, encoding=encoding)
            await client.rcpt(recipient, encoding=encoding)
        except aiosmtplib.SMTPResponseException as error:
            raise _refused(error) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            raise SendFailed("UNREACHABLE", True) from None  # before DATA: not handed over
        body = message.as_bytes(policy=email.policy.SMTPUTF8 if utf8 else email.policy.SMTP)
        try:
            await client.data(body)
        except aiosmtplib.SMTPResponseException as error:
            raise _refused(error) from None  # the server answered: it did not take the message
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            raise SendFailed("SEND_UNCERTAIN", False) from None
    finally:
        if client.is_connected:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError, TimeoutError):
                client.close()
