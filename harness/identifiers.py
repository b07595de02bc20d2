"""PostgreSQL identifiers for the statements that take no parameters (CREATE/DROP DATABASE, DDL).

asyncpg has no identifier quoting of its own, so this is the one function the harness and site_tests
quote a name with, never an f-string of the bare name. PostgreSQL's rule: wrap in double quotes and
double any double quote inside; such a name is one identifier, exactly as written (case included).
tests/test_sql_identifiers.py proves it against a real server with hostile names.
"""

from __future__ import annotations

# NAMEDATALEN - 1: PostgreSQL silently cuts a longer name, which then names another object.
MAX_BYTES = 63


def quote_ident(name: str) -> str:
    """``name`` as one quoted SQL identifier; ValueError for a name PostgreSQL cannot hold as given."""
    if not name or "\x00" in name or len(name.encode()) > MAX_BYTES:
        raise ValueError(f"not a PostgreSQL identifier of 1-{MAX_BYTES} bytes without NUL: {name!r}")
    return '"' + name.replace('"', '""') + '"'
