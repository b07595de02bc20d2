"""The texts the campaign's clients upload, and what text-normalize@1 must make of each.

Each account's texts name its site and account, so a result delivered to the
wrong task or the wrong account cannot match. ``normalized`` is written here
from the specification (SPEC §6.3), not taken from the site: it is the oracle.
"""

from __future__ import annotations


def texts(site: str, account: int) -> list[bytes]:
    """What the processor changes: CRLF and lone CR, trailing blanks, non-ASCII; and blanks only
    (trimmed, that one is a zero-byte result)."""
    head = f"{site} account {account}"
    return [
        f"{head}: crlf\r\nline with blanks  \r\ntab at the end\t\r\n".encode(),
        f"{head}: lone cr\rsecond \rthird".encode(),
        f"{head}: naïve café  \r\n— ünïcode —\t\r\nno newline at the end".encode(),
        b" \t  \t",
    ]


def normalized(data: bytes, trim: bool) -> bytes:
    """Strict UTF-8; CRLF and lone CR become LF; with ``trim``, trailing spaces and tabs of each
    line go; no newline is added."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    if trim:
        text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return text.encode("utf-8")
