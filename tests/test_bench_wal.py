"""harness/bench/wal.py against a real PostgreSQL (the embedded one): the records a known batch of writes
costs, by kind and relation, read back through pg_walinspect; another database's records left out; the
scratch database the reading needs gone afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from harness.bench import wal
from harness.bench.measure import BenchError
from harness.bench.results import WalAnatomy
from harness.services import create_database, drop_database, embedded, with_database

ROWS = 40


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pg = embedded().start_postgres(tmp_path_factory.mktemp("wal"))
    try:
        yield pg.url
    finally:
        embedded().stop_postgres(pg.pid)
        embedded().remove_state(Path(pg.data_dir))


def test_parse_reads_the_first_block_of_a_record_and_counts_a_page_start_as_its_kind() -> None:
    record = wal.parse("Heap", "INSERT+INIT", "blkref #0: rel 1663/16384/16390 fork main blk 0", 59, None)
    assert (record.kind, record.database, record.node, record.full_page_length) == ("Heap/INSERT", 16384, "16390", 0)
    update = wal.parse("Heap", "UPDATE", "blkref #0: rel 1663/5/2619 blk 12, blkref #1: rel 1663/5/2618 blk 3", 80, 120)
    assert (update.database, update.node, update.full_page_length) == (5, "2619", 120)
    commit = wal.parse("Transaction", "COMMIT", None, 34, 0)
    assert (commit.kind, commit.database, commit.node) == ("Transaction/COMMIT", None, None)


def test_anatomy_counts_a_task_by_relation_and_leaves_other_databases_out() -> None:
    records = [
        wal.parse("Heap", "INSERT", "blkref #0: rel 1663/7/100 blk 0", 60, 0),
        wal.parse("Heap", "INSERT", "blkref #0: rel 1663/7/100 blk 0", 60, 0),
        wal.parse("Heap", "INSERT", "blkref #0: rel 1663/8/100 blk 0", 60, 0),  # another database
        wal.parse("Btree", "INSERT_LEAF", "blkref #0: rel 1663/7/101 blk 1", 64, 8192),
        wal.parse("Transaction", "COMMIT", None, 34, 0),
        wal.parse("Transaction", "COMMIT", None, 34, 0),
    ]
    found = wal.anatomy(records, 7, {"100": "thing", "101": "thing_pkey"}, tasks=2)
    assert found.records_per_task == 2.5
    assert found.bytes_per_task == (60 + 60 + 64 + 34 + 34) / 2
    assert found.full_page_bytes_per_task == 4096
    assert [(c.kind, c.relation, c.per_task) for c in found.counts] == [
        ("Heap/INSERT", "thing", 1.0), ("Transaction/COMMIT", wal.NO_RELATION, 1.0),
        ("Btree/INSERT_LEAF", "thing_pkey", 0.5),
    ]
    with pytest.raises(BenchError):
        wal.anatomy(records, 7, {}, tasks=0)


async def _writes(server_url: str) -> tuple[WalAnatomy, list[str]]:
    """ROWS rows inserted one commit each, then each updated (its indexed column: not HOT) in one more
    commit; meanwhile rows written in a database the reading is not about."""
    await create_database(server_url, "walsubject")
    await create_database(server_url, "walother")
    subject = await asyncpg.connect(with_database(server_url, "walsubject"))
    other = await asyncpg.connect(with_database(server_url, "walother"))
    try:
        await subject.execute("CREATE TABLE thing (id integer PRIMARY KEY, v integer NOT NULL, note text)")
        await subject.execute("CREATE INDEX thing_v_idx ON thing (v)")
        await other.execute("CREATE TABLE elsewhere (id integer PRIMARY KEY)")
        async with wal.Reader(server_url, "walsubject_wal") as reader:
            begin = await reader.position()
            for n in range(ROWS):
                await subject.execute("INSERT INTO thing (id, v, note) VALUES ($1, $1, 'x')", n)
                await other.execute("INSERT INTO elsewhere (id) VALUES ($1)", n)
            await subject.execute("UPDATE thing SET v = v + 1000")
            end = await reader.position()
            database, names = await wal.relations(server_url, "walsubject")
            found = wal.anatomy(await reader.records(begin, end), database, names, ROWS)
        databases = [row["datname"] for row in await subject.fetch("SELECT datname FROM pg_database")]
        return found, databases
    finally:
        await subject.close()
        await other.close()
        await drop_database(server_url, "walsubject")
        await drop_database(server_url, "walother")


def test_a_batch_of_known_writes_reads_back_as_its_records(server: str) -> None:
    found, databases = asyncio.run(_writes(server))
    per_task = {(c.kind, c.relation): c.per_task for c in found.counts}
    assert per_task[("Heap/INSERT", "thing")] == 1.0
    assert per_task[("Heap/UPDATE", "thing")] == 1.0
    assert ("Heap/HOT_UPDATE", "thing") not in per_task
    # every version of a row not updated HOT takes an entry in each index
    assert per_task[("Btree/INSERT_LEAF", "thing_pkey")] == 2.0
    assert per_task[("Btree/INSERT_LEAF", "thing_v_idx")] == 2.0
    # both databases' commits (a commit names no relation), nothing else of the other's
    assert per_task[("Transaction/COMMIT", wal.NO_RELATION)] >= round((2 * ROWS + 1) / ROWS, 2)
    assert not [c for c in found.counts if c.relation.startswith("file node") or c.relation.startswith("elsewhere")]
    assert found.records_per_task >= 6
    assert "walsubject_wal" not in databases


def test_the_probe_without_a_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        wal.main(["--state", str(tmp_path)])
    assert exited.value.code == 2
    assert "no harness state here (run `up` first)" in capsys.readouterr().err
