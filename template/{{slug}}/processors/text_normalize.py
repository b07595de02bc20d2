"""text-normalize@1, the processor the site ships: strict UTF-8 text in, normalised text out."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from ..tasks.contract import InputRejected, OutputBound, processor


class NormalizeParams(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    trim_trailing_whitespace: Annotated[bool, Meta(title="Remove spaces and tabs at line ends")]


def normalized_name(input_name: str) -> str:
    """``notes.txt`` → ``notes.normalized.txt``, within the 255-character name limit."""
    stem = input_name[:-4] if input_name.lower().endswith(".txt") else input_name
    return f"{stem[:230]}.normalized.txt"


@processor(
    name="text-normalize",
    version=1,
    title="Normalise text",
    params=NormalizeParams,
    accepts=("text/plain",),
    result_type="text/plain",
    result_name=normalized_name,
    # Line ends only shrink (CRLF → LF) and trimming only removes: never longer than the input.
    max_output=OutputBound(times_input=1),
    time_limit_seconds=30,
    # Linear in the input: 16 KiB takes a fraction of what a thread's hop costs, and stalls the
    # worker's loop for well under a millisecond (docs/benchmarks.md, fifteenth round).
    inline_below_bytes=16 * 1024,
)
def normalize_text(data: bytes, params: NormalizeParams) -> bytes:
    """Strict UTF-8; CRLF and lone CR become LF; optionally trim trailing spaces and tabs per
    line; never adds a newline."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputRejected("not UTF-8") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if params.trim_trailing_whitespace:
        text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return text.encode("utf-8")
