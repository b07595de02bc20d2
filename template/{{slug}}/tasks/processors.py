"""The processors this code can run. Deterministic only: no scripts, no URLs.

A task records its processor and version at submit; an executor runs only a
(processor, version) it knows. An unknown one is PROCESSOR_UNAVAILABLE at
execution and ``reconciling`` at lease recovery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import ExecutionFailure
from .states import ErrorCode

Processor = Callable[[bytes, dict[str, Any]], bytes]


def normalize_text(data: bytes, params: dict[str, Any]) -> bytes:
    """text-normalize@1: strict UTF-8; CRLF and lone CR become LF; optionally trim
    trailing spaces and tabs per line; never adds a newline."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ExecutionFailure(ErrorCode.INPUT_INVALID) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if params.get("trimTrailingWhitespace"):
        text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return text.encode("utf-8")


REGISTRY: dict[tuple[str, int], Processor] = {
    ("text-normalize", 1): normalize_text,
}


def known(processor: str, version: int) -> bool:
    return (processor, version) in REGISTRY


def current_version(processor: str) -> int:
    """The version new tasks of ``processor`` get: the highest this code runs."""
    return max(version for name, version in REGISTRY if name == processor)


def lookup(processor: str, version: int) -> Processor:
    try:
        return REGISTRY[(processor, version)]
    except KeyError:
        raise ExecutionFailure(ErrorCode.PROCESSOR_UNAVAILABLE) from None


def result_name(input_name: str) -> str:
    """``notes.txt`` → ``notes.normalized.txt``, within the 255-character name limit."""
    stem = input_name[:-4] if input_name.lower().endswith(".txt") else input_name
    return f"{stem[:230]}.normalized.txt"
