"""How a send ended, as stable codes (stored on the outbox row and logged): never a server's own words,
which may echo addresses, hosts or credentials."""

from __future__ import annotations

from typing import Literal

# UNREACHABLE: no connection, TLS or sign-in to the server (nothing was handed over; tried again).
# DEFERRED: the server answered "try later" (4xx) before taking the message (tried again).
# REJECTED: the server refused the sender, the recipient or the message for good (5xx).
# ADDRESS_UNSUPPORTED: the recipient's address needs SMTPUTF8, which the server does not offer.
# SEND_UNCERTAIN: the connection broke while the message was handed over, or the sender stopped:
#   it may have been delivered, so it is never sent again (at most once per row).
ErrorCode = Literal["UNREACHABLE", "DEFERRED", "REJECTED", "ADDRESS_UNSUPPORTED", "SEND_UNCERTAIN"]


class SendFailed(Exception):
    """One send did not go through; ``code`` says how, ``retryable`` whether the row is tried again."""

    def __init__(self, code: ErrorCode, retryable: bool) -> None:
        super().__init__(code)
        self.code = code
        self.retryable = retryable
