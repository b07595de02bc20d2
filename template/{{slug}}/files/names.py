"""File names and content types: what may be stored, and how a name is sent back safely."""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

from .errors import FileRejected

MAX_NAME_CHARS = 255


def clean_name(raw: str | None) -> str:
    """The name as stored: NFC, trimmed, one path segment, no control characters."""
    name = unicodedata.normalize("NFC", (raw or "").strip())
    if not name:
        raise FileRejected("Give the file a name.")
    if len(name) > MAX_NAME_CHARS:
        raise FileRejected(f"File names are at most {MAX_NAME_CHARS} characters.")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise FileRejected("File names cannot contain path separators.")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        raise FileRejected("File names cannot contain control characters.")
    return name


def clean_content_type(raw: str | None, allowed: list[str]) -> str:
    """The media type without parameters, lower case, if the site allows it."""
    media_type = (raw or "").split(";", 1)[0].strip().lower()
    if not media_type:
        raise FileRejected("Say what type the file is (Content-Type).")
    if media_type not in allowed:
        raise FileRejected(f"Files of type {media_type[:100]} are not accepted here.")
    return media_type


def content_disposition(name: str) -> str:
    """``attachment`` with an ASCII fallback and the exact name per RFC 5987/6266."""
    fallback = "".join(ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\;%' else "_" for ch in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
