"""Named SQL statements loaded from a ``queries.sql`` file beside the module that runs them.

A file holds blocks that start with ``-- name: <identifier>``; everything up to
the next header is that statement. Reading one file shows a module's whole data
contract, and the statements stay plain SQL.
"""

from __future__ import annotations

import re
from importlib import resources

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


class Queries:
    """Attribute access to the statements of one file: ``Q.claim_task``."""

    def __init__(self, statements: dict[str, str], source: str) -> None:
        self._statements = statements
        self._source = source

    @classmethod
    def load(cls, package: str, filename: str = "queries.sql") -> Queries:
        text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
        return cls(parse(text, f"{package}/{filename}"), f"{package}/{filename}")

    def __getattr__(self, name: str) -> str:
        try:
            return self._statements[name]
        except KeyError:
            raise AttributeError(f"{self._source} has no statement named {name!r}") from None


def parse(text: str, source: str) -> dict[str, str]:
    statements: dict[str, str] = {}
    headers = list(_HEADER.finditer(text))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.end() : end].strip().rstrip(";").strip()
        name = header.group(1)
        if not body:
            raise ValueError(f"{source}: statement {name!r} is empty")
        if name in statements:
            raise ValueError(f"{source}: statement {name!r} is defined twice")
        statements[name] = body
    return statements
