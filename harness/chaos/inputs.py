"""The texts the campaign's clients upload, and what text-normalize@1 and the documented
word-count@1 (docs/processors.md) must make of each.

Each account's texts name its site and account, so a result delivered to the
wrong task or the wrong account cannot match. ``normalized`` and ``counted`` are written
here from the specification (SPEC §6.3) and the document, not taken from the site: they are the
oracles.
"""

from __future__ import annotations

import json


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


COUNT_UNITS = ("words", "lines", "characters")


def counted(data: bytes, unit: str) -> bytes:
    """word-count@1: the number of whitespace-separated words, of lines, or of characters, as
    compact JSON ``{"unit": …, "count": …}``."""
    text = data.decode("utf-8")
    count = {"words": len(text.split()), "lines": len(text.splitlines()), "characters": len(text)}[unit]
    return json.dumps({"unit": unit, "count": count}, separators=(",", ":")).encode()
