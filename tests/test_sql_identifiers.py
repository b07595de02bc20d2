"""Names the harness puts into SQL that takes no parameters (CREATE/DROP DATABASE): quoted, so a name
is one identifier, exactly the name given — never more SQL — whatever characters it holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from harness import services
from harness.identifiers import quote_ident
from harness.services import embedded

# Each is one database name; the first was, pasted into `CREATE DATABASE "{…}"`, a copy of another database.
NAMES = ['shop" TEMPLATE "victim" --', 'a""b', "o'brien; DROP DATABASE victim", "Mixed Case", "ünï code"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """A PostgreSQL server of this module's own, holding a database ``victim`` with a secret in it."""
    started = embedded().start_postgres(tmp_path_factory.mktemp("postgres"))
    try:
        asyncio.run(_run(started.url, "CREATE DATABASE victim"))
        asyncio.run(_run(services.with_database(started.url, "victim"), "CREATE TABLE secret AS SELECT 'x' AS value"))
        yield started.url
    finally:
        embedded().stop_postgres(started.pid)
        embedded().remove_state(Path(started.data_dir))


async def _run(url: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetch(sql)
    finally:
        await conn.close()


def databases(url: str) -> set[str]:
    return {row["datname"] for row in asyncio.run(_run(url, "SELECT datname FROM pg_database"))}


@pytest.mark.parametrize("name", NAMES)
def test_a_database_is_created_and_dropped_under_exactly_its_name(server: str, name: str) -> None:
    before = databases(server)
    asyncio.run(services.create_database(server, name))
    assert databases(server) - before == {name}
    asyncio.run(services.drop_database(server, name))
    assert databases(server) == before


def test_a_name_postgresql_would_cut_or_cannot_hold_is_refused() -> None:
    assert quote_ident('a"b') == '"a""b"' and quote_ident("x" * 63) == f'"{"x" * 63}"'
    for bad in ("", "x" * 64, "é" * 32, "a\x00b"):  # é is two bytes: 64 in all
        with pytest.raises(ValueError, match="not a PostgreSQL identifier"):
            quote_ident(bad)
