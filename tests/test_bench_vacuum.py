"""harness/bench/vacuum.py against a real PostgreSQL: a batch starts with no database's dead rows left
to reclaim, and reclaims its own inside its window; nothing is vacuumed on an external server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import msgspec
import pytest

from harness.bench.vacuum import Vacuum, for_batch
from harness.services import embedded, with_database
from harness.state import S3Record, ServiceRecord, Services

DATABASES = ("batch_own", "batch_other")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pg = embedded().start_postgres(tmp_path_factory.mktemp("vacuum"))
    try:
        asyncio.run(_databases(pg.url))
        yield pg.url
    finally:
        embedded().stop_postgres(pg.pid)
        embedded().remove_state(Path(pg.data_dir))


async def _databases(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        for name in DATABASES:
            await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    for name in DATABASES:
        db = await asyncpg.connect(with_database(url, name))
        try:
            await db.execute("CREATE TABLE work (id int PRIMARY KEY, n int NOT NULL)")
            await db.execute("INSERT INTO work SELECT i, 0 FROM generate_series(1, 1000) AS i")
        finally:
            await db.close()


async def _in_each(url: str, statement: str) -> dict[str, object]:
    """``statement``'s value in every database, each on a connection of its own."""
    values = {}
    for name in DATABASES:
        db = await asyncpg.connect(with_database(url, name))
        try:
            values[name] = await db.fetchval(statement)
        finally:
            await db.close()
    return values


async def _churn_and_count(url: str) -> dict[str, object]:
    """Leave dead rows in every database; how often each one's table was vacuumed so far."""
    await _in_each(url, "UPDATE work SET n = n + 1")
    return await _vacuumed(url)


async def _vacuumed(url: str) -> dict[str, object]:
    return await _in_each(url, "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'work'")


def test_a_batch_starts_with_every_database_vacuumed_and_vacuums_only_its_own_in_its_window(server: str) -> None:
    vacuum = Vacuum(server_url=server, database="batch_own")

    before = asyncio.run(_churn_and_count(server))
    asyncio.run(vacuum.clean_slate())
    slate = asyncio.run(_vacuumed(server))
    assert all(slate[name] == before[name] + 1 for name in DATABASES), (before, slate)

    asyncio.run(_churn_and_count(server))
    asyncio.run(vacuum.own())
    own = asyncio.run(_vacuumed(server))
    assert own == {"batch_own": slate["batch_own"] + 1, "batch_other": slate["batch_other"]}


def test_an_external_server_is_not_vacuumed() -> None:
    external = Services(mode="external", postgres=ServiceRecord(kind="postgres", url="postgresql://db.example/postgres"),
                        broker=ServiceRecord(kind="redis", url="redis://db.example"),
                        s3=S3Record(kind="s3", url="http://db.example"))
    assert for_batch(external, "postgresql://db.example/alpha") is None
    ours = msgspec.structs.replace(external, postgres=msgspec.structs.replace(external.postgres, pid=4242))
    assert for_batch(ours, "postgresql://site:secret@127.0.0.1:5/alpha_1a2b") == Vacuum(
        server_url="postgresql://db.example/postgres", database="alpha_1a2b")

