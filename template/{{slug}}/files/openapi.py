"""How the OpenAPI document describes an upload: the raw bytes, of a type the site allows, and the
``?name=`` that ``names.clean_name`` accepts.

The handler reads its body itself (it streams to disk), so Litestar sees no body to describe; the
upload's operation class writes it in. A multipart form (field ``file``) is accepted too and named
in the operation's text, but not described as a body: the document stays exact, and a client sends
one way.
"""

from __future__ import annotations

import sys
import unicodedata
from dataclasses import dataclass
from functools import cache

from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema

from ..settings import FilesPolicy
from .names import MAX_NAME_CHARS

# clean_name's rule as a pattern. A name is trimmed (str.strip) and then must be one character or
# more, at most MAX_NAME_CHARS, hold no path separator and no character of the categories
# clean_name refuses, and not be "." or "..". The characters are listed (not \s or \p{…}), so
# JSON Schema's regex dialect and Python's read the pattern alike.
_REFUSED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")
# The longest ``?name=`` read at all (clean_name then trims it and checks MAX_NAME_CHARS).
NAME_QUERY_CHARS = 1024


def _character_class(chars: list[str]) -> str:
    """Runs of consecutive code points as ranges, each end escaped or literal."""

    def one(ch: str) -> str:
        return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else (f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else ch)

    parts, start, previous = [], None, None
    for ch in [*chars, None]:
        if ch is not None and previous is not None and ord(ch) == ord(previous) + 1:
            previous = ch
            continue
        if start is not None:
            parts.append(one(start) if start == previous else f"{one(start)}-{one(previous)}")
        start = previous = ch
    return "".join(parts)


@cache
def name_pattern() -> str:
    """Built when the document is first asked for (it walks every code point once)."""
    every = [chr(code) for code in range(sys.maxunicode + 1) if not 0xD800 <= code <= 0xDFFF]
    spaces = [ch for ch in every if ch.isspace()]
    refused = [ch for ch in every if ch in "/\\" or unicodedata.category(ch) in _REFUSED_CATEGORIES]
    # allowed anywhere inside a name / allowed at its ends (after trimming) / the same but not "."
    inner = f"[^{_character_class(sorted(set(refused)))}]"
    end = f"[^{_character_class(sorted(set(refused) | set(spaces)))}]"
    end_no_dot = f"[^.{_character_class(sorted(set(refused) | set(spaces)))}]"
    most = MAX_NAME_CHARS - 2
    core = (f"{end_no_dot}|{end_no_dot}{inner}{{0,{most}}}{end}|\\.{inner}{{0,{most}}}{end_no_dot}"
            f"|\\.{inner}{{1,{most}}}\\.")
    space = f"[{_character_class(spaces)}]"
    return f"^{space}*(?:{core}){space}*$"


def _file_schema(media_type: str) -> Schema:
    """Any bytes but none, whatever the type says (the site stores a file as sent). OpenAPI 3.1
    describes raw bytes with a schema of no ``type`` (no JSON type is wrong for bytes); a JSON
    body is any JSON value, never empty once written. The site's largest file is said in words
    (a larger body answers 413): a limit in bytes is no limit in characters for a text body."""
    if media_type == "application/json" or media_type.endswith("+json"):
        return Schema()
    return Schema(min_length=1)


def upload_operation(policy: FilesPolicy) -> type[Operation]:
    """The upload's operation class: its body (bytes of an allowed type, 1 byte to the site's
    largest file) and its ``name`` (required with a raw body)."""
    body = RequestBody(
        required=True,
        description=f"The file's bytes (1 to {policy.max_file_bytes}); Content-Type is the file's type.",
        content={media_type: OpenAPIMediaType(schema=_file_schema(media_type))
                 for media_type in policy.allowed_types},
    )

    @dataclass
    class UploadOperation(Operation):
        def __post_init__(self) -> None:
            self.request_body = body
            for parameter in self.parameters or []:
                if getattr(parameter, "name", None) == "name":
                    parameter.required = True
                    parameter.description = "The file's name (trimmed; one path segment, no control characters)."
                    parameter.schema = Schema(type=OpenAPIType.STRING, max_length=NAME_QUERY_CHARS,
                                              pattern=name_pattern())

    return UploadOperation
