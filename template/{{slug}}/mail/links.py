"""The links a mail carries: always on the site's own origin, the token in the URL's fragment.

A fragment never reaches a server (not this site's logs, not a proxy's, not a Referer): the page's
script reads it and posts it. The token itself is a keyed function of a seed the outbox keeps
(``token_from_seed``): only a process holding SECRET_KEY turns the seed into a working link.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Literal

LinkKind = Literal["reset", "verify", "email_change"]

# The page each link opens, and the fragment key its script reads.
PAGES: dict[LinkKind, tuple[str, str]] = {
    "reset": ("/reset", "token"),
    "verify": ("/verify", "token"),
    "email_change": ("/verify", "change"),
}


def token_from_seed(secret_key: str, seed: bytes) -> str:
    digest = hmac.new(secret_key.encode(), b"mail-link:" + seed, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def link(origin: str, kind: LinkKind, token: str) -> str:
    path, key = PAGES[kind]
    return f"{origin}{path}#{key}={token}"
